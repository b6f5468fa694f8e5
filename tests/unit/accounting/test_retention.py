"""What one user can make root's cache keep: bounded in time and per day (issue 31, N6 and N7).

Before, spool lines became advice rows for ever (a line dated 9999 stayed in every published
copy), 16 MiB of lines added 150,000 rows at every update, the guard and accounting scanned the
whole advice table for each job id, and every distinct job name kept a history key for ever
(a million of them made ``advisor export`` take 28 s and 983 MB).  Real files, a real cache,
the update's own functions.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from advisor.accounting.ingest import Ingestor
from advisor.accounting.retention import Retention, advice_time, prune
from advisor.accounting.spool import ingest_spool
from advisor.history.cache import load_key_states, save_key_states
from advisor.history.keys import HistoryKey
from advisor.history.lookup import export_limits
from advisor.history.policy import KeyState
from advisor.services.update import update
from advisor.slurm.backend import CliBackend
from advisor.spool import user_dir
from advisor.store import Store
from advisor.store.advice import (
    Advice,
    GuardedRequest,
    applied_limits,
    guarded_requests,
    record_advice,
)
from advisor.store.memory_models import KeyRuns, MemoryKey, all_keys, save_keys
from tests.helpers.jobs import earned, finished
from tests.helpers.paths import TEST_DATA

NOW = datetime(2026, 12, 4, 12, tzinfo=UTC)
UID = os.getuid()
CURIE = TEST_DATA / "traces" / "cea-curie-excerpt.swf"


def _line(job_id: int, created_at: str, argv: tuple[str, ...] = ("-J", "sim")) -> str:
    return json.dumps({"created_at": created_at, "argv": list(argv), "policy": "history",
                       "outcome": "submitted", "task": "sim", "job_id": job_id}) + "\n"  # fmt: skip


def _spool(tmp_path: Path, *lines: str, day: str = "2026-12-04") -> Path:
    folder = tmp_path / "spool"
    mine = Path(user_dir(str(folder), UID))
    mine.mkdir(parents=True, mode=0o700)
    folder.chmod(0o755)
    segment = mine / f"{day}.jsonl"
    segment.write_text("".join(lines))
    segment.chmod(0o600)
    return folder


def _created(store: Store) -> dict[int, str]:
    return {int(r["job_id"]): str(r["created_at"]) for r in store.query("SELECT * FROM advice")}


def test_a_line_is_dated_no_later_than_its_ingestion_and_no_time_is_no_line(
    tmp_path: Path,
) -> None:
    spool = _spool(
        tmp_path,
        _line(1, "9999-12-31"),  # the review's: in the copy's 8-day window for ever
        _line(2, "2026-12-04T11:00:00+00:00"),
        _line(3, "2026-12-04T13:00:00+01:00"),  # the same time, another offset
        _line(4, "2026-12-05T10:00:00"),  # tomorrow, no offset: UTC
        _line(5, "garbage, any 40 characters"),
        _line(6, "2026-01-01T00:00:00+00:00"),  # older than the retention
        _line(7, "2026-12-04 zzz"),
    )
    with Store.open(tmp_path / "c.db") as store:
        counts = ingest_spool(store, str(spool), now=NOW)
        created = _created(store)
    assert created == {1: "2026-12-04T12:00:00+00:00", 2: "2026-12-04T11:00:00+00:00",
                       3: "2026-12-04T12:00:00+00:00", 4: "2026-12-04T12:00:00+00:00"}  # fmt: skip
    assert counts["skipped_lines"] == 3
    assert advice_time("2026-12-04T12:00:00+14:00", NOW) == "2026-12-03T22:00:00+00:00"
    assert advice_time("0001-01-01T00:00:00+01:00", NOW) is None  # no OverflowError


def test_one_users_rows_per_day_stop_at_the_quota_whatever_they_write(tmp_path: Path) -> None:
    """The review's flood: three updates of 16 MiB of lines each added 150,000 rows each."""
    spool = _spool(tmp_path)
    segment = Path(user_dir(str(spool), UID)) / "2026-12-04.jsonl"
    retention = Retention(user_day_rows=5_000)
    problems: list[str] = []
    with Store.open(tmp_path / "c.db") as store:
        for run in range(3):
            with segment.open("a") as out:  # 20,000 more lines before each update
                out.writelines(_line(run * 20_000 + n, "2026-12-04T10:00:00+00:00", ("x" * 90,))
                               for n in range(20_000))  # fmt: skip
            problems += ingest_spool(store, str(spool), now=NOW, retention=retention)["problems"]
        rows = store.query("SELECT COUNT(*) AS n FROM advice")[0]["n"]
    assert rows == 5_000
    assert sum("lines over the daily quota (5000 rows" in p for p in problems) == 3


def test_the_update_deletes_advice_past_the_retention_and_any_dated_ahead(tmp_path: Path) -> None:
    with Store.open(tmp_path / "c.db") as store:
        for job_id, created in ((1, NOW - timedelta(days=200)), (2, NOW - timedelta(days=100)),
                                (3, NOW), (4, NOW + timedelta(days=3))):  # fmt: skip
            record_advice(store, Advice(user="alice", policy="history", argv=["x"],
                                        outcome="submitted", job_id=job_id),
                          created_at=created.isoformat())  # fmt: skip
        record_advice(store, Advice(user="eve", policy="history", argv=[], outcome="submitted",
                                    job_id=5), created_at="9999-12-31")  # fmt: skip
        done = update(store, CliBackend(), swf=CURIE, now=lambda: NOW)
        assert sorted(_created(store)) == [2, 3]
        assert done.pruned.advice == 3 and done.to_json()["pruned"]["advice"] == 3
        assert prune(store, Retention(advice_days=50), now=NOW).advice == 1


def test_stale_history_keys_go_and_each_user_keeps_the_newest_names(tmp_path: Path) -> None:
    with Store.open(tmp_path / "c.db") as store:
        state = KeyState(((60.0, False),) * 5, 5, 0)
        for number in range(300):  # one user's many names, one per sample
            save_key_states(
                store, {HistoryKey("user+name", "mallory", f"run_S{number:04d}"): state}
            )
            store.conn.execute(
                "UPDATE history_keys SET updated_at = ? WHERE name = ?",
                ((NOW - timedelta(minutes=300 - number)).isoformat(), f"run_S{number:04d}"),
            )
        old = HistoryKey("user+name", "alice", "sim")
        save_key_states(store, {old: state, HistoryKey("user", "alice"): state})
        store.conn.execute("UPDATE history_keys SET updated_at = ? WHERE user = 'alice'",
                           ((NOW - timedelta(days=400)).isoformat(),))  # fmt: skip
        pruned = prune(store, Retention(user_names=100), now=NOW)
        names = [r["name"] for r in store.query(
            "SELECT name FROM history_keys WHERE user = 'mallory' ORDER BY name")]  # fmt: skip
        assert pruned.history_keys == 200 + 2
        assert names == [f"run_S{n:04d}" for n in range(200, 300)]  # the newest 100
        assert load_key_states(store, [old]) == {}


def test_users_memory_keys_are_pruned_as_their_history_keys_and_shared_ones_stay(
    tmp_path: Path,
) -> None:
    """Every job name of a user is a memory key too (issue 33 on issue 31's N7): same bounds."""
    runs = KeyRuns(((1000.0, None, False),) * 3, 3)
    with Store.open(tmp_path / "c.db") as store:
        for number in range(300):
            save_keys(store, {MemoryKey("mallory", f"run_S{number:04d}"): runs})
            store.conn.execute(
                "UPDATE memory_models SET updated_at = ? WHERE task = ?",
                ((NOW - timedelta(minutes=300 - number)).isoformat(), f"run_S{number:04d}"),
            )
        save_keys(store, {MemoryKey("alice", "sim"): runs, MemoryKey("", "align"): runs})
        store.conn.execute("UPDATE memory_models SET updated_at = ? WHERE task IN ('sim', 'align')",
                           ((NOW - timedelta(days=400)).isoformat(),))  # fmt: skip
        pruned = prune(store, Retention(user_names=100), now=NOW)
        left = all_keys(store)
    assert pruned.memory_keys == 200 + 1 and pruned.to_json()["memory_keys"] == 201
    assert sorted(key.task for key in left if key.user == "mallory") == [
        f"run_S{n:04d}" for n in range(200, 300)
    ]  # the newest 100
    assert MemoryKey("alice", "sim") not in left  # stale
    assert MemoryKey("", "align") in left  # the administrator's shared key, however old


def test_the_export_reads_each_users_most_used_names_only(tmp_path: Path) -> None:
    """A million keys took 28 s and 983 MB in export: now SQL picks what the export keeps."""
    with Store.open(tmp_path / "c.db") as store:
        keys = {
            HistoryKey("user+name", "mallory", f"sample-{n}"): KeyState(
                ((100.0, False),) * 5, 5 + n % 7, 0
            )
            for n in range(3000)
        }
        keys[HistoryKey("user+name", "mallory", "few")] = KeyState(((9.0, False),) * 4, 40, 0)
        keys[HistoryKey("user+name", "mallory", "n" * 1025)] = KeyState(((9.0, False),) * 9, 9, 0)
        keys[HistoryKey("user+name", "alice", "sim")] = KeyState(((600.0, False),) * 6, 6, 0)
        keys[HistoryKey("user", "mallory")] = KeyState(((100.0, False),) * 5, 5, 0)
        save_key_states(store, keys)
        earned(store, "cpu")  # a partition whose budget gives the keys a margin
        found = export_limits(store, names_per_user=512, max_name_bytes=1024, skip={"sample-0"})
    names = [r["name"] for r in found.rows if r["kind"] == "user+name" and r["user"] == "mallory"]
    most_used = sorted((k.name for k in keys if k.user == "mallory" and k.name.startswith("s")
                        and k.name != "sample-0"),
                       key=lambda n: (-keys[HistoryKey("user+name", "mallory", n)].completed, n))  # fmt: skip
    assert sorted(names) == sorted(most_used[:512])  # "few" has 4 runs: it proposes nothing
    assert (found.over_cap, found.unusable) == (2999 - 512, 1)
    assert {(r["kind"], r["user"]) for r in found.rows} >= {
        ("user+name", "alice"),
        ("user", "mallory"),
    }


def test_advice_is_found_by_job_id_through_an_index(tmp_path: Path) -> None:
    """Both per-job lookups scanned the whole table: 0.73 s per call at 5 M rows."""
    with Store.open(tmp_path / "c.db") as store:
        for job_id in range(50):
            record_advice(store, Advice(user="u", policy="guarded", argv=[], outcome="submitted",
                                        job_id=job_id, limit_s=60, request_s=120, cluster="c"))  # fmt: skip
        seen: list[str] = []
        store.conn.set_trace_callback(seen.append)
        assert applied_limits(store, [3])
        assert guarded_requests(store, [(3, "u")], "c") == {3: GuardedRequest(60, 120)}
        store.conn.set_trace_callback(None)
        lookups = [sql for sql in seen if "FROM advice" in sql]
        assert len(lookups) == 2
        for sql in lookups:
            plan = " ".join(str(row[-1]) for row in store.conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
            # applied_limits by advice_job_id, guarded_requests by (cluster, job_id): advice_job
            assert "SCAN advice" not in plan and "USING INDEX advice_job" in plan, plan


def test_ingested_jobs_keep_their_history_keys_fresh(tmp_path: Path) -> None:
    with Store.open(tmp_path / "c.db") as store:
        with store.write():
            Ingestor(store).add([finished(n, 600, name="sim") for n in range(1, 7)])
        assert prune(store, now=datetime.now(UTC)).history_keys == 0
        assert store.query("SELECT COUNT(*) AS n FROM history_keys")[0]["n"] == 3
