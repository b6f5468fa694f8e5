"""Saved sacct dumps as sites keep them, on the 22.05 captures of tests/data/slurm.

Headers and delimiters, concatenated dumps, array remainders, rows split by line breaks in
names, the cluster of rows without one, sacct --json of the same jobs, and --strict.
"""

from __future__ import annotations

import json
import signal
from datetime import datetime
from pathlib import Path

import pytest

from advisor.accounting.files import read_json_array
from advisor.accounting.sacct_file import (
    DEFAULT_CLUSTER,
    DumpFormat,
    Skipped,
    dump_format,
    format_sacct_row,
    header_delimiter,
    read_sacct_dump,
)
from advisor.accounting.saved import update_from_file
from advisor.errors import InputError, UsageError
from advisor.slurm.conf import local_cluster_name
from advisor.slurm.parsers import SACCT_FIELDS, parse_sacct, parse_sacct_line
from advisor.slurm.records import JobRecord
from advisor.slurm.sacct_json import json_job_id
from advisor.slurm.sacct_text import parse_req_mem
from advisor.slurm.timestamps import parse_timestamp
from advisor.store import Store
from tests.helpers.captures import capture
from tests.helpers.hostile import SEPARATORS
from tests.helpers.paths import TEST_DATA

HEADER = "|".join(SACCT_FIELDS)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="")
    return path


def _records(path: Path, dump: DumpFormat | None = None) -> list[JobRecord]:
    return [row for _, row in read_sacct_dump(path, dump) if not isinstance(row, Skipped)]


def _skipped(path: Path, dump: DumpFormat | None = None) -> list[tuple[int, Skipped]]:
    return [(line, row) for line, row in read_sacct_dump(path, dump) if isinstance(row, Skipped)]


def _x1f_jobs() -> list[JobRecord]:
    return parse_sacct(capture("sacct_allocations_x1f.txt").body, delimiter="\x1f")


# --- headers and delimiters ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "delimiter"),
    [
        (capture("sacct_header.txt").body.splitlines()[0], "|"),
        ("JobID\x1fState\x1fElapsed\x1fEnd", "\x1f"),
        ("JobID^|^State^|^Elapsed^|^End", "^|^"),
        ("JobID☃State☃Elapsed☃End☃", "☃"),  # sacct --parsable: a trailing delimiter
        ("JobID\tState\tElapsed\tEnd", "\t"),
        ("JobID", "|"),
        ("JobID    JobName  State", None),  # sacct's aligned columns, not --parsable2
    ],
)
def test_the_delimiter_is_the_one_between_the_header_names(
    line: str, delimiter: str | None
) -> None:
    assert header_delimiter(line) == delimiter


def test_the_done_when_dump_without_cluster_nor_jobidraw_loads(tmp_path: Path) -> None:
    # issue #15 "Done when": sacct -a -X -P --format=JobID,JobName,User,Partition,State,Elapsed,
    # Timelimit,End; the columns are cut from the real 22.05 capture (x1f: names intact)
    fields = ("JobID", "JobName", "User", "Partition", "State", "Elapsed", "Timelimit", "End")
    rows = [format_sacct_row(job, fields) for job in _x1f_jobs() if job.job_id != "47"]
    path = _write(tmp_path / "dump.txt", "|".join(fields) + "\n" + "\n".join(rows) + "\n")
    jobs = {job.job_id: job for job in _records(path, DumpFormat(cluster="advisor"))}
    assert len(jobs) == 17 and jobs["42"].state == "TIMEOUT" and jobs["42"].elapsed_s == 70
    assert jobs["49_1"].job_id_raw == 49  # JobIDRaw 54 is not in the dump: JobID's number
    assert {job.cluster for job in jobs.values()} == {"advisor"}
    assert jobs["46"].timelimit_s == 2 * 86400


def test_a_tab_delimited_header_is_read_with_the_fields_it_has(tmp_path: Path) -> None:
    # issue #15: "a TAB-delimited header is reported as lacking fields it has"
    rows = [format_sacct_row(job, delimiter="\t") for job in _x1f_jobs() if job.job_id != "47"]
    path = _write(tmp_path / "dump.tsv", "\t".join(SACCT_FIELDS) + "\n" + "\n".join(rows) + "\n")
    assert {job.job_id for job in _records(path)} == {job.job_id for job in _x1f_jobs()} - {"47"}


def test_a_noheader_dump_is_read_with_fields_and_delimiter(tmp_path: Path) -> None:
    path = _write(tmp_path / "dump.txt", capture("sacct_allocations_x1f.txt").body)
    dump = DumpFormat(delimiter="\x1f", fields=SACCT_FIELDS)
    assert _records(path, dump) == [job for job in _x1f_jobs()]
    with pytest.raises(InputError, match=r"expected a header line|not a header line"):
        _records(path)  # without --fields the first row is taken for a header, and refused


def test_fields_are_names_sacct_takes_in_any_case(tmp_path: Path) -> None:
    path = _write(tmp_path / "dump.txt", "36|COMPLETED|60|2026-11-29T15:17:08\n")
    (job,) = _records(path, DumpFormat(fields=("jobid", "STATE", "elapsedraw", "end")))
    assert (job.job_id, job.state, job.elapsed_s) == ("36", "COMPLETED", 60)


def test_a_dump_lacking_what_is_needed_is_refused_in_one_line_naming_it(tmp_path: Path) -> None:
    path = _write(tmp_path / "dump.txt", "JobName|Partition|Start\nx|cpu|2026-11-29T15:17:08\n")
    with pytest.raises(InputError) as info:
        list(read_sacct_dump(path))
    assert info.value.one_line().startswith(
        f"{path}: line 1: the header lacks JobID (or JobIDRaw), State, Elapsed (or ElapsedRaw); "
    )
    with pytest.raises(InputError, match="--fields lacks State"):
        list(read_sacct_dump(path, DumpFormat(fields=("JobID", "Elapsed", "End"))))


# --- concatenated dumps and rows that are no jobs --------------------------------------------


def test_concatenated_dumps_skip_their_repeated_header(tmp_path: Path) -> None:
    # issue #15: a repeated header line failed with "not a Slurm time 'Timelimit'"
    body = capture("sacct_header.txt").body
    path = _write(tmp_path / "dump.txt", body + body)
    with Store.open(tmp_path / "cache.db") as store:
        result = update_from_file(store, path, kind="sacct", dump=DumpFormat(cluster="x"))
    assert result.skipped == {"header_lines": 1}
    assert (result.stored, result.already_stored) == (1, 1)


def test_a_second_header_with_other_fields_changes_the_fields(tmp_path: Path) -> None:
    jobs = [job for job in _x1f_jobs() if job.job_id in {"38", "39"}]
    first = ("JobID", "State", "Elapsed", "End")
    second = ("End", "JobIDRaw", "JobID", "ElapsedRaw", "State", "Partition")
    text = "|".join(first) + "\n" + format_sacct_row(jobs[0], first) + "\n"
    text += "|".join(second) + "\n" + format_sacct_row(jobs[1], second) + "\n"
    path = _write(tmp_path / "dump.txt", text)
    assert [(job.job_id, job.partition) for job in _records(path)] == [("38", ""), ("39", "long")]


def test_a_later_header_lacking_what_is_needed_refuses_the_file(tmp_path: Path) -> None:
    body = capture("sacct_header.txt").body
    vsc = (
        TEST_DATA / "slurm" / "public" / "vsc-administration-sacct-default-fields.txt"
    ).read_text()
    path = _write(tmp_path / "dump.txt", body + vsc)
    with Store.open(tmp_path / "cache.db") as store:
        with pytest.raises(InputError, match=r":? line 3: the header lacks Elapsed"):
            update_from_file(store, path, kind="sacct")
        assert store.query("SELECT COUNT(*) AS n FROM accounting_jobs")[0]["n"] == 0


def test_array_remainders_are_skipped_and_counted(tmp_path: Path) -> None:
    # issue #15: '4103947_[1-3]' (the tasks not started yet) was stored as a finished job
    rows = capture("sacct_allocations.txt").body.splitlines()
    line = next(row for row in rows if "|49_2|" in row).split("|")
    line[1], line[13], line[17] = "49_[1-2]", "CANCELLED by 0", "2026-11-29T15:17:30"
    path = _write(tmp_path / "cancelled.txt", HEADER + "\n" + "|".join(line) + "\n")
    assert _skipped(path) == [(2, Skipped("array_pending"))]


def test_an_unknown_state_is_skipped_with_its_line_and_strict_refuses(tmp_path: Path) -> None:
    # issue #15: one unknown state (FOO) rejected the whole file
    body = capture("sacct_allocations_x1f.txt").body
    rows = body.splitlines()
    index = next(i for i, row in enumerate(rows) if row.startswith("45\x1f"))
    rows[index] = rows[index].replace("\x1fCOMPLETED\x1f", "\x1fFOO\x1f")
    path = _write(tmp_path / "dump.txt", "\x1f".join(SACCT_FIELDS) + "\n" + "\n".join(rows) + "\n")
    with Store.open(tmp_path / "cache.db") as store:
        with pytest.raises(InputError) as info:
            update_from_file(store, path, kind="sacct", strict=True)
        assert info.value.one_line() == (
            f"{path}:{index + 2}: job 45: unknown state 'FOO'; --strict: nothing was stored"
        )
        assert store.query("SELECT COUNT(*) AS n FROM accounting_jobs")[0]["n"] == 0
        result = update_from_file(store, path, kind="sacct")
    assert result.warnings == (f"{path}:{index + 2}: job 45: unknown state 'FOO'",)
    assert result.skipped == {"unknown_state": 1} and result.stored == 17


# --- line separators in names and comments (issue #16, finding 3) ------------------------------


@pytest.mark.parametrize("separator", SEPARATORS, ids=[repr(s) for s in SEPARATORS])
def test_a_separator_in_a_name_keeps_every_record_and_the_record_itself(
    tmp_path: Path, separator: str
) -> None:
    jobs = [job for job in _x1f_jobs() if job.job_id != "47"]
    named = jobs[3]._replace(name=f"a{separator}b", comment=f"c{separator}{separator}d")
    rows = [format_sacct_row(job if job is not jobs[3] else named) for job in jobs]
    path = _write(tmp_path / "dump.txt", HEADER + "\n" + "\n".join(rows) + "\n")
    with Store.open(tmp_path / "cache.db") as store:
        result = update_from_file(store, path, kind="sacct", dump=DumpFormat(cluster="x"))
        assert result.stored == len(jobs) and result.skipped == {}
        (row,) = store.query(
            "SELECT name, comment FROM accounting_jobs WHERE job_id = ?", (named.job_id,)
        )
    assert (row["name"], row["comment"]) == (named.name, named.comment)


def test_a_truncated_row_before_a_good_one_loses_only_itself_when_names_are_trusted(
    tmp_path: Path,
) -> None:
    good = [job for job in _x1f_jobs() if job.job_id in {"38", "39", "40"}]
    rows = [format_sacct_row(job) for job in good]
    rows.insert(1, "|".join(rows[0].split("|")[:7]))  # 7 fields, then a whole row
    path = _write(tmp_path / "dump.txt", HEADER + "\n" + "\n".join(rows) + "\n")
    with pytest.raises(InputError, match="line 3: a line break in a job name or comment"):
        _records(path)  # without trust: it could be a name that forges the rows after it
    trusted = DumpFormat(trust_names=True)
    assert [job.job_id for job in _records(path, trusted)] == ["38", "39", "40"]
    assert _skipped(path, trusted) == [
        (3, Skipped("malformed", f"{path}:3: expected 20 fields, found 7 (a job name or comment "
                    "with the delimiter in it?)")),
    ]  # fmt: skip


def test_a_crlf_dump_reads_as_the_unix_one(tmp_path: Path) -> None:
    rows = [format_sacct_row(job) for job in _x1f_jobs() if job.job_id != "47"]
    unix = _write(tmp_path / "unix.txt", HEADER + "\n" + "\n".join(rows) + "\n")
    crlf = _write(tmp_path / "crlf.txt", HEADER + "\r\n" + "\r\n".join(rows) + "\r\n")
    assert _records(crlf) == _records(unix)


# --- times, memory, CPUs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-29T15:17:07", datetime(2026, 11, 29, 15, 17, 7)),
        ("2026-11-29 15:17:07", datetime(2026, 11, 29, 15, 17, 7)),
        ("2026-11-29T15:17", datetime(2026, 11, 29, 15, 17)),
        ("Unknown", None),
        ("None", None),
        ("", None),
    ],
)
def test_timestamps_in_the_forms_sites_print(text: str, expected: datetime | None) -> None:
    assert parse_timestamp(text, field="End") == expected


def test_epoch_and_offset_times_are_local_times() -> None:
    moment = datetime(2026, 11, 29, 15, 17, 7)
    assert parse_timestamp(str(int(moment.timestamp())), field="End") == moment
    aware = moment.astimezone()
    assert parse_timestamp(aware.isoformat(), field="End") == moment
    assert parse_timestamp("29/11/2026 15:17", field="End", time_format="%d/%m/%Y %H:%M") == (
        datetime(2026, 11, 29, 15, 17)
    )
    with pytest.raises(InputError, match=r"End is not a timestamp: '4 Sep 11:18' \(another"):
        parse_timestamp("4 Sep 11:18", field="End")  # SLURM_TIME_FORMAT=relative


def test_a_time_format_without_a_year_is_refused() -> None:
    with pytest.raises(UsageError, match="has no year"):
        dump_format(time_format="%d %b %H:%M")


def test_reqmem_keeps_what_it_is_per_on_reportseff_rows() -> None:
    # issue #15: ReqMem's per-CPU/per-node suffix was dropped (reportseff's Princeton rows)
    lines = (
        (TEST_DATA / "slurm" / "public" / "reportseff-console-jobs.txt").read_text().splitlines()
    )
    fields = (
        "AdminComment,AllocCPUS,Elapsed,JobID,JobIDRaw,MaxRSS,NNodes,NTasks,ReqMem,State,TotalCPU"
    )
    jobs = {job.job_id: job for job in (
        parse_sacct_line(line, fields.split(","), delimiter="^|^") for line in lines
    )}  # fmt: skip
    assert (jobs["25569410"].req_mem_mb, jobs["25569410"].req_mem_per) == (4000.0, "cpu")
    assert (jobs["24418435"].req_mem_mb, jobs["24418435"].req_mem_per) == (1024.0, "node")
    assert parse_req_mem("1500M") == (1500.0, None)  # 21.08 and later: the job's total


def test_the_suffix_is_stored_with_the_job(tmp_path: Path) -> None:
    job = _x1f_jobs()[0]._replace(req_mem_mb=4000.0, req_mem_per="cpu")
    path = _write(tmp_path / "dump.txt", HEADER + "\n" + format_sacct_row(job) + "\n")
    assert "|4000Mc|" in path.read_text()
    with Store.open(tmp_path / "cache.db") as store:
        update_from_file(store, path, kind="sacct")
        (row,) = store.query("SELECT req_mem_mb, req_mem_per FROM accounting_jobs")
    assert row == {"req_mem_mb": 4000.0, "req_mem_per": "cpu"}


@pytest.mark.parametrize("field", ["AllocCPUS", "NCPUS", "ReqCPUS"])
def test_ncpus_or_reqcpus_stand_in_for_alloccpus(tmp_path: Path, field: str) -> None:
    fields = ("JobID", "AllocCPUS", "State", "Elapsed", "End")
    row = format_sacct_row(_x1f_jobs()[4], fields)  # done-fat: 4 CPUs
    path = _write(tmp_path / "dump.txt", "|".join(fields).replace("AllocCPUS", field) + "\n" + row)
    assert [job.cpus for job in _records(path)] == [4]


# --- the cluster of rows without one -----------------------------------------------------------


def test_the_cluster_comes_from_the_option_else_slurm_conf_else_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("# test\nClusterName=Zeta   # the site's name\nSlurmctldHost=x\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    assert local_cluster_name() == "zeta"  # Slurm keeps cluster names in lower case
    assert dump_format().cluster == "zeta"
    assert dump_format(cluster="other").cluster == "other"
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "missing.conf"))
    assert dump_format().cluster == DEFAULT_CLUSTER == "default"


def test_a_dump_row_with_a_cluster_keeps_it(tmp_path: Path) -> None:
    path = _write(tmp_path / "dump.txt", HEADER + "\n" + capture("sacct_inflight_final.txt").body)
    assert [job.cluster for job in _records(path, DumpFormat(cluster="zeta"))] == ["advisor"]


# --- sacct --json ------------------------------------------------------------------------------


def _json_body() -> str:
    return capture("sacct.json").body


@pytest.mark.parametrize("block", [1, 7, 4096, 1 << 16])
def test_json_is_streamed_job_by_job_whatever_the_block(tmp_path: Path, block: int) -> None:
    path = _write(tmp_path / "dump.json", _json_body())
    items = [item for _, item in read_json_array(path, "jobs", block=block)]
    assert items == json.loads(_json_body())["jobs"]


def test_json_items_carry_the_line_they_start_on(tmp_path: Path) -> None:
    body = _json_body()
    path = _write(tmp_path / "dump.json", body)
    text = body.splitlines()
    found = [(line, item) for line, item in read_json_array(path, "jobs", block=64)]
    assert len(found) == 18
    for line, item in found:
        assert text[line - 1].strip() == "{" and '"account"' in text[line]
        own = next(row for row in text[line:] if row.startswith('      "job_id": '))
        assert own == f'      "job_id": {item["job_id"]},'  # type: ignore[index]


#: What Slurm's JSON says otherwise than its text of the same jobs: no uid of whoever cancelled a
#: job; in 22.05 (dbv0.0.38) a user without an association is null and the exit code of
#: 'exit 3' reads 0.
JSON_DIFFERS = {
    "22.05": {"43": {"state_by_uid"}, "51": {"user"}, "41": {"exit_code"}},
    "24.11": {"13": {"state_by_uid"}, "25_1": {"state_by_uid"}},
}


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_json_of_the_cluster_gives_the_jobs_of_its_text_dump(tmp_path: Path, version: str) -> None:
    prefix = "" if version == "22.05" else f"{version}/"
    assert capture(f"{prefix}sacct.json").header["slurm version"].startswith(f"slurm-wlm {version}")
    path = _write(tmp_path / "dump.json", capture(f"{prefix}sacct.json").body)
    text = _write(tmp_path / "dump.txt", capture(f"{prefix}sacct_allocations_x1f.txt").body)
    from_json = {job.job_id: job for job in _records(path, DumpFormat(cluster="x"))}
    from_text = {job.job_id: job for job in _records(
        text, DumpFormat(delimiter="\x1f", fields=SACCT_FIELDS, cluster="x"))}  # fmt: skip
    assert set(from_json) == set(from_text) and len(from_json) >= 18
    # the JSON holds the steps, and their peak memory; the text dump is allocations only
    assert all(job.max_rss_mb is None for job in from_text.values())
    assert any(job.max_rss_mb for job in from_json.values())  # the ~70 s TIMEOUT job's
    from_json = {job_id: job._replace(max_rss_mb=None) for job_id, job in from_json.items()}
    for job_id, job in from_json.items():
        differs = {f for f in JobRecord._fields if getattr(job, f) != getattr(from_text[job_id], f)}
        assert differs <= JSON_DIFFERS[version].get(job_id, set()), (job_id, differs)


def test_the_24_11_capture_keeps_the_job_named_with_a_line_break(tmp_path: Path) -> None:
    text = _write(tmp_path / "dump.txt", capture("24.11/sacct_allocations_x1f.txt").body)
    jobs = {job.job_id: job for job in _records(
        text, DumpFormat(delimiter="\x1f", fields=SACCT_FIELDS, cluster="x"))}  # fmt: skip
    assert jobs["24"].name == "two\nlines" and jobs["24"].state == "COMPLETED"
    assert jobs["26"].state == "DEADLINE" and jobs["26"].start is None  # never started


@pytest.mark.parametrize("name", ["sacct_array_pending.txt", "sacct_array_pending.json"])
def test_the_24_11_throttled_array_remainder_is_skipped(tmp_path: Path, name: str) -> None:
    body = capture(f"24.11/{name}").body
    if name.endswith(".json"):  # 24.11 gives the pending tasks as a bitmap: 0xC is 2-3
        remainder = json.loads(body)["jobs"][-1]
        assert (remainder["array"]["task"], json_job_id(remainder)) == ("0xC", ("25_[2-3%1]", 25))
    else:
        assert "|25_[2-3%1]|" in body
    path = _write(tmp_path / name, body)
    dump = DumpFormat(fields=SACCT_FIELDS) if name.endswith(".txt") else None
    assert [row for _, row in read_sacct_dump(path, dump)] == [
        Skipped("not_finished"),  # task 1 running
        Skipped("array_pending"),
    ]


def test_truncated_json_is_refused_with_its_line_and_nothing_is_stored(tmp_path: Path) -> None:
    body = _json_body()
    path = _write(tmp_path / "dump.json", body[: len(body) * 2 // 3])
    with Store.open(tmp_path / "cache.db") as store:
        with pytest.raises(InputError, match=rf"^{path}: line \d+: not JSON"):
            update_from_file(store, path, kind="sacct")
        assert store.query("SELECT COUNT(*) AS n FROM accounting_jobs")[0]["n"] == 0


def test_json_with_a_broken_job_skips_that_job(tmp_path: Path) -> None:
    doc = json.loads(_json_body())
    doc["jobs"][2]["time"]["elapsed"] = "soon"
    doc["jobs"][3]["state"] = {"current": ["FOO"]}
    path = _write(tmp_path / "dump.json", json.dumps(doc, indent=1))
    with Store.open(tmp_path / "cache.db") as store:
        result = update_from_file(store, path, kind="sacct")
    assert result.skipped == {"malformed": 1, "unknown_state": 1}
    assert result.stored == 16
    assert "job 38: time.elapsed is not a whole number: 'soon'" in result.warnings[0]
    assert result.warnings[1].endswith("job 39: unknown state 'FOO'")


def test_json_dumps_take_no_text_options(tmp_path: Path) -> None:
    path = _write(tmp_path / "dump.json", _json_body())
    with pytest.raises(InputError, match="--fields and --delimiter are for text dumps"):
        list(read_sacct_dump(path, DumpFormat(delimiter="|")))


def _pending_ranges(bitmap: int) -> list[str]:
    """The ranges 24.11's bitmap of pending tasks gives the job id; an alarm stops a hang."""
    remainder = json.loads(capture("24.11/sacct_array_pending.json").body)["jobs"][-1]
    remainder["array"]["task"] = hex(bitmap)
    previous = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("a pending array took 20 s"))
    signal.alarm(20)
    try:
        job_id, raw = json_job_id(remainder)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert raw == 25
    return job_id.removeprefix("25_[").removesuffix("%1]").split(",")


@pytest.mark.parametrize("tasks", [400_000, 4_000_001])  # 4,000,001: Slurm's MaxArraySize
def test_a_pending_array_of_any_size_costs_its_bitmap_once(tasks: int) -> None:
    """Issue 31 N13: the bitmap was shifted once per task: 400,000 pending tasks in a row cost
    2.2 s per record, a MaxArraySize array minutes.  Now one pass over the bitmap."""
    assert _pending_ranges(((1 << tasks) - 1) ^ 2) == ["0", f"2-{tasks - 1}"]
    every_other = int("01" * (tasks // 2), 2) << 2  # tasks 2, 4, 6...: a range each
    ranges = _pending_ranges(every_other)
    assert len(ranges) == 1000 and ranges[:3] == ["2", "4", "6"] and ranges[-1] == "2000"
