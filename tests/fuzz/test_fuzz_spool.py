"""Hostile advice spools: every user writes their own files, and root's update reads them all.

A line is advice or it is skipped: parse_line never raises, and ingestion stores only rows
whose every field has its type (what advice-spool.json says), attributed to the owner of the
uid's one canonical directory or file.  The names in the spool are hostile too: any text, digits
of every script, zero padding, numbers past 32 bits, links, FIFOs, directories where files
belong and files where directories belong, under any owner.  Whatever they are, the update
returns (it never raises for what a user wrote), stores each good line of a canonical file
once, and nothing else.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from advisor.accounting.retention import advice_time
from advisor.accounting.spool import ingest_spool
from advisor.spool import legacy_path, parse_line, segment_of, uid_of, user_dir
from advisor.store import Store
from advisor.validate import validate
from tests.helpers.hostile import HOSTILE_STRINGS, budget, count, mutated_json, write

pytestmark = pytest.mark.fuzz

SCHEMA = json.loads((Path(__file__).parents[2] / "schemas" / "advice-spool.json").read_text())
ME = pwd.getpwuid(os.getuid()).pw_name
UID = os.getuid()
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
DAY = segment_of(NOW.isoformat())
#: Integers a float cannot hold and SQLite cannot store, in every numeric field.
HUGE = (10**400, -(10**400), 2**63, 2**64, 2**1024, -(2**1024))
NUMERIC = ("predicted_s", "quantile", "p50_s", "p90_s", "p95_s", "limit_s", "job_id", "input_bytes")


@st.composite
def huge_numbers(draw: st.DrawFn) -> str:
    """The schema's example with numeric fields set to integers no float holds."""
    doc = dict(draw(st.sampled_from(SCHEMA["examples"])))
    for name in draw(st.lists(st.sampled_from(NUMERIC), min_size=1, max_size=3)):
        doc[name] = draw(st.sampled_from(HUGE))
    return json.dumps(doc)


lines = st.one_of(
    mutated_json(SCHEMA["examples"], keys=("job_id", "limit_s", "p95_s", "task", "argv")),
    huge_numbers(),
    st.sampled_from(HOSTILE_STRINGS),
    st.binary(max_size=200).map(lambda b: b.decode("utf-8", "surrogateescape")),
)


@budget(300)
@given(line=lines)
@example(line=json.dumps({**SCHEMA["examples"][0], "predicted_s": 10**400}))
def test_a_line_is_advice_or_skipped(line: str) -> None:
    parsed = parse_line(line)
    count("parse_line: skipped" if parsed is None else "parse_line: advice")
    if parsed is not None:  # what is taken is what the schema allows
        validate({k: v for k, v in parsed.items() if v is not None or k in ("policy",)},
                 "advice-spool", source="line")  # fmt: skip
        for value in (*parsed["argv"], *(v for v in parsed.values() if isinstance(v, str))):
            value.encode("utf-8")  # storable: no lone surrogates reach SQLite


def _fresh(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    folder.chmod(0o755)
    return folder


@budget(60)
@given(contents=st.lists(lines, max_size=8), tail=st.binary(max_size=40))
@example(contents=[json.dumps({**SCHEMA["examples"][0], "created_at": ""})], tail=b"")  # no time
def test_ingestion_stores_the_good_lines_of_any_file_as_the_owners(
    scratch: Path, contents: list[str], tail: bytes
) -> None:
    folder = _fresh(scratch / "spool")
    mine = Path(user_dir(str(folder), UID))
    mine.mkdir(mode=0o700)
    body = "".join(f"{line}\n" for line in contents if "\n" not in line)
    write(mine / DAY, body.encode("utf-8", "surrogateescape") + tail.replace(b"\n", b""))
    # a line is stored when it parses and holds a time to keep (accounting.retention)
    parsed = [parse_line(line) for line in contents if "\n" not in line]
    good = sum(1 for p in parsed if p is not None and advice_time(str(p["created_at"]), NOW))
    with Store.open(":memory:") as store:
        counts = ingest_spool(store, str(folder), now=NOW)
        count(f"ingest_spool: {'stored' if counts['rows'] else 'nothing stored'}")
        assert counts["rows"] == good and counts["failed_files"] == 0
        users = {row["user"] for row in store.query("SELECT user FROM advice")}
        assert users <= {ME}
        assert ingest_spool(store, str(folder), now=NOW)["rows"] == 0  # the tail is not a line yet


#: Names as users (and aliases) would choose them: uids in every spelling, days, junk.
_digits = st.sampled_from(["0", "00", "٠", "۰", "०", "０", "𝟎"])
uid_names = st.one_of(
    st.just(str(UID)),
    st.integers(0, 2**40).map(str),
    st.tuples(_digits, st.integers(0, 99999)).map(lambda p: p[0] + str(p[1])),
    st.integers(0, 99999).map(lambda n: "".join(chr(0x660 + int(d)) for d in str(n))),
    st.sampled_from(["+1", "-1", " 1", "1 ", "1\n", "1e3", "0x10", "", ".", ".."]),
    st.text(alphabet=st.characters(categories=["Nd"]), min_size=1, max_size=6),
)
day_names = st.one_of(
    st.just(DAY),
    st.dates().map(lambda d: f"{d.isoformat()}.jsonl"),
    st.sampled_from(
        [
            "2026-02-31.jsonl",
            "2026-13-01.jsonl",
            "0000-01-01.jsonl",
            "２０２６-12-01.jsonl",
            "2026-12-01.jsonl ",
            "2026-12-01",
            "x.jsonl",
        ]
    ),
    st.text(max_size=12).filter(
        lambda s: s not in ("", ".", "..") and "/" not in s and "\x00" not in s
    ),
)
kinds = st.sampled_from(["file", "file", "file", "dir", "link", "fifo"])
owners = st.sampled_from([UID, UID + 4242, 65534])


@st.composite
def spool_trees(draw: st.DrawFn) -> list[tuple[str, str, int, str, str, int]]:
    """Entries (top name, top kind, top owner, inner name, inner kind, inner owner)."""
    return draw(
        st.lists(
            st.tuples(
                st.one_of(uid_names, uid_names.map(lambda n: f"{n}.jsonl")), kinds, owners,
                day_names, kinds, owners,
            ),
            max_size=6,
        )
    )  # fmt: skip


GOOD = json.dumps(SCHEMA["examples"][0]) + "\n"


def _make(path: Path, kind: str, owner: int) -> None:
    if kind == "dir":
        path.mkdir(mode=0o700)
    elif kind == "link":
        os.symlink("/etc", path)
        return
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_text(GOOD)
    if os.getuid() == 0:
        os.chown(path, owner, -1, follow_symlinks=False)


@budget(200)
@given(tree=spool_trees())
@example(
    tree=[
        (f"0{UID}.jsonl", "file", UID, DAY, "file", UID),
        (str(UID), "dir", UID, DAY, "file", UID),
    ]
)
@example(
    tree=[(str(UID), "file", UID, DAY, "file", UID), (f"{UID}.jsonl", "dir", UID, DAY, "file", UID)]
)
def test_any_names_in_the_spool_give_each_canonical_files_lines_once(
    scratch: Path, tree: list[tuple[str, str, int, str, str, int]]
) -> None:
    folder = _fresh(scratch / "names")
    expected = 0
    for top, top_kind, top_owner, inner, inner_kind, inner_owner in tree:
        if not top or "/" in top or "\x00" in top or top in (".", ".."):
            continue
        path = folder / top
        if os.path.lexists(path):
            continue
        try:
            _make(path, top_kind, top_owner)
        except (OSError, ValueError):  # a name the file system refuses
            continue
        legacy = top.endswith(".jsonl")
        uid = uid_of(top[: -len(".jsonl")] if legacy else top)
        if legacy and top_kind == "file" and uid == top_owner:
            expected += 1
        if top_kind == "dir":
            try:
                _make(path / inner, inner_kind, inner_owner)
            except (OSError, ValueError):
                continue
            good = not legacy and uid == top_owner == inner_owner and inner_kind == "file"
            expected += good and _is_day(inner)
    with Store.open(":memory:") as store:
        counts = ingest_spool(store, str(folder), now=NOW)
        count(f"ingest_spool (names): {'stored' if counts['rows'] else 'nothing stored'}")
        assert counts["failed_files"] == 0, counts["problems"]
        assert counts["rows"] == expected, (counts, tree)
        assert all("\n" not in p for p in counts["problems"])
        owners_seen = {row["user"] for row in store.query("SELECT user FROM advice")}
        names = {pwd.getpwuid(u).pw_name if _known(u) else str(u) for u in (UID, UID + 4242, 65534)}
        assert owners_seen <= names
        again = ingest_spool(store, str(folder), now=NOW)
        assert again["rows"] == 0  # once


def _is_day(name: str) -> bool:
    try:
        datetime.strptime(name, "%Y-%m-%d.jsonl")
    except ValueError:
        return False
    return name.isascii() and len(name) == len("2026-12-01.jsonl")


def _known(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def test_a_megabyte_line_is_skipped_not_stored(tmp_path: Path) -> None:
    folder = tmp_path / "spool"
    folder.mkdir()
    huge = json.dumps({**SCHEMA["examples"][0], "argv": ["x" * (2 << 20)]})
    write(
        Path(legacy_path(str(folder), UID)), huge + "\n" + json.dumps(SCHEMA["examples"][0]) + "\n"
    )
    with Store.open(":memory:") as store:
        counts = ingest_spool(store, str(folder))
        assert (counts["files"], counts["rows"], counts["skipped_lines"]) == (1, 1, 1)


def test_a_line_without_end_longer_than_any_advice_does_not_stop_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "spool"
    (folder / str(UID)).mkdir(parents=True)
    write(folder / str(UID) / DAY, "x" * (3 << 20))  # no newline: never a line
    with Store.open(":memory:") as store:
        first = ingest_spool(store, str(folder), now=NOW)
        assert first["rows"] == 0 and first["skipped_lines"] == 1
        with (folder / str(UID) / DAY).open("a") as out:
            out.write("\n" + GOOD)
        second = ingest_spool(store, str(folder), now=NOW)
        assert (second["rows"], second["skipped_lines"]) == (1, 0)  # the rest of it was empty


def test_a_missing_spool_is_one_input_error(tmp_path: Path) -> None:
    from advisor.errors import InputError

    with Store.open(":memory:") as store, pytest.raises(InputError, match="cannot read the spool"):
        ingest_spool(store, str(tmp_path / "nowhere"))
