"""Parsers on real outputs captured from the test cluster, on every recorded Slurm version.

tests/data/slurm/<version>/ (22.05.8 from Debian 12, 24.11.5 from Debian 13) were recorded by
slurm/capture-fixtures.sh from the same job mix; the expectations come from the job mix itself
(jobs_submitted.tsv, the capture headers), never from one recording's job ids or dates.  The
sacct rows are read both as the live query reads them and as ``advisor update --sacct-file``
reads a saved dump (``reader``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.accounting.sacct_file import DumpFormat, Skipped, dump_format, read_sacct_dump
from advisor.accounting.saved import update_from_file
from advisor.errors import InputError
from advisor.slurm import parsers
from advisor.slurm.parsers import (
    SACCT_FIELDS,
    parse_job_id,
    parse_nodes,
    parse_partitions,
    parse_req_mem_mb,
    parse_sacct,
    parse_sacct_line,
    parse_state,
    parse_test_only,
)
from advisor.slurm.records import JobRecord
from advisor.slurm.sacct_text import whole_number
from advisor.slurm.timefmt import NoLimit
from advisor.store import Store
from tests.helpers.captures import SLURM_DATA, VERSIONS, Capture, capture, submitted

X1F = "\x1f"


@pytest.fixture(params=VERSIONS)
def version(request: pytest.FixtureRequest) -> str:
    """One recorded Slurm version (MAJOR.MINOR)."""
    return str(request.param)


def _when(c: Capture) -> datetime:
    """When the capture's command ran (local time, as sacct prints it)."""
    return datetime.fromisoformat(c.header["date"]).replace(tzinfo=None)


#: Jobs whose user text breaks a row: ``|`` in a name/comment (not with X1F), a newline (always).
PIPE, NEWLINE = "pipe-in-name-and-comment", "newline-in-name"


def _text(version: str, name: str, *, drop: tuple[str, ...] = (PIPE, NEWLINE)) -> str:
    """The capture's rows without those of the jobs ``drop`` names (by purpose)."""
    ids = submitted(version)
    broken = {str(ids[purpose]) for purpose in drop if purpose in ids}
    kept, dropping = [], False
    for line in capture(name, version).body.splitlines():
        first = line.replace(X1F, "|").split("|", 1)[0]
        if first[:1].isdigit():  # else the line continues the last one's job name (a newline)
            dropping = first.split(".")[0] in broken
        if not dropping:
            kept.append(line)
    return "\n".join(kept)


#: Reads sacct text (its body, its delimiter) as JobRecords.
Reader = Callable[[str, str], list[JobRecord]]


@pytest.fixture(params=["live", "dump"])
def reader(request: pytest.FixtureRequest, tmp_path: Path) -> Reader:
    """The live query's parser, or a saved dump's reader (its finished jobs, the rest skipped)."""
    if request.param == "live":
        return lambda text, delimiter: parse_sacct(text, delimiter=delimiter)

    def from_dump(text: str, delimiter: str) -> list[JobRecord]:
        path = tmp_path / "dump.txt"
        path.write_text(text, encoding="utf-8", newline="")
        dump = DumpFormat(delimiter=delimiter, fields=SACCT_FIELDS, cluster="elsewhere")
        return [row for _, row in read_sacct_dump(path, dump) if not isinstance(row, Skipped)]

    return from_dump


def _by_name(
    version: str, name: str = "sacct_allocations_x1f.txt", reader: Reader | None = None
) -> dict[str, JobRecord]:
    text = _text(version, name, drop=(NEWLINE,))
    read = reader or (lambda body, delimiter: parse_sacct(body, delimiter=delimiter))
    return {r.name: r for r in read(text, X1F)}


def test_both_versions_are_recorded() -> None:
    assert {"22.05", "24.11"} <= set(VERSIONS)


def test_every_capture_carries_its_version_and_command(version: str) -> None:
    names = sorted(
        p.name for p in (SLURM_DATA / version).iterdir() if p.name != "jobs_submitted.tsv"
    )
    assert len(names) > 30
    for name in names:
        c = capture(name, version)
        assert c.slurm_version.startswith(f"{version}."), name
        assert c.header["command"], name


def test_capture_used_our_field_list(version: str) -> None:
    assert ",".join(SACCT_FIELDS) in capture("sacct_allocations.txt", version).header["command"]
    header = capture("sacct_header.txt", version).body.splitlines()[0]
    assert header.split("|") == list(SACCT_FIELDS)


def test_sacct_rows_of_every_partition_and_state(version: str, reader: Reader) -> None:
    jobs = _by_name(version, reader=reader)
    recorded = _when(capture("sacct_allocations_x1f.txt", version))
    done = jobs["done-fat"]
    assert (done.partition, done.nodes, done.cpus, done.state) == ("fat", ("f1",), 4, "COMPLETED")
    assert done.req_mem_mb == 1024.0
    assert done.elapsed_s == 2 and done.timelimit_s == 600
    assert done.cluster == "advisor" and done.user == "root" and done.account == "research"
    assert done.submit and done.start and done.end
    assert recorded - timedelta(minutes=10) < done.submit <= done.start <= done.end < recorded
    assert done.is_final
    assert jobs["done-long"].partition == "long"
    assert jobs["done-cpu"].req_mem_mb == 200.0
    failed = jobs["fail-exit3"]
    assert (failed.state, failed.exit_code, failed.exit_signal) == ("FAILED", 3, 0)
    timeout = jobs["timeout-1min"]
    assert timeout.state == "TIMEOUT" and timeout.timelimit_s == 60 and timeout.elapsed_s >= 60
    cancelled = jobs["cancel-running"]
    assert (cancelled.state, cancelled.state_by_uid) == ("CANCELLED", 0)
    assert jobs["two-node"].nodes == ("c1", "c2") and jobs["two-node"].cpus == 2
    assert jobs["long-2d"].timelimit_s == 2 * 86400
    assert jobs["mem-per-cpu"].req_mem_mb == 1500.0  # 2 CPUs x 750M, shown as the total
    assert jobs["killed-by-signal"].exit_signal == 9
    assert jobs["comment-spaces"].comment == "predicted 12 min by advisor (p90, n=40)"
    assert jobs["no-assoc"].user == "nobody" and jobs["no-assoc"].account == ""
    assert jobs["defaults"].partition == "cpu" and jobs["defaults"].timelimit_s == 1800


def test_unit_separator_keeps_pipes_in_user_text(version: str, reader: Reader) -> None:
    jobs = _by_name(version, reader=reader)
    assert jobs["name|with|pipe"].comment == "comment|with|pipe"


def test_a_saved_dump_skips_and_counts_the_rows_user_text_breaks(
    version: str, tmp_path: Path
) -> None:
    # the | dump: the row with | in its name is skipped with its file:line; every other
    # finished job is stored as the x1f dump has it (the name with a line break too)
    path = tmp_path / "dump.txt"
    path.write_text(capture("sacct_allocations.txt", version).body, encoding="utf-8", newline="")
    with Store.open(tmp_path / "cache.db") as store:
        result = update_from_file(
            store, path, kind="sacct", dump=dump_format(fields=",".join(SACCT_FIELDS))
        )
        stored = {row["name"] for row in store.query("SELECT name FROM accounting_jobs")}
    assert result.skipped["malformed"] == 1, result.skipped
    (warning,) = result.warnings
    line = 1 + next(number for number, text in enumerate(
        capture("sacct_allocations.txt", version).body.splitlines()) if "with|pipe" in text)  # fmt: skip
    assert f"{path.name}:{line}:" in warning
    intact = {name for name, job in _by_name(version).items() if job.is_final}
    assert stored == intact - {"name|with|pipe"} | {"two\nlines"} and len(stored) > 15


def test_pipe_in_user_text_is_an_error_naming_the_job_not_a_silent_shift(version: str) -> None:
    text = _text(version, "sacct_allocations.txt", drop=(NEWLINE,))
    with pytest.raises(InputError, match=r"sacct:\d+: expected 20 fields, found 24"):
        parse_sacct(text)
    # every other row of the same dump is fine on its own
    good = [line for line in text.splitlines() if "with|pipe" not in line]
    assert len(parse_sacct("\n".join(good))) == len(good) > 15


def test_a_newline_in_a_job_name_breaks_its_row_with_any_delimiter(version: str) -> None:
    job = submitted(version)[NEWLINE]
    for name, delimiter in (("sacct_allocations.txt", "|"), ("sacct_allocations_x1f.txt", X1F)):
        body = (
            _text(version, name, drop=(PIPE,)) if delimiter == "|" else capture(name, version).body
        )
        assert body.count(f"{job}{delimiter}{job}{delimiter}two\nlines{delimiter}") == 1
        with pytest.raises(InputError, match=r"sacct:\d+: expected 20 fields, found 3"):
            parse_sacct(body, delimiter=delimiter)


def test_array_jobs_keep_their_array_id(version: str, reader: Reader) -> None:
    rows = reader(_text(version, "sacct_allocations_x1f.txt", drop=(NEWLINE,)), X1F)
    array_id = submitted(version)["job-array"]
    array = {r.job_id: r.job_id_raw for r in rows if r.name == "array"}
    assert set(array) == {f"{array_id}_1", f"{array_id}_2"}
    # one task keeps the array's own id, the other gets a new one
    assert sorted(raw == array_id for raw in array.values()) == [False, True]
    assert all(raw >= array_id for raw in array.values())


def test_a_pending_array_remainder_is_one_record_of_its_own(version: str) -> None:
    if "array-pending-remainder" not in submitted(version):
        pytest.fail(f"the {version} recording lacks the throttled array job")
    array_id = submitted(version)["array-pending-remainder"]
    rows = {r.job_id: r for r in parse_sacct(capture("sacct_array_pending.txt", version).body)}
    assert rows[f"{array_id}_1"].state == "RUNNING" and rows[f"{array_id}_1"].end is None
    (remainder,) = (r for job, r in rows.items() if job.startswith(f"{array_id}_["))
    assert remainder.job_id in (f"{array_id}_[2-3%1]", f"{array_id}_[2-3]")
    assert remainder.state == "PENDING" and remainder.start is None and remainder.nodes == ()
    assert remainder.job_id_raw == array_id and not remainder.is_final


def test_jobs_that_never_started(version: str) -> None:
    ids = submitted(version)
    rows = {r.job_id_raw: r for r in parse_sacct(capture("sacct_never_started.txt", version).body)}
    pending = rows[ids["cancelled-while-pending"]]
    assert (pending.state, pending.start, pending.nodes) == ("CANCELLED", None, ())
    deadline = rows[ids["deadline-while-pending"]]
    assert deadline.state == "DEADLINE" and deadline.start is None and deadline.end is not None
    remainder = rows[ids["array-pending-remainder"]]
    assert remainder.state == "CANCELLED" and remainder.start is None
    # a job cancelled before it was eligible is in no -S window dump; the DEADLINE one was
    window = {r.job_id_raw for r in _by_name(version).values()}
    assert not {pending.job_id_raw, remainder.job_id_raw} & window
    assert deadline.job_id_raw in window


def test_running_and_pending_rows_of_the_snapshot(version: str) -> None:
    rows = {r.job_id_raw: r for r in parse_sacct(_text(version, "sacct_running.txt"))}
    running = rows[submitted(version)["cancelled-while-running"]]
    assert running.state == "RUNNING" and running.end is None and running.start is not None
    assert not running.is_final
    for row in rows.values():
        if row.state == "PENDING":
            assert row.nodes == () and row.start is None and row.end is None, row
        if row.state == "RUNNING":
            assert row.start is not None and row.end is None, row


def test_the_in_flight_sequence_ends_in_the_final_row(version: str) -> None:
    """22.05 shows a job first as JobName=allocation without a partition; 24.11 does not."""
    body = capture("sacct_inflight_sequence.txt", version).body
    rows = [
        parse_sacct_line(line) for line in body.splitlines() if line and not line.startswith("#")
    ]
    assert len(rows) >= 2 and len({r.job_id for r in rows}) == 1
    *early, last = rows
    assert last.is_final and last.state == "COMPLETED" and last.name == "inflight-probe"
    assert not any(r.is_final for r in early)
    final = parse_sacct_line(capture("sacct_inflight_final.txt", version).body.strip())
    assert final == last


@pytest.mark.parametrize(
    "version",
    # None: the first 22.05 recording (tests/data/slurm/), which caught one
    [None, *(v for v in VERSIONS if (SLURM_DATA / v / "sacct_inflight.txt").exists())],
)
def test_in_flight_record_is_not_final(version: str | None) -> None:
    (record,) = parse_sacct(capture("sacct_inflight.txt", version).body)
    assert record.name == "allocation" and record.partition == ""
    assert not record.is_final


def test_step_rows_parse_too(version: str) -> None:
    rows = parse_sacct(_text(version, "sacct_steps.txt"))
    assert any(r.job_id.endswith(".batch") for r in rows)
    two_node = submitted(version)["two-nodes"]
    assert f"{two_node}.0" in {r.job_id for r in rows}  # its srun step
    assert all(r.job_id_raw > 0 for r in rows)


def test_partitions_from_scontrol(version: str) -> None:
    text = capture("scontrol_show_partition.txt", version).body
    parts = {p.name: p for p in parse_partitions(text)}
    assert set(parts) == {"cpu", "long", "fat"}
    assert parts["cpu"].is_default and not parts["fat"].is_default
    assert parts["cpu"].max_time_s == 86400 and parts["cpu"].default_time_s == 1800
    assert parts["long"].max_time_s == 7 * 86400 and parts["long"].default_time_s == 4 * 3600
    assert parts["fat"].nodes == ("f1",) and parts["cpu"].nodes == ("c1", "c2")
    assert parts["cpu"].total_cpus == 4 and parts["fat"].total_cpus == 8


def test_nodes_from_scontrol_with_spaces_in_values(version: str) -> None:
    nodes = {n.name: n for n in parse_nodes(capture("scontrol_show_node.txt", version).body)}
    assert nodes["f1"].cpus == 8 and nodes["f1"].memory_mb == 64000
    assert nodes["f1"].features == ("fat", "bigmem")
    assert nodes["c1"].partitions == ("cpu", "long")
    assert nodes["c2"].state == "IDLE"


def test_test_only_estimate(version: str) -> None:
    c = capture("sbatch_test_only_fat.stderr.txt", version)
    estimate = parse_test_only(c.body)
    assert (estimate.partition, estimate.nodes, estimate.processors) == ("fat", ("f1",), 4)
    assert abs(estimate.start - _when(c)) < timedelta(minutes=1)
    two = parse_test_only(capture("sbatch_test_only_cpu_c2.stderr.txt", version).body)
    assert two.partition == "cpu" and two.processors == 2 and len(two.nodes) == 1


@pytest.mark.parametrize(
    "name", ["sbatch_test_only_cpu.stderr.txt", "sbatch_time_over_max.stderr.txt"]
)
def test_test_only_without_estimate_is_input_error(version: str, name: str) -> None:
    with pytest.raises(InputError, match="no start estimate"):
        parse_test_only(capture(name, version).body)


def test_parsable_job_id(version: str) -> None:
    assert parse_job_id(capture("sbatch_parsable.txt", version).body) > 0
    assert parse_job_id(capture("dbd_down_sbatch.txt", version).body) > 0
    assert parse_job_id("42;advisor\n") == 42
    with pytest.raises(InputError):
        parse_job_id("Submitted batch job 42")


def test_empty_and_missing_answers(version: str) -> None:
    assert parse_sacct(capture("sacct_no_such_job.txt", version).body) == []
    rows = parse_sacct(capture("ctld_down_sacct.txt", version).body)  # sacct needs no slurmctld
    assert len(rows) == 1 and rows[0].is_final


@pytest.mark.parametrize("value", ["3", " 3", "3 ", "3\x1f", "\x1c3", "\t3\n", "0003"])
def test_a_whole_number_may_have_blanks_around_it(value: str) -> None:
    # Regression: the check stripped the value, int() did not: int('3\x1f') is a ValueError
    assert whole_number(value, "AllocCPUS") == 3
    assert parsers._int(value, "CPUTot", "node c1") == 3


@pytest.mark.parametrize("value", ["", " ", "3a", "-3", "3 3", "\u0663", "\uff13", "1" * 19])
def test_anything_else_is_not_a_whole_number(value: str) -> None:
    with pytest.raises(InputError, match="AllocCPUS is not a whole number"):
        whole_number(value, "AllocCPUS")
    with pytest.raises(InputError, match=r"^node c1: field CPUTot is not a whole number"):
        parsers._int(value, "CPUTot", "node c1")


def test_a_dump_row_with_blanks_around_its_numbers_is_read_and_a_bad_one_counted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "dump.txt"
    path.write_text(
        "JobID|State|ElapsedRaw|End|AllocCPUS|TimelimitRaw\n"
        "1|COMPLETED|61\x1f|2024-05-01T08:00:00| 3|10\x1f\n"
        "2|COMPLETED| 7|2024-05-01T08:01:00|2\x1f| 5\n"
        "3|COMPLETED|\u0663|2024-05-01T08:02:00|1|5\n",
        encoding="utf-8",
    )
    with Store.open(tmp_path / "cache.db") as store:
        result = update_from_file(store, path, kind="sacct", dump=dump_format(cluster="x"))
        rows = store.query(
            "SELECT job_id, elapsed_s, cpus, timelimit_s FROM accounting_jobs ORDER BY job_id"
        )
    assert [tuple(row.values()) for row in rows] == [("1", 61, 3, 600), ("2", 7, 2, 300)]
    assert result.skipped == {"malformed": 1}
    assert "dump.txt:4" in result.warnings[0] and "ElapsedRaw" in result.warnings[0]


@pytest.mark.parametrize(
    ("text", "mb"),
    [("100M", 100.0), ("2G", 2048.0), ("500Mc", 500.0), ("4000Mn", 4000.0), ("", None)],
)
def test_req_mem(text: str, mb: float | None) -> None:
    assert parse_req_mem_mb(text) == mb


def test_states() -> None:
    assert parse_state("CANCELLED by 1000") == ("CANCELLED", 1000)
    assert parse_state("OUT_OF_MEMORY") == ("OUT_OF_MEMORY", None)
    assert parse_state("RUNNING+") == ("RUNNING", None)


def test_timelimit_words_in_sacct() -> None:
    fields = ("JobIDRaw", "JobID", "Elapsed", "Timelimit", "State")
    record = parse_sacct_line("7|7|00:01:00|UNLIMITED|COMPLETED", fields)
    assert record.timelimit_s is None and record.timelimit_kind is NoLimit.UNLIMITED
    record = parse_sacct_line("7|7|00:01:00|Partition_Limit|COMPLETED", fields)
    assert record.timelimit_kind is NoLimit.PARTITION_LIMIT


@given(st.text(max_size=300))
def test_any_sacct_line_parses_or_raises_input_error(line: str) -> None:
    try:
        parse_sacct_line(line)
    except InputError:
        pass


@given(
    st.lists(
        st.text(alphabet=st.characters(exclude_characters="|\n\r"), max_size=12),
        min_size=20,
        max_size=20,
    )
)
def test_any_twenty_fields_parse_or_raise_input_error(values: list[str]) -> None:
    try:
        record = parse_sacct_line("|".join(values))
    except InputError:
        return
    assert record.elapsed_s >= 0


@given(st.text(max_size=300))
def test_any_scontrol_text_parses_or_raises_input_error(text: str) -> None:
    for parser in (parse_partitions, parse_nodes, parse_test_only):
        try:
            parser(text)
        except InputError:
            pass


def test_a_node_name_that_is_not_utf8_is_stored_as_any_utf8_reader_shows_it(
    tmp_path: Path,
) -> None:
    # Regression (found by tests/fuzz/test_fuzz_accounting.py): the node list was the only text
    # field not made storable, and the observation's node made SQLite raise UnicodeEncodeError
    assert parse_sacct_line("7|COMPLETED|61|2024-05-01T08:00:00|c\udcff1",
                            ("JobID", "State", "ElapsedRaw", "End", "NodeList")).nodes == ("c\ufffd1",)  # fmt: skip
    path = tmp_path / "dump.txt"
    path.write_bytes(
        b"JobID|State|ElapsedRaw|End|NodeList\n7|COMPLETED|61|2024-05-01T08:00:00|c\xff1\n"
    )
    with Store.open(tmp_path / "cache.db") as store:
        result = update_from_file(store, path, kind="sacct", dump=dump_format(cluster="x"))
        (row,) = store.query("SELECT node FROM observations")
    assert result.stored == 1 and row["node"] == "c\ufffd1"
