"""Accounting logs: SWF lines and files, saved sacct dumps, what ``update`` and ``replay`` do with
them, and job names or comments that no UTF-8 reader (nor SQLite) accepts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from advisor.accounting.ingest import Ingestor
from advisor.accounting.sacct_file import DumpFormat, Skipped, format_sacct_row, read_sacct_dump
from advisor.accounting.saved import update_from_file
from advisor.accounting.swf import parse_swf_line, read_swf
from advisor.errors import InputError
from advisor.replay.jobs import replay_jobs
from advisor.services.replay import replay_report
from advisor.services.update import update_from_sacct
from advisor.slurm.backend import CliBackend, sacct_delimiter
from advisor.slurm.parsers import SACCT_FIELDS, parse_sacct, parse_sacct_line
from advisor.slurm.records import JobRecord
from advisor.slurm.runner import CommandResult, SlurmCommands
from advisor.slurm.sacct_text import parse_sacct_records
from advisor.slurm.timestamps import parse_timestamp
from advisor.store import Store
from tests.helpers.captures import capture
from tests.helpers.hostile import (
    HOSTILE_NUMBERS,
    SEPARATORS,
    budget,
    cell,
    count,
    field,
    mutated_json,
    outcome,
    write,
)
from tests.helpers.hostile_files import SACCT_HEADER, SACCT_ROWS, SWF_LINES, sacct_dump, swf_line
from tests.helpers.paths import TEST_DATA

pytestmark = pytest.mark.fuzz

SWF_HEADER = ["; Version: 2.2", "; UnixStartTime: 1700000000", "; MaxJobs: 4"]


@budget(800)
@given(line=st.one_of(swf_line(), field))
@example(line=" ".join(["1" * 400] * 18))
@example(line=" ".join(["1"] * 10 + ["1" * 5000] + ["1"] * 7))
@example(line=" ".join(["1"] * 10 + ["٣"] + ["1"] * 7))
def test_swf_lines_parse_or_name_the_line(line: str) -> None:
    job = outcome(parse_swf_line, line, source="log.swf", line_no=9)
    if isinstance(job, InputError):
        assert job.message.startswith("log.swf:9")
    elif job is not None:
        assert job.job_id >= 0 and job.submit_s >= 0 and job.state


def _rows(store: Store) -> tuple[int, int]:
    jobs = store.query("SELECT count(*) AS n FROM observations")[0]["n"]
    return jobs, store.conn.total_changes


def ingested(store: Store, path: Path, kind: str) -> object:
    """``update --swf/--sacct-file``: a summary, or an InputError and no change to the cache."""
    before = store.query("SELECT count(*) AS n FROM observations")[0]["n"]
    result = outcome(update_from_file, store, path, kind=kind)
    if isinstance(result, InputError):
        assert str(path) in result.message
        assert store.query("SELECT count(*) AS n FROM observations")[0]["n"] == before
    else:
        json.dumps(result.to_json(), allow_nan=False)
    return result


@budget(150)
@given(lines=st.lists(st.one_of(st.sampled_from(SWF_LINES), swf_line()), min_size=1, max_size=6),
       header=st.lists(st.one_of(st.sampled_from(SWF_HEADER), field.map(lambda f: "; " + f)),
                       max_size=3),
       junk=st.one_of(st.just(b""), st.binary(max_size=30)))  # fmt: skip
@example(lines=SWF_LINES, header=["; UnixStartTime: " + "9" * 5000], junk=b"")
@example(lines=SWF_LINES, header=["; UnixStartTime: -99999999999999"], junk=b"")
@example(lines=SWF_LINES, header=["; Note: \udcff"], junk=b"")
def test_swf_files_for_update_and_replay(
    store: Store, scratch: Path, lines: list[str], header: list[str], junk: bytes
) -> None:
    path = write(
        scratch / "log.swf",
        "\n".join([*header, *lines]).encode("utf-8", "surrogateescape") + b"\n" + junk,
    )
    ingested(store, path, "swf")
    jobs = outcome(replay_log, path)
    if not isinstance(jobs, InputError):
        json.dumps(replay_report(jobs, source=str(path)).to_json(), allow_nan=False)


def replay_log(path: Path) -> list[object]:
    """What ``advisor replay`` scores: the jobs of the log."""
    return list(replay_jobs(read_swf(path)))


@budget(150)
@given(
    text=st.one_of(
        sacct_dump(), st.binary(max_size=80).map(lambda b: SACCT_HEADER.encode() + b"\n" + b)
    )
)
@example(text=SACCT_HEADER + "\n" + SACCT_ROWS[0].replace("|parsable|", "|p\udcffn|"))
@example(
    text=SACCT_HEADER
    + "\n"
    + SACCT_ROWS[0].replace("||advisor", "|advisor:x,action=set,limit=1,task=%FF|advisor")
)
def test_sacct_dumps_for_update(store: Store, scratch: Path, text: str | bytes) -> None:
    ingested(store, write(scratch / "dump.txt", text), "sacct")


def test_job_names_and_comments_that_are_not_utf8_do_not_stop_accounting(store: Store) -> None:
    # Regression: live sacct output keeps such bytes as surrogates; SQLite refused them with
    # UnicodeEncodeError, so one user's job name stopped 'advisor update' for the whole site
    # (and again at every run: the watermark never moved).  A comment's tag 'task=%FF' did the
    # same even in a saved dump.
    row = (
        SACCT_ROWS[0]
        .replace("|parsable|", "|p\udcffn|")
        .replace("||advisor", "|advisor:x,action=set,limit=1,task=%FF|advisor")
    )
    job = parse_sacct_line(row)
    assert job.name == "p\ufffdn"
    with store.write():
        Ingestor(store).add([job._replace(job_id="90001", job_id_raw=90001)])
    tasks = {
        r["task"] for r in store.query("SELECT task FROM observations WHERE source_key = '90001'")
    }
    assert tasks == {"\ufffd"}


def test_dates_past_the_year_9999_are_refused_or_the_epoch_ignored(
    store: Store, scratch: Path
) -> None:
    # Regression: submit 251702300800 s (year 9946) after the epoch raised OverflowError in
    # datetime arithmetic; an epoch near the year 9999 did the same with ordinary times.
    far = SWF_LINES[0].replace("1 0 10", "1 251702300800 10", 1)
    path = write(scratch / "far.swf", "; UnixStartTime: 1700000000\n" + far + "\n")
    assert f"{path}:2" in ingested(store, path, "swf").message  # type: ignore[attr-defined]
    late = write(scratch / "late.swf", "; UnixStartTime: 253000000000\n" + SWF_LINES[0] + "\n")
    assert not isinstance(ingested(store, late, "swf"), InputError)


@pytest.mark.parametrize("number", HOSTILE_NUMBERS)
def test_every_hostile_number_in_every_swf_field(number: str) -> None:
    for index in range(18):
        parts = SWF_LINES[0].split()
        parts[index] = number
        outcome(parse_swf_line, " ".join(parts))


# --- sacct --json dumps, delimiters and headers, epoch times, separators in names ---------------

SACCT_JSON = json.loads(capture("sacct.json").body)
PUBLIC_JSON = [
    json.loads(path.read_text()) for path in sorted((TEST_DATA / "slurm" / "public").glob("*.json"))
]
#: One job of each layout (21.08 to 25.05): mutated one value at a time.
JSON_DOCS = [{**SACCT_JSON, "jobs": SACCT_JSON["jobs"][:3]}, *PUBLIC_JSON]
JOB_KEYS = ("job_id", "state", "time", "array", "het", "tres", "required", "name", "comment")
DELIMITERS = ("|", "\t", "\x1f", "^|^", "☃", ";", "::")
REAL_JOBS = [
    job for job in parse_sacct(capture("sacct_allocations_x1f.txt").body, delimiter="\x1f")
]


@budget(200)
@given(text=st.one_of(mutated_json(JSON_DOCS, JOB_KEYS),
                      st.sampled_from(JSON_DOCS).map(json.dumps).flatmap(
                          lambda t: st.integers(0, len(t)).map(lambda n: t[:n]))))  # fmt: skip
@example(text='{"jobs": [{"job_id": 1, "state": {"current": []}}]}')
@example(text='{"jobs": [{"job_id": 18446744073709551616}]}')
@example(text='{"jobs": ' + "[" * 5000 + "]" * 5000 + "}")
def test_sacct_json_dumps_for_update(store: Store, scratch: Path, text: str) -> None:
    """A mutated or cut sacct --json dump: a summary, or the file refused naming itself."""
    ingested(store, write(scratch / "dump.json", text), "sacct")


def _hostile_name(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(st.text(st.characters(blacklist_categories=("Cs",),
                                                 blacklist_characters="\x00"), max_size=6),
                           min_size=1, max_size=4))  # fmt: skip
    glue = draw(st.lists(st.sampled_from(SEPARATORS), min_size=len(pieces) - 1,
                         max_size=len(pieces) - 1))  # fmt: skip
    return "".join(p + g for p, g in zip(pieces, [*glue, ""], strict=True))


@st.composite
def separated_dump(draw: st.DrawFn) -> tuple[str, list[JobRecord], DumpFormat]:
    """Real jobs with line separators in names and comments, in any delimiter, with or without a
    header (or with it repeated), times as sacct prints them or as epoch seconds."""
    delimiter = draw(st.sampled_from(DELIMITERS))
    jobs = draw(st.lists(st.sampled_from(REAL_JOBS), min_size=1, max_size=4, unique=True))
    jobs = [job._replace(name=_hostile_name(draw), comment=_hostile_name(draw)) for job in jobs]
    # a multi-character delimiter next to one of its characters in a name is ambiguous
    jobs = [job for job in jobs if not set(delimiter) & set(job.name + job.comment)]
    epoch = draw(st.booleans())
    rows = []
    for job in jobs:
        values = format_sacct_row(job, delimiter="\x00").split("\x00")
        if epoch:
            for index in (15, 16, 17):  # Submit, Start, End: SLURM_TIME_FORMAT=%s
                if values[index] != "Unknown":
                    values[index] = str(int(datetime.fromisoformat(values[index]).timestamp()))
        rows.append(delimiter.join(values))
    header = delimiter.join(SACCT_FIELDS)
    noheader = draw(st.booleans())
    if draw(st.booleans()) and rows:
        rows.insert(draw(st.integers(0, len(rows))), header)  # a concatenated dump
    text = "\n".join(rows if noheader else [header, *rows]) + "\n"
    dump = DumpFormat(delimiter=delimiter if noheader or draw(st.booleans()) else None,
                      fields=SACCT_FIELDS if noheader else None, cluster="fuzz")  # fmt: skip
    return text, jobs, dump


@budget(300)
@given(case=separated_dump())
def test_separators_in_names_keep_every_record_and_the_record(scratch: Path, case: tuple[str, list[JobRecord], DumpFormat]) -> None:  # fmt: skip
    """issue #16 finding 3, on the file path: every record comes back, its name and comment intact."""
    text, jobs, dump = case
    path = write(scratch / "dump.txt", text)
    rows = [row for _, row in read_sacct_dump(path, dump)]
    records = [row for row in rows if not isinstance(row, Skipped)]
    assert records == jobs, [row for row in rows if isinstance(row, Skipped)]
    count("separated dump: every record")


@budget(300)
@given(jobs=st.lists(st.sampled_from(REAL_JOBS), min_size=1, max_size=6),
       names=st.lists(st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))),
                      min_size=6, max_size=6))  # fmt: skip
def test_live_sacct_records_are_exact_whatever_the_names(
    jobs: list[JobRecord], names: list[str]
) -> None:
    """The live query: any text in names and comments (delimiter bytes, line breaks) is kept."""
    delimiter = sacct_delimiter()
    hostile = [job._replace(name=names[i], comment=names[-1 - i]) for i, job in enumerate(jobs)]
    text = "".join(format_sacct_row(job, delimiter=delimiter) + "\n" for job in hostile)
    rows = parse_sacct_records(text, delimiter, SACCT_FIELDS)
    assert rows.records == hostile and rows.problems == []


@budget(200)
@given(jobs=st.lists(st.sampled_from(REAL_JOBS), min_size=1, max_size=5),
       broken=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 19), cell), max_size=4))  # fmt: skip
@example(jobs=REAL_JOBS[:2], broken=[(0, 13, "FOO"), (1, 0, "1" * 5000)])
def test_root_update_never_fails_because_of_one_record(
    jobs: list[JobRecord], broken: list[tuple[int, int, str]]
) -> None:
    """Records with any field broken are skipped and named; the others are stored; exit 0."""

    def sacct(argv: Sequence[str], timeout_s: float, stdin: str | None) -> CommandResult:
        delimiter = next(a for a in argv if a.startswith("--delimiter=")).split("=", 1)[1]
        fields = next(a for a in argv if a.startswith("--format=")).split("=", 1)[1].split(",")
        rows = [format_sacct_row(job, fields, delimiter=delimiter).split(delimiter) for job in jobs]
        for row, index, value in broken:
            if row < len(rows) and index < len(fields) and delimiter not in value:
                rows[row][index] = value
        return CommandResult(tuple(argv), 0, "".join(delimiter.join(r) + "\n" for r in rows), "")

    with Store.open(":memory:") as fresh:
        result = update_from_sacct(fresh, CliBackend(SlurmCommands(sacct)),
                                   since="2026-11-29T00:00", until="2026-11-30T00:00")  # fmt: skip
        json.dumps(result.to_json(), allow_nan=False)
    intact = {job.job_id for i, job in enumerate(jobs) if all(row != i for row, _, _ in broken)}
    assert result.stored + result.already_stored >= len(intact)
    assert len(result.warnings) == sum(
        result.skipped.get(k, 0) for k in ("malformed", "unknown_state")
    )


@budget(400)
@given(text=st.one_of(field, st.integers(-(10**13), 10**13).map(str),
                      st.datetimes().map(str), st.datetimes().map(lambda d: d.isoformat())))  # fmt: skip
@example(text="9" * 11)
@example(text="253402300800")
@example(text="0001-01-01T00:00:00+14:00")
def test_timestamps_give_a_time_none_or_an_input_error(text: str) -> None:
    result = outcome(parse_timestamp, text, field="End")
    assert result is None or isinstance(result, (datetime, InputError))
