"""The forms sacct dumps come in, and hostile names, on real 22.05 captures (tests/data/slurm/forms).

Each test names the bullet of issue #15's "What is wrong today" (or issue #16's finding 3) that
it covers; each failed before (see the comments).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from advisor.accounting.sacct_file import DumpFormat, Skipped, dump_format, read_sacct_dump
from advisor.accounting.saved import update_from_file
from advisor.errors import InputError
from advisor.slurm.records import JobRecord
from advisor.store import Store
from tests.helpers.captures import capture
from tests.helpers.hostile import SEPARATORS

JOBS = dict(line.split(" ", 1) for line in capture("forms/jobs.txt").body.splitlines())
TOKEN = capture("forms/jobs.txt").body.split()[1]
PLAIN, ARRAY = JOBS["plain"], JOBS["array"]


def _dump(tmp_path: Path, name: str) -> Path:
    path = tmp_path / Path(name).name
    path.write_text(capture(f"forms/{name}").body, encoding="utf-8", newline="")
    return path


def _rows(path: Path, dump: DumpFormat | None = None) -> list[JobRecord | Skipped]:
    return [row for _, row in read_sacct_dump(path, dump)]


def _ingest(tmp_path: Path, path: Path, **options: Any) -> Any:
    with Store.open(tmp_path / "cache.db") as store:
        return update_from_file(store, path, kind="sacct", dump=dump_format(**options))


def test_the_done_when_dump_without_cluster_or_jobidraw_is_ingested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "A dump without Cluster or JobIDRaw is refused (header lacks Cluster)"
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=advisor\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))  # the cluster comes from slurm.conf
    result = _ingest(tmp_path, _dump(tmp_path, "sacct_done_when.txt"))
    assert (result.stored, result.cluster) == (1, "advisor")
    assert result.skipped == {"array_pending": 1}
    rows = _rows(_dump(tmp_path, "sacct_done_when.txt"), dump_format())
    (job,) = [row for row in rows if not isinstance(row, Skipped)]
    assert (job.job_id, job.job_id_raw, job.cluster, job.state) == (
        PLAIN,
        int(PLAIN),
        "advisor",
        "COMPLETED",
    )
    assert (job.elapsed_s, job.timelimit_s, job.partition) == (1, 120, "cpu")


def test_the_noheader_dump_is_ingested_with_fields(tmp_path: Path) -> None:
    path = _dump(tmp_path, "sacct_done_when_noheader.txt")
    fields = "JobID,JobName,User,Partition,State,Elapsed,Timelimit,End"
    with_header = _rows(_dump(tmp_path, "sacct_done_when.txt"), DumpFormat(cluster="x"))
    assert _rows(path, DumpFormat(fields=tuple(fields.split(",")), cluster="x")) == with_header
    with pytest.raises(InputError, match="not a header line"):
        _rows(path)  # without --fields: its first row is no header, in one line


def test_a_tab_delimited_dump_is_read_and_ncpus_gives_the_cpus(tmp_path: Path) -> None:
    # "a TAB-delimited header is reported as lacking fields it has"; "NCPUS is ignored"
    rows = _rows(_dump(tmp_path, "sacct_tab.txt"))
    (job,) = [row for row in rows if not isinstance(row, Skipped)]
    assert (job.job_id, job.cpus, job.elapsed_s) == (PLAIN, 1, 1)
    assert Skipped("array_pending") in rows


def test_epoch_timestamps_give_the_times_of_the_standard_dump(tmp_path: Path) -> None:
    # "Epoch timestamps are refused" (SLURM_TIME_FORMAT=%s)
    epoch = {
        r.job_id: r for r in _rows(_dump(tmp_path, "sacct_epoch.txt")) if not isinstance(r, Skipped)
    }
    standard = {
        r.job_id: r for r in _rows(_dump(tmp_path, "sacct_tab.txt")) if not isinstance(r, Skipped)
    }
    assert (
        epoch[PLAIN].end
        == standard[PLAIN].end
        == datetime.fromisoformat(
            capture("forms/sacct_done_when.txt").body.splitlines()[1].split("|")[-1]
        )
    )
    assert (epoch[PLAIN].submit, epoch[PLAIN].start) == (
        standard[PLAIN].submit,
        standard[PLAIN].start,
    )


def test_sacct_format_in_the_environment_changes_the_fields(tmp_path: Path) -> None:
    # why the live query drops SACCT_FORMAT (issue #15): its rows lack what the advisor needs
    with pytest.raises(
        InputError, match=r"header lacks Elapsed \(or ElapsedRaw\), End \(or Start\)"
    ):
        _rows(_dump(tmp_path, "sacct_format_env.txt"))


def test_an_array_cancelled_while_pending_is_not_a_finished_job(tmp_path: Path) -> None:
    # "Array records such as 4103947_[1-3] (pending remainder) are stored as finished jobs"
    path = _dump(tmp_path, "sacct_array_cancelled.txt")
    assert f"{ARRAY}_[1-3]|array-{TOKEN}|fat|CANCELLED by 0" in path.read_text()
    result = _ingest(tmp_path, path, cluster="advisor")
    assert result.stored == 0 and result.skipped == {"array_pending": 1}


def test_each_separator_in_names_and_comments_keeps_every_record(tmp_path: Path) -> None:
    # issue #16 finding 3: sacct prints them raw; the \n job spans three lines of the dump
    expected = {
        str(int(job_id)): (f"sep{i}-{TOKEN}{sep}x", f"c{sep}{i}")
        for i, (job_id, sep) in enumerate(
            zip(JOBS["separator"].split()[1:], SEPARATORS, strict=True)
        )
    }
    expected[PLAIN] = (f"plain-{TOKEN}", "plain comment")
    text = _dump(tmp_path, "sacct_separators.txt")  # Comment last: a forged row would not show
    with pytest.raises(InputError, match="line 1: the last field, Comment, is text users write"):
        _ingest(tmp_path, text, cluster="advisor")
    for name, trust in (("sacct_separators.txt", True), ("sacct_separators.json", None)):
        folder = tmp_path / name.replace(".", "_")
        folder.mkdir()
        path = _dump(folder, name)
        result = _ingest(folder, path, cluster="advisor", trust_names=trust)  # type: ignore[arg-type]
        assert result.stored == 12 and result.warnings == (), name
        rows = _rows(path, DumpFormat(cluster="advisor", trust_names=bool(trust)))
        jobs = {r.job_id: (r.name, r.comment) for r in rows if not isinstance(r, Skipped)}
        assert jobs == expected, name
