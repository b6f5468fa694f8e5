"""The wrapper reads argv and scripts as the installed sbatch does (issue 16: findings 9 and 14).

* sbatch's getopt table: getopt itself lists every long option (``sbatch --c``: "option '--c' is
  ambiguous; possibilities: ..."), compared with advisor/sbatch/options.py both ways;
  no advisor option is one of them, abbreviates one or starts with one, and ``--task=4``
  reaches sbatch as its ``--tasks-per-node=4`` (a held job on the real cluster).
* ``#PBS``/``#BSUB`` directives: the wrapper's reading against sbatch's own (tests/helpers/sbatch_oracle:
  ``sbatch -v`` against an unreachable controller, nothing submitted) on the recorded cases and
  on generated scripts, and held jobs whose TimeLimit and Partition are what sbatch gave them.
"""

from __future__ import annotations

import re
import secrets
import string
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.sbatch.argv import FLAGS, VALUED
from advisor.sbatch.options import LONG_OPTIONS, ONLY_IN
from advisor.services.cluster import fetch_cluster
from advisor.slurm.backend import CliBackend
from advisor.slurm.parsers import parse_key_values
from tests.helpers.caches import train
from tests.helpers.cluster import ADVISOR
from tests.helpers.hostile import budget
from tests.helpers.sbatch_oracle import (
    CASES,
    PROBE,
    RECORDED,
    fields,
    minutes,
    offline_conf,
    refusing_port,
    sbatch_reads,
    wrapper_reads,
)

# cluster_turns: held jobs of its own
pytestmark = pytest.mark.cluster(uses=("daemons", "nodes"))

#: What sbatch prints when getopt refuses a #PBS/#BSUB word (an unknown option, a missing value
#: or a word that is no option).
GETOPT_REFUSES_RE = re.compile(r"Unrecognized command line parameter|Invalid argument:")
TASK = f"sr-{secrets.token_hex(3)}"


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL)  # fmt: skip


# --- the getopt table ---------------------------------------------------------------------------


def installed_long_options() -> set[str]:
    """Every long option of the installed sbatch, as its getopt lists them per first character."""
    names: set[str] = set()
    for first in string.ascii_letters + string.digits:
        err = run("sbatch", f"--{first}").stderr
        if "possibilities:" in err:
            names |= set(re.findall(r"'--([^']+)'", err.split("possibilities:")[1]))
        elif (single := re.search(r"option '--([^']+)' requires an argument", err)) is not None:
            names.add(single.group(1))
        else:  # no option starts with it, or exactly one without a value (none in 22.05)
            assert "unrecognized option" in err, (first, err)
    return names


def test_the_option_table_is_the_installed_sbatchs_both_ways(slurm_cluster: None) -> None:
    # Regression: --cluster, --context and --ntasks-per-tres were missing, so the wrapper took
    # the value of --cluster for the script.
    version = re.search(r"(\d+\.\d+)\.\d+", run("sbatch", "--version").stdout)
    assert version, "sbatch --version printed no version"
    assert installed_long_options() == {
        name for name in LONG_OPTIONS if ONLY_IN.get(name, version.group(1)) == version.group(1)
    }


def test_no_advisor_option_is_an_sbatch_option_or_a_prefix_of_one(slurm_cluster: None) -> None:
    installed = installed_long_options()
    for option in (*VALUED, *FLAGS):
        name = option[2:]
        assert not {o for o in installed if o.startswith(name) or name.startswith(o)}, option
        assert f"unrecognized option '{option}=x'" in run("sbatch", f"{option}=x").stderr


@pytest.fixture(scope="module")
def cache(slurm_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The live cluster's partitions, classes small (c1, c2) and big (f1, twice as fast), TASK."""
    partitions, nodes = fetch_cluster(CliBackend())
    return train(tmp_path_factory.mktemp("reading") / "cache.db", TASK, partitions, nodes)


@contextmanager
def held(cache: Path, script: Path, *args: str) -> Iterator[tuple[dict[str, str], str]]:
    """Submit script held through the wrapper; scontrol's view of the job and the stderr."""
    done = run(*ADVISOR, "--db", str(cache), "sbatch", "-H", *args, str(script))
    assert done.returncode == 0, done.stderr
    match = re.search(r"Submitted batch job (\d+)", done.stdout)
    assert match, done.stdout
    try:
        shown = run("scontrol", "show", "job", "-o", match.group(1)).stdout.strip()
        yield parse_key_values(shown), done.stderr
    finally:
        run("scancel", match.group(1))


def script_file(folder: Path, *lines: str, name: str = "job.sh") -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + "".join(f"{line}\n" for line in lines) + "true\n")
    return path


def test_task_is_sbatchs_tasks_per_node(cache: Path, tmp_path: Path) -> None:
    # Regression: --task=2 was taken for the advisor's --task; sbatch reads --tasks-per-node=2.
    script = script_file(tmp_path, f"#SBATCH -J {TASK}", "#SBATCH --output=/dev/null")
    with held(cache, script, "--task=2", "-p", "fat") as (info, err):
        assert info["NtasksPerN:B:S:C"].startswith("2:"), info
        assert f"task={TASK}" in info["Comment"]  # the model is the job name's
        assert "sbatch reads --task as its own option" in err


# --- #PBS and #BSUB ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def oracle(slurm_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("oracle")
    with refusing_port() as port:
        conf = offline_conf(folder, port)
        yield lambda script, args=(), env={}: sbatch_reads(conf, folder, script, args, env)


def test_the_recorded_probe_is_what_the_installed_sbatch_says(oracle: Any) -> None:
    for case in PROBE["cases"]:
        script, args, env = CASES[case["name"]]
        assert oracle(script, args, env) == case["sbatch"], case["name"]
    assert RECORDED.exists()


_times = st.sampled_from(["5", "90", "1:30", "0:45:00", "48:00:00", "2-00:00:00", "7-0"])
_queues = st.sampled_from(["cpu", "fat", "long"])
_resource = st.one_of(
    _times.map(lambda t: f"walltime={t}"), _times.map(lambda t: f"cput={t}"),
    _times.map(lambda t: f"pcput={t}"), _times.map(lambda t: f"xwalltime={t}"),
    _times.map(lambda t: f"software=walltime={t}"), _times.map(lambda t: f"WALLTIME={t}"),
    st.sampled_from(["nodes=1:ppn=2", "mem=1gb", "proc=x", "select=2", "ncpus=2",
                     "accelerator=true", "arch=x86", "host=n1"]),
)  # fmt: skip
_resources = st.lists(_resource, min_size=1, max_size=4).flatmap(
    lambda parts: st.sampled_from([",", ":"]).map(lambda sep: sep.join(parts))
)
_pbs_word = st.one_of(
    _queues.map(lambda q: f"-q {q}"), _queues.map(lambda q: f"-q{q}"),
    _queues.map(lambda q: f"--destination={q}"), _queues.map(lambda q: f"--dest {q}"),
    _resources.map(lambda r: f"-l {r}"), _resources.map(lambda r: f"--resource_list={r}"),
    st.sampled_from(["-N pbsname", "--job_name=pbs2", "-h", "-V", "-hV", "-j oe", "--join",
                     "-m abe", "-A acct", "-W depend=afterok:1", "stray", "-Z", "--", "'-q fat'"]),
)  # fmt: skip
_bsub_word = st.one_of(
    _queues.map(lambda q: f"-q {q}"), _queues.map(lambda q: f"--queue_name={q}"),
    _times.map(lambda t: f"-W {t}"), _times.map(lambda t: f"--time={t}"),
    st.sampled_from(["-J bsubname", "-n 2", "-x", "-cwd /tmp", "-o out", "stray", "-Y"]),
)  # fmt: skip
_line = st.one_of(
    st.lists(_pbs_word, min_size=1, max_size=3).map(lambda w: "#PBS " + " ".join(w)),
    st.lists(_bsub_word, min_size=1, max_size=3).map(lambda w: "#BSUB " + " ".join(w)),
    st.sampled_from(["#SBATCH -t 10", "#SBATCH -p cpu", "#SBATCH -J sname", "#SBATCH --ignore-pbs",
                     "#SBATCH --time-min=3", "true", "", "# a comment", " #PBS -q fat"]),
)  # fmt: skip
_args = st.sampled_from([(), ("-t", "7"), ("-p", "long"), ("--ignore-pbs",), ("-J", "cli")])
_env = st.sampled_from([{}, {"SBATCH_PARTITION": "fat"}, {"SBATCH_TIMELIMIT": "3"},
                        {"SBATCH_IGNORE_PBS": ""}, {"SBATCH_JOB_NAME": "envname"}])  # fmt: skip


@settings(budget(300), suppress_health_check=[HealthCheck.function_scoped_fixture,
                                              HealthCheck.too_slow])  # fmt: skip
@given(lines=st.lists(_line, min_size=1, max_size=6), args=_args, env=_env)
def test_generated_scripts_are_read_as_sbatch_reads_them(
    oracle: Any, lines: list[str], args: tuple[str, ...], env: dict[str, str]
) -> None:
    script = "#!/bin/sh\n" + "".join(f"{line}\n" for line in lines) + "true\n"
    sbatch = oracle(script, args, env)
    request, refused, hetjob = wrapper_reads(script, list(args), env)
    errors: list[str] = sbatch["errors"]
    # The wrapper expects a refusal exactly where sbatch's getopt refuses the directives; sbatch
    # also refuses values the wrapper does not check (a gres this cluster lacks): the job fails
    # either way, and nothing else of such a script matters.
    if any(GETOPT_REFUSES_RE.search(e) for e in errors):
        assert refused is not None, (script, sbatch)
    if refused is not None:  # (sbatch may stop earlier, at a value it refuses)
        assert errors, (script, refused)
    if errors:
        return
    expected = {"partition": sbatch["partition"], "time": minutes(sbatch["time"]),
                "job-name": sbatch["job-name"], "time-min": minutes(sbatch["time-min"])}  # fmt: skip
    assert fields(request) == expected, script
    assert not hetjob


@pytest.mark.parametrize(
    ("lines", "partition", "time_limit"),
    [
        # Regression: the wrapper overrode the 48 h with its own limit.
        (["#PBS -l walltime=48:00:00", "#PBS -q long"], "long", "2-00:00:00"),
        (["#BSUB -q fat -W 90"], "fat", "01:30:00"),
        # Regression: the limit was computed for the default partition, not for the queue.
        (["#PBS -q fat"], "fat", None),
    ],
)
def test_pbs_jobs_get_what_sbatch_gives_them(
    cache: Path, tmp_path: Path, lines: list[str], partition: str, time_limit: str | None
) -> None:
    script = script_file(tmp_path, f"#SBATCH -J {TASK}", "#SBATCH --output=/dev/null", *lines)
    if time_limit is None:  # the wrapper's limit for that partition, as if -p were given
        plain = script_file(tmp_path, f"#SBATCH -J {TASK}", name="plain.sh")
        dry = run(*ADVISOR, "--db", str(cache), "sbatch", "--advisor-dry-run", "-p", partition,
                  str(plain)).stdout  # fmt: skip
        default = run(
            *ADVISOR, "--db", str(cache), "sbatch", "--advisor-dry-run", str(plain)
        ).stdout
        found = re.search(r"--time=(\S+)", dry)
        assert found and found.group(0) not in default  # the partitions' limits differ
        time_limit = found.group(1)
    with held(cache, script) as (info, err):
        assert (info["Partition"], info["TimeLimit"]) == (partition, time_limit), err
        assert f"task={TASK}" in info["Comment"]
