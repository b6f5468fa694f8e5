"""sacct output recorded by other public projects (tests/data/slurm/public/PROVENANCE.md).

Every recording either loads, or is refused with one line naming what it lacks.  The figures
asserted (RECORDINGS, tests/helpers/public_recordings.py) were read off the recordings by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.accounting.sacct_file import dump_format
from advisor.accounting.saved import update_from_file
from advisor.cli import main
from advisor.errors import InputError
from advisor.store import Store
from advisor.validate import validate
from tests.helpers.paths import REPO
from tests.helpers.public_recordings import APEL, GC3PIE, HB_JOBINFO, PUBLIC, RECORDINGS


def ingest(tmp_path: Path, name: str, **options: Any) -> Any:
    with Store.open(tmp_path / "cache.db") as store:
        dump = dump_format(cluster="public", **options)
        return update_from_file(store, PUBLIC / name, kind="sacct", dump=dump)


def stored(tmp_path: Path) -> dict[str, dict[str, Any]]:
    with Store.open(tmp_path / "cache.db", readonly=True) as store:
        return {row["job_id"]: row for row in store.query("SELECT * FROM accounting_jobs")}


def test_every_recording_is_listed_in_the_provenance_and_here() -> None:
    files = {path.name for path in PUBLIC.iterdir() if path.name != "PROVENANCE.md"}
    assert files == set(RECORDINGS)
    provenance = (PUBLIC / "PROVENANCE.md").read_text()
    assert all(f"`{name}`" in provenance for name in files)
    assert len(files) >= 20


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_each_recording_loads_or_is_refused_in_one_line(tmp_path: Path, name: str) -> None:
    expected = RECORDINGS[name]
    if expected.refused is not None:
        with pytest.raises(InputError) as info:
            ingest(tmp_path, name, **expected.options)
        line = info.value.one_line()
        assert line.startswith(f"{PUBLIC / name}: {expected.refused}; a dump needs ")
        assert "\n" not in line
        return
    result = ingest(tmp_path, name, **expected.options)
    validate(
        {
            **result.to_json(),
            "spool": None,
            "pruned": {"advice": 0, "history_keys": 0, "memory_keys": 0},
        },
        "update-output",
        source=name,
    )
    assert result.stored == expected.stored
    assert result.skipped == expected.skipped
    assert len(result.warnings) == expected.skipped.get("malformed", 0)  # type: ignore[union-attr]
    assert len(stored(tmp_path)) == expected.stored


def test_a_dump_is_reported_under_the_cluster_its_rows_name(tmp_path: Path) -> None:
    # Regression (issue 30): the report named the local cluster (here 'public', as --cluster
    # or slurm.conf would give it) although every row names narval, and stores them so.
    result = ingest(tmp_path, "sarc-22.05.9.json")
    assert {row["cluster"] for row in stored(tmp_path).values()} == {"narval"}
    assert result.cluster == "narval"


def test_json_figures_of_22_05_9_array_task_on_four_nodes(tmp_path: Path) -> None:
    ingest(tmp_path, "sarc-22.05.9.json")
    (job,) = stored(tmp_path).values()
    assert job["job_id"] == "20247445_100" and job["job_id_raw"] == 20247445
    assert (job["cluster"], job["user"], job["partition"]) == (
        "narval",
        "hudson",
        "gpubase_bynode_b4",
    )
    assert job["state"] == "FAILED" and job["elapsed_s"] == 124403
    assert job["timelimit_s"] == 2880 * 60 and job["cpus"] == 96
    assert job["req_mem_mb"] == 262144 and job["req_mem_per"] is None  # tres.requested: the total
    assert job["nodes"] == '["ng30103", "ng30203", "ng30706", "ng30707"]'


@pytest.mark.parametrize(
    ("name", "job_id", "state", "elapsed", "limit_s", "cpus", "exit_code"),
    [
        ("slurmweb-24.11-v0.0.41-job-timeout.json", "9923", "TIMEOUT", 79, 60, 1, 0),
        ("slurmweb-24.11-v0.0.42-job-completed.json", "6362", "COMPLETED", 61, 120, 32, 0),
        ("slurmweb-25.05-v0.0.43-job-failed.json", "15009", "FAILED", 1, 60, 1, 1),
        ("clockwork-21.08-sacct_2.json", "1_7", "NODE_FAIL", 20615, 1440 * 60, 4, 0),
    ],
)
def test_json_figures_of_each_layout(
    tmp_path: Path, name: str, job_id: str, state: str, elapsed: int, limit_s: int, cpus: int,
    exit_code: int,
) -> None:  # fmt: skip
    ingest(tmp_path, name)
    job = stored(tmp_path)[job_id]
    assert (job["state"], job["elapsed_s"], job["timelimit_s"], job["cpus"]) == (
        state, elapsed, limit_s, cpus,
    )  # fmt: skip
    assert job["exit_code"] == exit_code


def test_ncpus_gives_the_cpus_and_a_dump_without_cluster_or_jobidraw_loads(tmp_path: Path) -> None:
    # issue #15: NCPUS was ignored (CPUs stored as 0), and a dump without Cluster or JobIDRaw
    # was refused ("header lacks Cluster"); APEL's sacct line has neither, and NCPUS
    ingest(tmp_path, "apel-slurm-lines.txt", fields=APEL)
    jobs = stored(tmp_path)
    assert {job_id: job["cpus"] for job_id, job in jobs.items()} == {
        "1000": 1, "5940815": 8, "5961074": 1, "5979785": 1,
    }  # fmt: skip
    big = jobs["5940815"]
    assert big["elapsed_s"] == ((2 * 24 + 1) * 60 + 24) * 60 + 56  # 2-01:24:56
    assert (big["cluster"], big["job_id_raw"], big["user"]) == ("public", 5940815, "user1")
    assert big["end"] == "2018-06-05T03:36:08"


def test_hb_jobinfo_snowman_dump_figures(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--fields: the last field, Comment, is text users"):
        ingest(tmp_path, "hb-jobinfo-sacct-snowman.txt", fields=HB_JOBINFO, delimiter="☃")
    ingest(tmp_path, "hb-jobinfo-sacct-snowman.txt", fields=HB_JOBINFO, delimiter="☃",
           trust_names=True)  # fmt: skip
    jobs = stored(tmp_path)
    job = jobs["2296177"]
    assert (job["state"], job["cpus"], job["partition"]) == ("TIMEOUT", 448, "parallellong")
    assert job["elapsed_s"] == 5 * 86400 + 24 and job["timelimit_s"] == 5 * 86400
    assert job["req_mem_mb"] == 256 * 1024
    assert jobs["4034541"]["state"] == "CANCELLED"
    assert jobs["2344446_26"]["job_id_raw"] == 2344446  # JobIDRaw derived from JobID


def test_gc3pie_parsable_dump_with_a_trailing_delimiter(tmp_path: Path) -> None:
    # sacct --parsable ends every row with the delimiter: one field more than --format
    ingest(tmp_path, "gc3pie-sacct-done-parallel.txt", fields=GC3PIE)
    (job,) = stored(tmp_path).values()
    assert (job["job_id"], job["cpus"], job["elapsed_s"], job["exit_code"]) == ("123", 64, 23, 0)
    assert job["start"] == "2012-09-04T11:18:24" and job["end"] == "2012-09-04T11:18:47"


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_skipped_rows_are_counted_in_every_output_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    # issue #15: "Skipped rows show only in --format json" (gc3pie's CSCS dump printed with
    # SLURM_TIME_FORMAT=relative: its job cannot be read, its step is no job)
    path = PUBLIC / "gc3pie-sacct-done-relative-timestamps.txt"
    argv = ["update", "--sacct-file", str(path), "--fields", GC3PIE, "--cluster", "cscs"]
    assert main([*argv, "--format", fmt, "--db", str(tmp_path / "cache.db")]) == 0
    out, err = capsys.readouterr()
    (warning,) = err.splitlines()
    assert warning.startswith(f"advisor: warning: {path}:1: job 123: Submit is not a timestamp")
    if fmt == "json":
        assert json.loads(out)["skipped"] == {"malformed": 1, "steps": 1}
    else:
        assert "rows skipped" in out or "reason,rows" in out
        assert ("malformed,1" if fmt == "csv" else "malformed       1") in out


def test_help_says_which_fields_a_dump_needs(capsys: pytest.CaptureFixture[str]) -> None:
    # issue #15: "--help and the README do not say which fields are needed" (the manual now)
    with pytest.raises(SystemExit):
        main(["update", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "needed: JobID (or JobIDRaw), State, Elapsed (or ElapsedRaw) and End (or Start)" in text
    manual = " ".join((REPO / "docs" / "accounting.md").read_text().split())
    assert "JobID (or JobIDRaw), State, Elapsed (or ElapsedRaw) and End (or Start)" in manual
