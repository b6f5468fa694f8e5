"""Hostile advice spool files: every user writes their own, and root's update reads them all.

A line is advice or it is skipped: parse_line never raises, and ingestion stores only rows
whose every field has its type (what advice-spool.json says), attributed to the file's owner.
"""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.accounting.spool import ingest_spool
from advisor.spool import parse_line, spool_path
from advisor.store import Store
from advisor.validate import validate
from tests.fuzz.hostile import HOSTILE_STRINGS, budget, count, mutated_json, write

pytestmark = pytest.mark.fuzz

SCHEMA = json.loads((Path(__file__).parents[2] / "schemas" / "advice-spool.json").read_text())
ME = pwd.getpwuid(os.getuid()).pw_name

lines = st.one_of(
    mutated_json(SCHEMA["examples"], keys=("job_id", "limit_s", "p95_s", "task", "argv")),
    st.sampled_from(HOSTILE_STRINGS),
    st.binary(max_size=200).map(lambda b: b.decode("utf-8", "surrogateescape")),
)


@budget(300)
@given(line=lines)
def test_a_line_is_advice_or_skipped(line: str) -> None:
    parsed = parse_line(line)
    count("parse_line: skipped" if parsed is None else "parse_line: advice")
    if parsed is not None:  # what is taken is what the schema allows
        validate({k: v for k, v in parsed.items() if v is not None or k in ("policy",)},
                 "advice-spool", source="line")  # fmt: skip
        for value in (*parsed["argv"], *(v for v in parsed.values() if isinstance(v, str))):
            value.encode("utf-8")  # storable: no lone surrogates reach SQLite


@budget(60)
@given(contents=st.lists(lines, max_size=8), tail=st.binary(max_size=40))
def test_ingestion_stores_the_good_lines_of_any_file_as_the_owners(
    scratch: Path, contents: list[str], tail: bytes
) -> None:
    folder = scratch / "spool"
    folder.mkdir(exist_ok=True)
    path = Path(spool_path(str(folder), os.getuid()))
    body = "".join(f"{line}\n" for line in contents if "\n" not in line)
    write(path, body.encode("utf-8", "surrogateescape") + tail.replace(b"\n", b""))
    good = sum(1 for line in contents if "\n" not in line and parse_line(line) is not None)
    with Store.open(":memory:") as store:
        counts = ingest_spool(store, str(folder))
        count(f"ingest_spool: {'stored' if counts['rows'] else 'nothing stored'}")
        assert counts["rows"] == good
        users = {row["user"] for row in store.query("SELECT user FROM advice")}
        assert users <= {ME}
        assert ingest_spool(store, str(folder))["rows"] == 0  # the tail is not a line yet


def test_a_megabyte_line_is_skipped_not_stored(tmp_path: Path) -> None:
    folder = tmp_path / "spool"
    folder.mkdir()
    huge = json.dumps({**SCHEMA["examples"][0], "argv": ["x" * (2 << 20)]})
    write(Path(spool_path(str(folder), os.getuid())), huge + "\n" + json.dumps(SCHEMA["examples"][0]) + "\n")
    with Store.open(":memory:") as store:
        assert ingest_spool(store, str(folder)) == {
            "files": 1, "rows": 1, "skipped_lines": 1, "refused_files": 0,
        }  # fmt: skip


def test_a_missing_spool_is_one_input_error(tmp_path: Path) -> None:
    from advisor.errors import InputError

    with Store.open(":memory:") as store, pytest.raises(InputError, match="cannot read the spool"):
        ingest_spool(store, str(tmp_path / "nowhere"))
