"""Slurm's text: time strings, host lists, sacct rows, scontrol records, sbatch replies."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from advisor.errors import InputError
from advisor.slurm.hostlist import expand_hostlist
from advisor.slurm.parsers import (
    SACCT_FIELDS,
    parse_job_id,
    parse_key_values,
    parse_nodes,
    parse_partitions,
    parse_req_mem_mb,
    parse_sacct,
    parse_sacct_line,
    parse_state,
    parse_test_only,
)
from advisor.slurm.timefmt import format_duration, parse_duration, parse_timelimit
from tests.helpers.captures import capture
from tests.helpers.hostile import (
    HOSTILE_NUMBERS,
    HOSTILE_STRINGS,
    budget,
    cell,
    field,
    outcome,
    rejected,
)
from tests.helpers.hostile_files import SACCT_ROWS

pytestmark = pytest.mark.fuzz

PARTITIONS = capture("scontrol_show_partition.txt").body
NODES = capture("scontrol_show_node.txt").body
TEST_ONLY = capture("sbatch_test_only_cpu_c2.stderr.txt").body

# --- time strings ------------------------------------------------------------------------------

_time_like = st.from_regex(r"[0-9٣]{0,12}([-:.][0-9]{0,12}){0,4}", fullmatch=True)


@budget(600)
@given(text=st.one_of(field, _time_like))
@example(text="9" * 5000)
@example(text="999999999-999999999:999999999:999999999.999999999")
@example(text=" 1:00 ")
def test_time_strings_give_seconds_or_an_input_error(text: str) -> None:
    for parse in (parse_duration, parse_timelimit):
        result = outcome(parse, text)
        if isinstance(result, int):
            assert result >= 0


@budget(200)
@given(seconds=st.integers(min_value=0, max_value=10**12))
def test_formatted_durations_read_back(seconds: int) -> None:
    assert outcome(parse_duration, format_duration(seconds)) == seconds


# --- host lists --------------------------------------------------------------------------------

_hostlist = st.from_regex(r"[a-z0-9,\[\]\-]{0,30}", fullmatch=True)


@budget(600)
@given(text=st.one_of(_hostlist, field))
@example(text="c[" + ",".join(["0-999999"] * 60) + "]")  # 60 M names from 500 characters
@example(text="a[0-999999]b[0-999999]")
@example(text="c[1-" + "9" * 5000 + "]")
@example(text="c[[1-2]]")
def test_host_lists_expand_or_are_rejected(text: str) -> None:
    result = outcome(expand_hostlist, text)
    if isinstance(result, tuple):
        assert len(result) == len(set(result)) <= 1_000_000


def test_a_short_host_list_cannot_ask_for_millions_of_names() -> None:
    # Regression: the size bound was checked only after every range had been expanded, so
    # 500 characters made 60 million strings (minutes and gigabytes) before the rejection.
    error = rejected(expand_hostlist, "c[" + ",".join(["0-999999"] * 60) + "]")
    assert "too many nodes" in error.message or "too large" in error.message


# --- sacct --parsable2 rows --------------------------------------------------------------------


@st.composite
def sacct_row(draw: st.DrawFn) -> str:
    """A real captured row with some fields replaced by hostile values (or fields added/lost)."""
    values = draw(st.sampled_from(SACCT_ROWS)).split("|")
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(values) - 1))
        values[index] = draw(cell)
    if draw(st.integers(0, 9)) == 0:
        values.insert(draw(st.integers(0, len(values))), draw(field))
    return "|".join(values)


@budget(800)
@given(row=sacct_row())
@example(row="1|1|j|u|a|p|c1|1|1M|00:00:01|1|1|1|CANCELLED by " + "1" * 5000 + "|0:0|||||c")
@example(row="1|1|j|u|a|p|c1|1|" + "1" * 400 + "G|00:00:01|1|1|1|COMPLETED|0:0|||||c")
@example(row="1|1|j|u|a|p|c1|1|1M|00:00:01|" + "9" * 19 + "|1|1|COMPLETED|0:0|||||c")
def test_sacct_rows_parse_or_name_the_job(row: str) -> None:
    result = outcome(parse_sacct_line, row, where="dump:7")
    if isinstance(result, InputError):
        assert result.message.startswith("dump:7")
    else:
        assert result.elapsed_s >= 0 and result.job_id_raw >= 0
        assert result.req_mem_mb is None or 0 <= result.req_mem_mb < float("inf")


@budget(200)
@given(text=st.lists(st.one_of(st.sampled_from(SACCT_ROWS), field), max_size=6).map("\n".join))
def test_whole_sacct_outputs_parse_or_name_the_line(text: str) -> None:
    outcome(parse_sacct, text, source="sacct.txt")


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        (parse_state, "CANCELLED by " + "1" * 5000),
        (parse_req_mem_mb, "1" * 400 + "G"),
        (parse_req_mem_mb, "1" + "0" * 310 + "P"),
    ],
)
def test_absurd_numbers_in_sacct_fields_are_input_errors(parse: object, text: str) -> None:
    # Regression: int() of > 4300 digits raised ValueError; 1e400 MB became float inf.
    rejected(parse, text)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "Job "
        + "9" * 5000
        + " to start at 2026-11-29T15:17:07 using 2 processors on nodes c1 in partition cpu",
        "Job 34 to start at 2026-11-29T15:17:07 using "
        + "9" * 5000
        + " processors on nodes c1 in partition cpu",
    ],
)
def test_absurd_numbers_in_test_only_replies_are_input_errors(text: str) -> None:
    rejected(parse_test_only, text)  # Regression: ValueError from int() of 5000 digits


@pytest.mark.parametrize(
    ("index", "value"), [(6, "c[2-1]"), (8, "1" * 400 + "G"), (13, "CANCELLED by " + "1" * 5000)]
)
def test_field_errors_name_the_record(index: int, value: str) -> None:
    # Regression: NodeList, ReqMem and State errors did not say which line or job they were in.
    values = SACCT_ROWS[0].split("|")
    values[index] = value
    assert rejected(parse_sacct_line, "|".join(values), where="dump.txt:3").message.startswith(
        "dump.txt:3: job "
    )


def test_sacct_with_other_field_lists_stays_strict() -> None:
    fields = ("JobIDRaw", "JobID", "Elapsed", "State")
    assert parse_sacct_line("5|5|00:01:00|COMPLETED", fields).elapsed_s == 60
    rejected(parse_sacct_line, "5|5|00:01:00", fields)
    rejected(parse_sacct_line, "5|5", ("JobIDRaw", "JobID"))  # lacks Elapsed and State
    assert len(SACCT_FIELDS) == 20


# --- scontrol and sbatch replies ---------------------------------------------------------------


@st.composite
def scontrol_text(draw: st.DrawFn, real: str) -> str:
    """Real ``scontrol show -o`` records with some ``Key=Value`` values replaced."""
    lines = real.splitlines()
    out = []
    for line in lines:
        words = line.split(" ")
        for _ in range(draw(st.integers(0, 3))):
            index = draw(st.integers(0, len(words) - 1))
            key = words[index].partition("=")[0] or "Key"
            words[index] = f"{key}={draw(field)}"
        out.append(" ".join(words))
    return "\n".join(out + draw(st.lists(field, max_size=2)))


@budget(300)
@given(partitions=scontrol_text(PARTITIONS), nodes=scontrol_text(NODES))
@example(
    partitions="PartitionName=p MaxTime=" + "9" * 5000, nodes="NodeName=n CPUTot=" + "9" * 5000
)
@example(partitions="PartitionName=p Nodes=c[1-99999999]", nodes="NodeName=")
def test_scontrol_records_parse_or_are_rejected(partitions: str, nodes: str) -> None:
    outcome(parse_partitions, partitions)
    outcome(parse_nodes, nodes)


_pairs = st.lists(
    st.tuples(st.one_of(st.sampled_from(["PartitionName", "MaxTime", "Nodes"]), field), field),
    min_size=1,
    max_size=4,
).map(lambda kv: " ".join(f"{k}={v}" for k, v in kv))


@budget(200)
@given(text=st.one_of(field, _pairs))
def test_key_value_lines_parse_or_are_rejected(text: str) -> None:
    outcome(parse_key_values, text)


@budget(300)
@given(
    job=st.sampled_from(["34", "9" * 5000, "0"]),
    start=st.sampled_from(["2026-11-29T15:17:07", "Unknown", "2026-13-45T99:99:99", "now"]),
    procs=st.sampled_from(["2", "9" * 5000]),
    nodes=st.one_of(st.sampled_from(["c1", "c[1-2]", "c[2-1]", "c[1-99999999]"]), field),
    noise=st.sampled_from(["", "sbatch: ", "\x00junk "]),
)
def test_sbatch_test_only_replies_parse_or_are_rejected(
    job: str, start: str, procs: str, nodes: str, noise: str
) -> None:
    text = f"{noise}Job {job} to start at {start} using {procs} processors on nodes {nodes} in partition cpu"
    outcome(parse_test_only, text)


@budget(200)
@given(text=st.one_of(field, st.just(TEST_ONLY), st.sampled_from(HOSTILE_STRINGS)))
@example(text="9" * 5000)
@example(text="Submitted batch job 12;cluster")
def test_job_id_replies_parse_or_are_rejected(text: str) -> None:
    outcome(parse_test_only, text)
    outcome(parse_job_id, text)


@pytest.mark.parametrize("number", HOSTILE_NUMBERS)
def test_every_hostile_number_in_every_numeric_sacct_field(number: str) -> None:
    base = SACCT_ROWS[0].split("|")
    for index in (0, 7, 8, 9, 10, 11, 12, 14):
        values = list(base)
        values[index] = number
        outcome(parse_sacct_line, "|".join(values))
