"""The live sacct query: records split exactly whatever a name holds, and sacct's environment.

Rows are the real 22.05 captures (tests/data/slurm) written back as sacct prints them with the
query's delimiter; the real cluster runs the same in tests/integration/test_sacct_hostile.py.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import pytest

from advisor.accounting.sacct_file import format_sacct_row
from advisor.errors import InputError
from advisor.services.update import update_from_sacct
from advisor.slurm.backend import CliBackend, sacct_delimiter
from advisor.slurm.parsers import SACCT_FIELDS, parse_sacct
from advisor.slurm.records import JobRecord
from advisor.slurm.runner import (
    CommandResult,
    SlurmCommands,
    query_environment,
    run_subprocess,
    tool_environment,
)
from advisor.slurm.sacct_text import parse_sacct_records, split_records
from advisor.store import Store
from advisor.validate import validate
from tests.helpers.captures import capture
from tests.helpers.hostile import SEPARATORS

JOBS = [job for job in parse_sacct(capture("sacct_allocations_x1f.txt").body, delimiter="\x1f")]
#: What users may set and what changes what sacct prints (sacct(1), and SACCT_FORMAT).
HOSTILE_ENV = {
    "SACCT_FORMAT": "JobID,State",
    "SLURM_TIME_FORMAT": "%s",
    "SACCT_FEDERATION": "1",
    "SACCT_LOCAL": "1",
    "SLURM_BITSTR_LEN": "2",
    "SLURM_CLUSTERS": "nosuch",
    "SQUEUE_FORMAT": "%i",
    "SINFO_FORMAT": "%N",
}


def _output(jobs: Sequence[JobRecord], delimiter: str, fields: Sequence[str] = SACCT_FIELDS) -> str:
    return "".join(format_sacct_row(job, fields, delimiter=delimiter) + "\n" for job in jobs)


def test_the_delimiter_is_new_for_every_call() -> None:
    drawn = {sacct_delimiter() for _ in range(100)}
    assert len(drawn) == 100 and all(d.startswith("\x1f") and d.endswith("\x1f") for d in drawn)


@pytest.mark.parametrize("separator", SEPARATORS, ids=[repr(s) for s in SEPARATORS])
def test_a_separator_in_a_name_or_comment_keeps_every_record_exact(separator: str) -> None:
    # issue #16 finding 3: a line break in one name failed the whole window
    delimiter = sacct_delimiter()
    hostile = [
        job._replace(name=f"{separator}a{separator}b{separator}", comment=f"x{separator}")
        if index % 3 == 0 else job
        for index, job in enumerate(JOBS)
    ]  # fmt: skip
    rows = parse_sacct_records(_output(hostile, delimiter), delimiter, SACCT_FIELDS)
    assert rows.problems == [] and rows.records == hostile


def test_a_name_cannot_forge_a_record() -> None:
    delimiter = sacct_delimiter()
    forged_row = format_sacct_row(JOBS[1]._replace(job_id="999", job_id_raw=999, user="victim"),
                                  delimiter="\x1f")  # fmt: skip
    for name in (
        f"x\n{forged_row}\n",
        f"x\x1f{forged_row}",
        "x|" + forged_row.replace("\x1f", "|"),
    ):
        hostile = [JOBS[0]._replace(name=name), *JOBS[2:4]]
        rows = parse_sacct_records(_output(hostile, delimiter), delimiter, SACCT_FIELDS)
        assert rows.records == hostile and "999" not in {job.job_id for job in rows.records}


def test_a_record_that_does_not_parse_is_a_problem_not_a_failure() -> None:
    delimiter = sacct_delimiter()
    text = _output(JOBS[:3], delimiter).replace(
        f"{delimiter}COMPLETED{delimiter}", f"{delimiter}F00{delimiter}", 1
    )
    rows = parse_sacct_records(text, delimiter, SACCT_FIELDS)
    assert rows.records == JOBS[1:3]
    assert rows.problems == ["sacct record 1: job 36: State: not a job state 'F00'"]


def test_delimiters_that_make_no_whole_records_are_an_input_error() -> None:
    delimiter = sacct_delimiter()
    text = _output(JOBS[:2], delimiter)
    with pytest.raises(InputError, match="do not make records of 20 fields"):
        split_records(text + "1" + delimiter + "2\n", 20, delimiter)
    assert split_records("", 20, delimiter) == [] and split_records(
        text.rstrip("\n"), 20, delimiter
    )


class NamedSacct:
    """sacct answering every window with the captured jobs, in the delimiter it is given.

    calls: the allocation queries (the steps query of each window is not counted).
    """

    def __init__(self, jobs: Sequence[JobRecord], *, collide_first: bool = False) -> None:
        self.jobs, self.collide_first, self.calls = list(jobs), collide_first, 0

    def __call__(self, argv: Sequence[str], timeout_s: float, stdin: str | None) -> CommandResult:
        options = dict(arg.split("=", 1) for arg in argv if arg.startswith("--") and "=" in arg)
        delimiter, fields = options["--delimiter"], options["--format"].split(",")
        jobs = self.jobs
        if "--allocations" in argv:
            self.calls += 1
            if self.collide_first and self.calls == 1:  # a name that holds this very delimiter
                jobs = [jobs[0]._replace(name=f"a{delimiter}b"), *jobs[1:]]
        return CommandResult(tuple(argv), 0, _output(jobs, delimiter, fields), "")


def test_update_stores_names_with_line_breaks_and_every_other_job(tmp_path: Path) -> None:
    separators = (SEPARATORS * 2)[: len(JOBS)]
    hostile = [
        job._replace(name=f"n{sep}{index}")
        for index, (job, sep) in enumerate(zip(JOBS, separators, strict=True))
    ]
    with Store.open(tmp_path / "cache.db") as store:
        result = update_from_sacct(store, CliBackend(SlurmCommands(NamedSacct(hostile))),
                                   since="2026-11-29T00:00", until="2026-11-30T00:00")  # fmt: skip
        names = {
            r["job_id"]: r["name"] for r in store.query("SELECT job_id, name FROM accounting_jobs")
        }
    assert result.stored == len(JOBS) and result.warnings == ()
    validate(
        {
            **result.to_json(),
            "spool": None,
            "pruned": {"advice": 0, "history_keys": 0, "memory_keys": 0},
        },
        "update-output",
        source="advisor update",
    )
    assert names == {job.job_id: job.name for job in hostile}


def test_a_delimiter_found_in_a_name_is_asked_for_again(tmp_path: Path) -> None:
    fake = NamedSacct(JOBS, collide_first=True)
    records = CliBackend(SlurmCommands(fake)).accounting(
        datetime(2026, 11, 29), datetime(2026, 11, 30)
    )
    assert records == JOBS and fake.calls == 2


# --- the environment sacct runs in -------------------------------------------------------------


def test_query_environment_drops_what_changes_sacct_output() -> None:
    env = query_environment(
        {**HOSTILE_ENV, "PATH": "/bin", "SLURM_CONF": "/etc/slurm/x.conf", "TZ": "UTC"}
    )
    assert env == {"PATH": "/bin", "SLURM_CONF": "/etc/slurm/x.conf", "TZ": "UTC",
                   "SLURM_TIME_FORMAT": "standard"}  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "cleaned"),
    [
        (["sacct", "-X"], True),
        (["/usr/bin/scontrol", "show", "node"], True),
        (["sbatch", "--test-only", "job.sh"], True),
        (["sbatch", "--parsable", "job.sh", "--test-only"], False),  # a submission: the job's env
        (["srun", "hostname"], False),
    ],
)
def test_only_tools_whose_output_is_parsed_get_the_query_environment(
    argv: list[str], cleaned: bool
) -> None:
    assert (tool_environment(argv) is not None) == cleaned


def test_sacct_really_runs_without_the_callers_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = tmp_path / "sacct"
    tool.write_text(
        f"#!{sys.executable}\nimport os\nfor k in sorted(os.environ): print(k + '=' + os.environ[k])\n"
    )
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    for name, value in HOSTILE_ENV.items():
        monkeypatch.setenv(name, value)
    seen = dict(line.split("=", 1) for line in run_subprocess([str(tool)], 30).stdout.splitlines())
    assert seen["SLURM_TIME_FORMAT"] == "standard"
    assert not set(HOSTILE_ENV) - {"SLURM_TIME_FORMAT"} & set(seen)
    assert seen["PATH"] == os.environ["PATH"]
    submit = tmp_path / "sbatch"
    submit.write_bytes(tool.read_bytes())
    submit.chmod(tool.stat().st_mode)
    kept = dict(
        line.split("=", 1)
        for line in run_subprocess([str(submit), "job.sh"], 30).stdout.splitlines()
    )
    assert kept["SACCT_FORMAT"] == "JobID,State" and kept["SLURM_TIME_FORMAT"] == "%s"
