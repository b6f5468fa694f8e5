"""Parsers on real outputs captured from the test cluster (tests/data/slurm, Slurm 22.05.8)."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.errors import InputError
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
from advisor.slurm.timefmt import NoLimit
from tests.captures import capture


def _by_name(delimiter: str = "\x1f", name: str = "sacct_allocations_x1f.txt") -> dict[str, object]:
    return {r.name: r for r in parse_sacct(capture(name).body, delimiter=delimiter)}


def test_capture_used_our_field_list() -> None:
    assert ",".join(SACCT_FIELDS) in capture("sacct_allocations.txt").header["command"]


def test_sacct_rows_of_every_partition_and_state() -> None:
    jobs = _by_name()
    done = jobs["done-fat"]
    assert (done.partition, done.nodes, done.cpus, done.state) == ("fat", ("f1",), 4, "COMPLETED")
    assert done.req_mem_mb == 1024.0
    assert done.elapsed_s == 2 and done.timelimit_s == 600
    assert done.cluster == "advisor" and done.user == "root" and done.account == "research"
    assert done.start == datetime(2026, 11, 29, 15, 17, 11)
    assert done.is_final
    assert jobs["done-long"].partition == "long"
    failed = jobs["fail-exit3"]
    assert (failed.state, failed.exit_code, failed.exit_signal) == ("FAILED", 3, 0)
    timeout = jobs["timeout-1min"]
    assert timeout.state == "TIMEOUT" and timeout.timelimit_s == 60 and timeout.elapsed_s >= 60
    cancelled = jobs["cancel-running"]
    assert (cancelled.state, cancelled.state_by_uid) == ("CANCELLED", 0)
    assert jobs["two-node"].nodes == ("c1", "c2")
    assert jobs["long-2d"].timelimit_s == 2 * 86400
    assert jobs["killed-by-signal"].exit_signal == 9
    assert jobs["comment-spaces"].comment == "predicted 12 min by advisor (p90, n=40)"
    assert jobs["no-assoc"].user == "nobody" and jobs["no-assoc"].account == ""


def test_unit_separator_keeps_pipes_in_user_text() -> None:
    jobs = _by_name()
    assert jobs["name|with|pipe"].comment == "comment|with|pipe"


def test_pipe_in_user_text_is_an_error_naming_the_job_not_a_silent_shift() -> None:
    text = capture("sacct_allocations.txt").body
    with pytest.raises(InputError, match=r"sacct:\d+: expected 20 fields, found 24"):
        parse_sacct(text)
    # every other row of the same dump is fine on its own
    good = [line for line in text.splitlines() if "with|pipe" not in line]
    assert len(parse_sacct("\n".join(good))) == len(good)


def test_array_jobs_keep_their_array_id() -> None:
    rows = parse_sacct(capture("sacct_allocations_x1f.txt").body, delimiter="\x1f")
    array = {r.job_id: r.job_id_raw for r in rows if r.name == "array"}
    assert array == {"49_1": 54, "49_2": 49}


def test_in_flight_record_is_not_final() -> None:
    (record,) = parse_sacct(capture("sacct_inflight.txt").body)
    assert record.name == "allocation" and record.partition == ""
    assert not record.is_final
    assert record.req_mem_mb is None  # '16?' while slurmdbd fills the record


def test_step_rows_parse_too() -> None:
    text = capture("sacct_steps.txt").body
    rows = parse_sacct("\n".join(line for line in text.splitlines() if "with|pipe" not in line))
    assert any(r.job_id.endswith(".batch") for r in rows)
    assert all(r.job_id_raw > 0 for r in rows)


def test_partitions_from_scontrol() -> None:
    parts = {p.name: p for p in parse_partitions(capture("scontrol_show_partition.txt").body)}
    assert set(parts) == {"cpu", "long", "fat"}
    assert parts["cpu"].is_default and not parts["fat"].is_default
    assert parts["cpu"].max_time_s == 86400 and parts["cpu"].default_time_s == 1800
    assert parts["long"].max_time_s == 7 * 86400 and parts["long"].default_time_s == 4 * 3600
    assert parts["fat"].nodes == ("f1",) and parts["cpu"].nodes == ("c1", "c2")
    assert parts["cpu"].total_cpus == 4


def test_nodes_from_scontrol_with_spaces_in_values() -> None:
    nodes = {n.name: n for n in parse_nodes(capture("scontrol_show_node.txt").body)}
    assert nodes["f1"].cpus == 8 and nodes["f1"].memory_mb == 64000
    assert nodes["f1"].features == ("fat", "bigmem")
    assert nodes["c1"].partitions == ("cpu", "long")
    assert nodes["c2"].state == "IDLE"


def test_test_only_estimate() -> None:
    estimate = parse_test_only(capture("sbatch_test_only_fat.stderr.txt").body)
    assert (estimate.partition, estimate.nodes, estimate.processors) == ("fat", ("f1",), 4)
    assert estimate.start == datetime(2026, 11, 29, 15, 17, 7)


@pytest.mark.parametrize(
    "name", ["sbatch_test_only_cpu.stderr.txt", "sbatch_time_over_max.stderr.txt"]
)
def test_test_only_without_estimate_is_input_error(name: str) -> None:
    with pytest.raises(InputError, match="no start estimate"):
        parse_test_only(capture(name).body)


def test_parsable_job_id() -> None:
    assert parse_job_id(capture("sbatch_parsable.txt").body) > 0
    assert parse_job_id("42;advisor\n") == 42
    with pytest.raises(InputError):
        parse_job_id("Submitted batch job 42")


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
