"""``#BSUB``/``#PBS`` directives: the wrapper reads what the installed sbatch 22.05.8 read.

The expectations are the real sbatch's own (tests/data/slurm/sbatch_xlate_probe.json, recorded
by tests/sbatch_oracle.py from ``sbatch -v`` against an unreachable controller);
tests/integration/test_sbatch_reading.py asks the live sbatch again, on these and on generated scripts.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from advisor.errors import InputError
from advisor.slurm.timefmt import parse_timelimit
from advisor.wrapper.argv import parse_command_line, parse_options
from advisor.wrapper.request import JobRequest, job_request
from advisor.wrapper.script import read_directives
from advisor.wrapper.submit import translated_options
from advisor.wrapper.xlate import resource_times, translate_directives
from tests.sbatch_oracle import RECORDED

PROBE = json.loads(RECORDED.read_text())
#: Cases sbatch refuses for a reason the wrapper does not model: the job fails either way.
UNMODELLED = {"bsub W junk": "an invalid -W value (Slurm's time parser refuses 'abc')"}


def minutes(text: str | None) -> int | str | None:
    """A time limit as whole minutes, as sbatch rounds it (the text if it is no Slurm time)."""
    if text is None:
        return None
    try:
        seconds = parse_timelimit(text)
    except InputError:
        return text
    return math.ceil(seconds / 60) if isinstance(seconds, int) else str(seconds)


def wrapper_reads(script: str, args: list[str], env: dict[str, str]) -> tuple[JobRequest, str | None, bool]:
    """The wrapper's request for the job, why it expects sbatch to refuse it, and hetjob."""
    cmd = parse_command_line([*args, "job.sh"])
    directives = read_directives(script)
    script_options, _ = parse_options(directives.words)
    translated, refused = translated_options(
        script, "job.sh", cmd.sbatch.options, script_options, env
    )
    return job_request(cmd.sbatch.options, env, script_options, translated), refused, directives.hetjob


def fields(request: JobRequest) -> dict[str, Any]:
    def value(name: str) -> str | None:
        setting = getattr(request, name)
        return None if setting is None else setting.value

    return {"partition": value("partition"), "time": minutes(value("time")),
            "job-name": value("job_name"), "time-min": minutes(value("time_min"))}  # fmt: skip


@pytest.mark.parametrize("case", PROBE["cases"], ids=[c["name"] for c in PROBE["cases"]])
def test_the_wrapper_reads_each_recorded_script_as_sbatch_did(case: dict[str, Any]) -> None:
    request, refused, hetjob = wrapper_reads(case["script"], case["args"], case["env"])
    sbatch = case["sbatch"]
    if hetjob:  # the wrapper leaves heterogeneous jobs as written
        return
    if sbatch["errors"]:
        assert refused is not None or case["name"] in UNMODELLED, sbatch["errors"]
        return
    assert refused is None
    expected = {"partition": sbatch["partition"], "time": minutes(sbatch["time"]),
                "job-name": sbatch["job-name"], "time-min": minutes(sbatch["time-min"])}  # fmt: skip
    assert fields(request) == expected


def test_the_probe_is_a_real_capture() -> None:
    assert PROBE["slurm version"] == "slurm-wlm 22.05.8"
    assert len(PROBE["cases"]) >= 50
    changed = [c for c in PROBE["cases"] if c["sbatch"]["time"] or c["sbatch"]["partition"]]
    assert len(changed) > 30  # most cases set something the advisor reads


@pytest.mark.parametrize(
    ("resources", "times"),
    [("walltime=1:00:00", ["1:00:00"]), ("nodes=1:ppn=2,walltime=5", ["5"]),
     ("pcput=3,walltime=2,cput=4", ["3", "2", "4"]), ("xwalltime=2", ["2"]),
     ("software=walltime=5,walltime=9", ["9"]), ("proc=x,walltime=5,walltime=7", ["7"]),
     ("select=2:walltime=1", ["1"]), ("WALLTIME=1", []), ("accelerator=walltime=3", ["3"]),
     ("walltime=", [""]), ("", []), ("walltime=1,", ["1"]), ("mem=walltime=3", [])],
)  # fmt: skip
def test_resource_lists_are_scanned_as_sbatch_scans_them(resources: str, times: list[str]) -> None:
    assert resource_times(resources) == times


def test_a_quote_left_open_in_a_pbs_line_is_an_input_error() -> None:
    with pytest.raises(InputError, match="line 2: unmatched ' in #PBS line"):
        translate_directives("#!/bin/sh\n#PBS -N 'a\ntrue\n", source="job.sh")


def test_only_one_kind_is_read_and_bsub_comes_first() -> None:
    found = translate_directives("#!/bin/sh\n#PBS -q long\n#BSUB -q fat\ntrue\n")
    assert (found.magic, [o.value for o in found.options]) == ("#BSUB", ["fat"])
    assert translate_directives("#!/bin/sh\ntrue\n").magic is None
