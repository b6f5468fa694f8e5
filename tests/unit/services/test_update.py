"""The update use case: the accounting functions' figures, typed, and the spool before them."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from advisor.accounting.retention import Pruned
from advisor.accounting.saved import update_from_file
from advisor.errors import InputError
from advisor.services.update import HeldBack, UpdateResult, WindowDone, update
from advisor.slurm.backend import CliBackend
from advisor.store import Store
from advisor.validate import validate
from tests.helpers.paths import TEST_DATA

CURIE = TEST_DATA / "traces" / "cea-curie-excerpt.swf"


def test_a_log_gives_the_json_the_accounting_gives(tmp_path: Path) -> None:
    with Store.open(tmp_path / "a.db") as store:
        done = update(store, CliBackend(), swf=CURIE)
    with Store.open(tmp_path / "b.db") as store:
        expected = update_from_file(store, CURIE, kind="swf")
    assert isinstance(done, UpdateResult)
    assert json.dumps(done.to_json()) == json.dumps(
        {
            **expected.to_json(),
            "spool": None,
            "pruned": {"advice": 0, "history_keys": 0, "memory_keys": 0},
        }
    )
    assert done == UpdateResult(**{f.name: getattr(expected, f.name) for f in fields(expected)},
                                spool=None, pruned=Pruned(0, 0))  # every figure the accounting gave, typed  # fmt: skip
    validate(done.to_json(), "update-output", source="test")
    assert done.stored == expected.stored > 0
    assert done.windows == () and done.held_back_by is None and done.spool is None


def test_the_spool_is_read_first_and_reported(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    with Store.open(tmp_path / "a.db") as store:
        done = update(store, CliBackend(), swf=CURIE, spool=str(spool))
    assert done.spool is not None and (done.spool.files, done.spool.rows) == (0, 0)
    assert done.to_json()["spool"] == {"files": 0, "rows": 0, "skipped_lines": 0,
                                       "refused_files": 0, "failed_files": 0,
                                       "removed_segments": 0, "waiting_users": 0,
                                       "problems": []}  # fmt: skip
    validate(done.to_json(), "update-output", source="test")


def test_an_unreadable_spool_fails_after_the_accounting_is_stored(tmp_path: Path) -> None:
    with Store.open(tmp_path / "a.db") as store:
        with pytest.raises(InputError, match="the accounting part of the update was stored"):
            update(store, CliBackend(), swf=CURIE, spool=str(tmp_path / "missing"))
        stored = store.conn.execute("SELECT COUNT(*) FROM accounting_jobs").fetchone()[0]
    assert stored > 0


def test_windows_and_a_held_record_render_as_the_schema_says() -> None:
    window = WindowDone("2026-11-29T15:00:00", "2026-11-29T16:00:00", 14, 12, 12)
    held = HeldBack("42", "RUNNING", "2026-11-29T15:00:00 – 2026-11-29T16:00:00")
    done = UpdateResult("sacct", None, None, 14, (window,), "2026-11-29T16:00:00", held,
                        {"not_finished": 2}, (), 12, 0, 3, 1, 0, {"COMPLETED": 12}, None,
                        Pruned(0, 0))  # fmt: skip
    data = done.to_json()
    validate(data, "update-output", source="test")
    assert data["windows"] == [{"start": "2026-11-29T15:00:00", "end": "2026-11-29T16:00:00",
                                "records": 14, "final": 12, "stored": 12}]  # fmt: skip
    assert data["held_back_by"] == {"job_id": "42", "state": "RUNNING",
                                    "window": "2026-11-29T15:00:00 – 2026-11-29T16:00:00"}  # fmt: skip
