"""What the installed sbatch makes of a script and its options, without submitting anything.

``sbatch -v`` prints the options it has set ("defined options": partition, time, job-name...)
after reading the command line, the ``SBATCH_*`` variables, the ``#SBATCH`` lines and the
``#BSUB``/``#PBS`` lines it translates, and only then contacts slurmctld.  With a copy of
slurm.conf whose controller port refuses connections (a socket bound but not listening) and
``MessageTimeout=1`` it fails there at once: the real parser, no job, no contact with the
cluster.  tests/integration/test_sbatch_reading.py compares the wrapper with it; ``python -m
tests.helpers.sbatch_oracle`` records CASES into tests/data/slurm/sbatch_xlate_probe.json for the unit
tests.
"""

from __future__ import annotations

import json
import math
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from advisor.advice.settings import parse_command_line
from advisor.errors import InputError
from advisor.sbatch.argv import parse_options
from advisor.sbatch.request import JobRequest, job_request
from advisor.sbatch.script import read_directives
from advisor.slurm.timefmt import parse_timelimit
from advisor.wrapper.submit import translated_options
from tests.helpers.paths import TEST_DATA

RECORDED = TEST_DATA / "slurm" / "sbatch_xlate_probe.json"
#: What the oracle reports of the options sbatch set (the advisor reads these).
FIELDS = ("partition", "time", "job-name", "time-min")
_OPTION = re.compile(r"^sbatch: (\S+)\s+: (.*)$", re.MULTILINE)
_UNREACHABLE = "Unable to contact slurm controller"


def _script(*lines: str) -> str:
    return "#!/bin/sh\n" + "".join(f"{line}\n" for line in lines)


#: name -> (script, command-line options, environment): what was asked of sbatch 22.05.8.
CASES: dict[str, tuple[str, tuple[str, ...], dict[str, str]]] = {
    "pbs over sbatch": (_script("#SBATCH -t 10 -p cpu -J s", "#PBS -l walltime=48:00:00", "#PBS -q long", "#PBS -N p", "true"), (), {}),
    "pbs before sbatch": (_script("#PBS -l walltime=48:00:00", "#SBATCH -t 10", "true"), (), {}),
    "env over pbs": (_script("#PBS -l walltime=48:00:00", "#PBS -q long", "true"), (), {"SBATCH_TIMELIMIT": "5", "SBATCH_PARTITION": "fat"}),
    "cli over pbs": (_script("#PBS -l walltime=48:00:00", "#PBS -q long", "true"), ("-t", "7", "-p", "cpu"), {}),
    "bsub and pbs": (_script("#BSUB -W 60", "#PBS -l walltime=48:00:00", "#PBS -q long", "true"), (), {}),
    "pbs then bsub": (_script("#PBS -l walltime=48:00:00", "#BSUB -q fat", "true"), (), {}),
    "bsub W colon": (_script("#BSUB -W 1:30", "#BSUB -q fat -J b", "true"), (), {}),
    "ignore-pbs cli": (_script("#PBS -l walltime=48:00:00", "true"), ("--ignore-pbs",), {}),
    "ignore-pbs abbreviated": (_script("#PBS -l walltime=48:00:00", "true"), ("--ignore",), {}),
    "ignore-pbs in sbatch line": (_script("#SBATCH --ignore-pbs", "#PBS -l walltime=48:00:00", "true"), (), {}),
    "ignore-pbs env": (_script("#PBS -l walltime=48:00:00", "true"), (), {"SBATCH_IGNORE_PBS": "1"}),
    "ignore-pbs env empty": (_script("#PBS -l walltime=48:00:00", "true"), (), {"SBATCH_IGNORE_PBS": ""}),
    "pbs after a command": (_script("true", "#PBS -l walltime=48:00:00"), (), {}),
    "pbs after 101 commands": (_script(*["true"] * 101, "#PBS -l walltime=48:00:00"), (), {}),
    "pbs after 100 commands": (_script(*["true"] * 100, "#PBS -l walltime=48:00:00"), (), {}),
    "pbs after 100 blank lines": (_script(*[""] * 100, "#PBS -l walltime=48:00:00"), (), {}),
    "pbs after 101 blank lines": (_script(*[""] * 101, "#PBS -l walltime=48:00:00"), (), {}),
    "indented pbs": (_script(" #PBS -l walltime=48:00:00", "true"), (), {}),
    "resource list": (_script("#PBS -l nodes=1:ppn=2,walltime=1:00:00,mem=1gb", "true"), (), {}),
    "cput": (_script("#PBS -l cput=3:00:00", "true"), (), {}),
    "pcput then walltime": (_script("#PBS -l pcput=3:00:00,walltime=2:00:00", "true"), (), {}),
    "walltime then cput": (_script("#PBS -l walltime=2:00:00 -l cput=3:00:00", "true"), (), {}),
    "embedded walltime": (_script("#PBS -l xwalltime=2:00:00", "true"), (), {}),
    "software skips": (_script("#PBS -l software=walltime=5,walltime=9", "true"), (), {}),
    "proc skips the next": (_script("#PBS -l proc=x,walltime=5,walltime=7", "true"), (), {}),
    "select colon walltime": (_script("#PBS -l select=2:walltime=1:00:00", "true"), (), {}),
    "upper case select": (_script("#PBS -l SELECT=2:walltime=1:00:00", "true"), (), {}),
    "upper case walltime": (_script("#PBS -l WALLTIME=1:00:00", "true"), (), {}),
    "long options": (_script("#PBS --resource_list=walltime=4:00:00 --destination=fat", "true"), (), {}),
    "long abbreviated": (_script("#PBS --dest=fat", "true"), (), {}),
    "attached values": (_script("#PBS -lwalltime=4:00:00 -qfat", "true"), (), {}),
    "quoted": (_script("#PBS -N 'a b' -q \"fat\"", "true"), (), {}),
    "comment in line": (_script("#PBS -q fat # -q long", "true"), (), {}),
    "two queues": (_script("#PBS -q fat", "#PBS -q long", "true"), (), {}),
    "pbs mem, sbatch time": (_script("#SBATCH -t 10", "#PBS -l mem=1gb", "true"), (), {}),
    "pbs name, sbatch partition": (_script("#SBATCH -p cpu", "#PBS -N x", "true"), (), {}),
    "unknown pbs option": (_script("#PBS -Z", "true"), (), {}),
    "pbs non-option": (_script("#PBS foo -q fat", "true"), (), {}),
    "pbs flags cluster": (_script("#PBS -hVq fat", "true"), (), {}),
    "pbs join optional": (_script("#PBS --join -q fat", "true"), (), {}),
    "walltime days": (_script("#PBS -l walltime=2-00:00:00", "true"), (), {}),
    "walltime minutes": (_script("#PBS -l walltime=90", "true"), (), {}),
    "bsub W 90": (_script("#BSUB -W 90", "true"), (), {}),
    "bsub W junk": (_script("#BSUB -W abc", "true"), (), {}),
    "bsub long options": (_script("#BSUB --queue_name=fat --time=45 --job_name=j", "true"), (), {}),
    "bsub cwd": (_script("#BSUB -cwd /tmp -q fat", "true"), (), {}),
    "bsub after sbatch": (_script("#SBATCH -p cpu -t 5", "#BSUB -q fat", "true"), (), {}),
    "hetjob": (_script("#SBATCH -t 5", "#SBATCH hetjob", "#SBATCH -t 6", "#PBS -q fat", "true"), (), {}),
    "PBSX": (_script("#PBSX -q fat", "true"), (), {}),
    "PBS without space": (_script("#PBS-q fat", "true"), (), {}),
    "time-min kept": (_script("#SBATCH --time-min=5", "#PBS -l walltime=1:00:00", "true"), (), {}),
    "env job name over pbs": (_script("#PBS -N p", "true"), (), {"SBATCH_JOB_NAME": "e"}),
}  # fmt: skip


@contextmanager
def refusing_port() -> Iterator[int]:
    """A loopback port nothing listens on while the block runs (bound, never listening)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def offline_conf(folder: Path, port: int, source: Path = Path("/etc/slurm/slurm.conf")) -> Path:
    """A copy of slurm.conf whose controller is at the refusing port, with a 1 s timeout."""
    lines = [
        line for line in source.read_text().splitlines()
        if not re.match(r"(?i)\s*(SlurmctldPort|MessageTimeout|JobSubmitPlugins)\s*=", line)
    ]  # fmt: skip
    conf = folder / "slurm.conf"
    conf.write_text("\n".join([*lines, f"SlurmctldPort={port}", "MessageTimeout=1", ""]))
    return conf


def sbatch_reads(
    conf: Path, folder: Path, script: str, args: Sequence[str] = (), env: Mapping[str, str] = {}
) -> dict[str, object]:
    """The options sbatch set for this script (FIELDS, None where unset) and its error lines."""
    path = folder / "job.sh"
    path.write_bytes(script.encode("utf-8", "surrogateescape"))
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SBATCH_")}
    done = subprocess.run(
        ["sbatch", "-v", *args, str(path)], capture_output=True, text=True, errors="replace",
        env={**clean, "SLURM_CONF": str(conf), **env}, stdin=subprocess.DEVNULL, timeout=60,
        cwd=folder, check=False,
    )  # fmt: skip
    if done.returncode == 0:
        raise AssertionError(f"sbatch submitted a job through the offline config: {done.stdout}")
    found = dict(_OPTION.findall(done.stderr.split("end of defined options")[0]))
    errors = [
        line for line in done.stderr.splitlines()
        if "error" in line and _UNREACHABLE not in line
    ]  # fmt: skip
    return {**{name: found.get(name) for name in FIELDS}, "errors": errors}


def record(folder: Path) -> dict[str, object]:
    """Every case of CASES as the installed sbatch reads it."""
    version = subprocess.run(["sbatch", "--version"], capture_output=True, text=True, check=True)
    with refusing_port() as port:
        conf = offline_conf(folder, port)
        cases = [
            {"name": name, "script": script, "args": list(args), "env": env,
             "sbatch": sbatch_reads(conf, folder, script, args, env)}
            for name, (script, args, env) in CASES.items()
        ]  # fmt: skip
    return {
        "slurm version": version.stdout.strip(),
        "command": "sbatch -v [ARGS] job.sh, SLURM_CONF = slurm.conf with SlurmctldPort = a "
        "refusing loopback port and MessageTimeout=1 (tests/helpers/sbatch_oracle.py)",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cases": cases,
    }


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        RECORDED.write_text(json.dumps(record(Path(tmp)), indent=1, ensure_ascii=False) + "\n")
    sys.stdout.write(f"wrote {RECORDED}\n")


PROBE = json.loads(RECORDED.read_text())


def minutes(text: str | None) -> int | str | None:
    """A time limit as whole minutes, as sbatch rounds it (the text if it is no Slurm time)."""
    if text is None:
        return None
    try:
        seconds = parse_timelimit(text)
    except InputError:
        return text
    return math.ceil(seconds / 60) if isinstance(seconds, int) else str(seconds)


def wrapper_reads(
    script: str, args: list[str], env: dict[str, str]
) -> tuple[JobRequest, str | None, bool]:
    """The wrapper's request for the job, why it expects sbatch to refuse it, and hetjob."""
    cmd = parse_command_line([*args, "job.sh"])
    directives = read_directives(script)
    script_options, _ = parse_options(directives.words)
    translated, refused = translated_options(
        script, "job.sh", cmd.sbatch.options, script_options, env
    )
    return (
        job_request(cmd.sbatch.options, env, script_options, translated),
        refused,
        directives.hetjob,
    )


def fields(request: JobRequest) -> dict[str, Any]:
    def value(name: str) -> str | None:
        setting = getattr(request, name)
        return None if setting is None else setting.value

    return {"partition": value("partition"), "time": minutes(value("time")),
            "job-name": value("job_name"), "time-min": minutes(value("time_min"))}  # fmt: skip
