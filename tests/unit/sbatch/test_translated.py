"""``#BSUB``/``#PBS`` directives: the wrapper reads what the installed sbatch 22.05.8 read.

The expectations are the real sbatch's own (tests/data/slurm/sbatch_xlate_probe.json, recorded
by tests/helpers/sbatch_oracle.py from ``sbatch -v`` against an unreachable controller);
tests/integration/test_sbatch_reading.py asks the live sbatch again, on these and on generated scripts.
"""

from __future__ import annotations

from typing import Any

import pytest

from advisor.errors import InputError
from advisor.sbatch.translated import resource_times, translate_directives
from tests.helpers.sbatch_oracle import PROBE, fields, minutes, wrapper_reads

#: Cases sbatch refuses for a reason the wrapper does not model: the job fails either way.
UNMODELLED = {"bsub W junk": "an invalid -W value (Slurm's time parser refuses 'abc')"}


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
