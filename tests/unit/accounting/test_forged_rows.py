"""A job name cannot forge other users' rows in a text dump (issue 31, N9).

The review's reproducer: alice's five 10-hour runs of ``sim``, and mallory's job named ``x``, a
line break, 50 whole rows of alice running ``sim`` for one second, a line break and ``y``.
``advisor update --sacct-file`` exited 0 with 55 jobs of alice stored and her history limit
moved from 15 h to 61 min.  Its variants: the forged rows in a comment that is the dump's last
field (nothing fails to join there), a forged header that renames the fields of every real row
after it, and other delimiters.  The dump is refused (nothing stored) unless the names are
vouched for; the live query and ``sacct --json`` read such names whole.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.accounting.sacct_file import format_sacct_row
from advisor.cli import main
from advisor.history.lookup import history_limit
from advisor.slurm.parsers import SACCT_FIELDS
from advisor.slurm.records import JobRecord
from advisor.store import Store
from tests.helpers.captures import capture
from tests.helpers.hostile_jobs import job
from tests.helpers.jobs import earned

ALICE = [
    job(n, user="alice", name="sim", elapsed_s=36_000, timelimit_s=54_000) for n in range(1, 6)
]


def _forged(delimiter: str, fields: tuple[str, ...] = SACCT_FIELDS) -> str:
    rows = [
        job(500 + n, user="alice", name="sim", elapsed_s=1, timelimit_s=54_000) for n in range(50)
    ]
    return "\n".join(format_sacct_row(r, fields, delimiter=delimiter) for r in rows)


def _dump(path: Path, jobs: list[JobRecord], delimiter: str, fields: tuple[str, ...]) -> Path:
    rows = [format_sacct_row(j, fields, delimiter=delimiter) for j in jobs]
    path.write_text("\n".join([delimiter.join(fields), *rows]) + "\n")
    return path


def _update(cache: Path, dump: Path, *options: str) -> int:
    return main(["--db", str(cache), "update", "--sacct-file", str(dump), *options])


def _alice(cache: Path) -> tuple[int, tuple[int, str] | None]:
    """Alice's jobs stored, and her limit for sim (asking 15 h) once cpu's kill budget earned one."""
    with Store.open(cache) as store:
        earned(store, "cpu")
        jobs = store.query("SELECT COUNT(*) AS n FROM accounting_jobs WHERE user = 'alice'")
        return int(jobs[0]["n"]), history_limit(store, "alice", "sim", "cpu", request_s=54_000)


@pytest.mark.parametrize("delimiter", ["|", "\t", "~~"])
def test_a_name_holding_rows_refuses_the_dump_and_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], delimiter: str
) -> None:
    mallory = job(100, name=f"x\n{_forged(delimiter)}\ny")
    dump = _dump(tmp_path / "dump.txt", [*ALICE, mallory], delimiter, SACCT_FIELDS)
    assert _update(tmp_path / "c.db", dump) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "line 7: a line break in a job name or comment" in err[0]
    assert "sacct --json" in err[0] and "--trust-names" in err[0]
    assert _alice(tmp_path / "c.db") == (0, None)
    # her limit stays hers: the same jobs without the forgery give at least her 10 h runs (the
    # forgery's 1 s runs: about an hour)
    clean = _dump(tmp_path / "clean.txt", [*ALICE, job(100)], delimiter, SACCT_FIELDS)
    assert _update(tmp_path / "clean.db", clean) == 0
    stored, limit = _alice(tmp_path / "clean.db")
    assert stored == 5 and limit is not None and 36_000 < limit[0] <= 54_000


def test_rows_forged_in_a_last_text_field_refuse_the_dump(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fields = tuple(f for f in SACCT_FIELDS if f != "Cluster")  # Comment last: no join fails
    mallory = job(100, comment=f"c\n{_forged('|', fields)}")
    dump = _dump(tmp_path / "dump.txt", [*ALICE, mallory], "|", fields)
    assert _update(tmp_path / "c.db", dump, "--cluster", "advisor") == 2
    assert "the last field, Comment, is text users write" in capsys.readouterr().err
    assert _alice(tmp_path / "c.db") == (0, None)


def test_a_forged_header_cannot_rename_the_fields_of_the_rows_after_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    swapped = "|".join(f if f not in ("User", "Account") else {"User": "Account",
                       "Account": "User"}[f] for f in SACCT_FIELDS)  # fmt: skip
    mallory = job(100, name=f"x\n{swapped}\ny")
    dump = _dump(tmp_path / "dump.txt", [mallory, *ALICE], "|", SACCT_FIELDS)
    assert _update(tmp_path / "c.db", dump) == 2
    assert "a line break in a job name or comment" in capsys.readouterr().err
    assert _alice(tmp_path / "c.db") == (0, None)


def test_trusted_names_and_json_dumps_are_read(tmp_path: Path) -> None:
    mallory = job(100, name=f"x\n{_forged('|')}\ny")
    dump = _dump(tmp_path / "dump.txt", [*ALICE, mallory], "|", SACCT_FIELDS)
    assert _update(tmp_path / "c.db", dump, "--trust-names") == 0  # the operator's choice
    assert _alice(tmp_path / "c.db")[0] == 55
    document = json.loads(capture("sacct.json", "22.05").body)  # sacct --json escapes names
    first = document["jobs"][0]
    first["name"] = f"x\n{_forged('|')}\ny"
    document["jobs"] = [first]
    as_json = tmp_path / "dump.json"
    as_json.write_text(json.dumps(document))
    assert _update(tmp_path / "j.db", as_json) == 0
    with Store.open(tmp_path / "j.db") as store:
        (row,) = store.query("SELECT name FROM accounting_jobs")
    assert row["name"] == first["name"]
