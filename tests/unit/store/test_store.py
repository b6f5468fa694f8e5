from __future__ import annotations

import json
import multiprocessing
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.errors import CacheError
from advisor.slurm.parsers import parse_nodes, parse_partitions
from advisor.store import SCHEMA_VERSION, Store, default_db_path
from advisor.store.accounting import get_watermark, set_watermark
from advisor.store.advice import Advice, record_advice
from advisor.store.benchmarks import BenchRun, Measurement, latest_scores, save_bench_run
from advisor.store.cluster import load_nodes, load_partitions, save_cluster
from advisor.store.observations import Observation, add_observations, load_observations
from tests.helpers.captures import capture


def test_default_path_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ADVISOR_DB", str(tmp_path / "env.db"))
    assert default_db_path("explicit.db") == Path("explicit.db")
    assert default_db_path() == tmp_path / "env.db"
    monkeypatch.delenv("ADVISOR_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_db_path() == tmp_path / "xdg" / "slurm-advisor" / "cache.db"


def test_the_schema_version_is_the_number_of_migrations() -> None:
    """SCHEMA_VERSION is written out (the submit path does not load the migrations): one each."""
    from advisor.store.migrations import MIGRATIONS

    assert len(MIGRATIONS) == SCHEMA_VERSION, "a new migration: raise SCHEMA_VERSION with it"


def test_created_on_first_use_in_wal_mode(cache_path: Path) -> None:
    with Store.open(cache_path) as store:
        assert store.version == SCHEMA_VERSION
        assert {"observations", "task_models", "accounting_jobs", "advice"} <= set(
            store.db.table_names()
        )
        mode = store.conn.execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
    with Store.open(cache_path) as again:  # reopening migrates nothing and keeps the version
        assert again.version == SCHEMA_VERSION


def test_newer_schema_is_refused(cache_path: Path) -> None:
    Store.open(cache_path).close()
    conn = sqlite3.connect(cache_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(CacheError, match="newer than this advisor"):
        Store.open(cache_path)


def test_foreign_database_is_refused(cache_path: Path) -> None:
    conn = sqlite3.connect(cache_path)
    conn.execute("CREATE TABLE users (id INTEGER)")
    conn.close()
    with pytest.raises(CacheError, match="not a slurm-advisor cache"):
        Store.open(cache_path)


def test_garbage_file_is_a_cache_error(cache_path: Path) -> None:
    cache_path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(CacheError, match="cache"):
        Store.open(cache_path)


def test_readonly_open_of_missing_cache_says_what_to_do(cache_path: Path) -> None:
    with pytest.raises(CacheError, match="does not exist"):
        Store.open(cache_path, readonly=True)


def test_write_rolls_back_everything_on_error(cache_path: Path) -> None:
    store = Store.open(cache_path)
    obs = Observation(source="t", source_key="1", task="a", runtime_s=1.0)
    with pytest.raises(RuntimeError), store.write():
        add_observations(store, [obs])  # nested: joins the outer transaction
        set_watermark(store, "sacct:x", "2026-01-01T00:00:00")
        raise RuntimeError("crash in the middle")
    assert load_observations(store) == []
    assert get_watermark(store, "sacct:x") is None


def test_reimport_is_idempotent_and_updates(cache_path: Path) -> None:
    store = Store.open(cache_path)
    add_observations(store, [Observation("s", "k1", "a", 1.0), Observation("s", "k2", "a", 2.0)])
    add_observations(store, [Observation("s", "k1", "a", 5.0)])
    assert sorted(o.runtime_s for o in load_observations(store, "a")) == [2.0, 5.0]


def test_constraints_reject_negative_runtime(cache_path: Path) -> None:
    store = Store.open(cache_path)
    with pytest.raises(sqlite3.IntegrityError):
        add_observations(store, [Observation("s", "k", "a", -1.0)])
    assert load_observations(store) == []


def test_cluster_snapshot_round_trips_real_scontrol_output(cache_path: Path) -> None:
    partitions = parse_partitions(capture("scontrol_show_partition.txt").body)
    nodes = parse_nodes(capture("scontrol_show_node.txt").body)
    store = Store.open(cache_path)
    save_cluster(store, partitions, nodes)
    save_cluster(store, partitions, nodes)  # a second snapshot replaces the first
    assert load_partitions(store) == sorted(partitions, key=lambda p: p.name)
    assert load_nodes(store) == sorted(nodes, key=lambda n: n.name)


def test_bench_history_keeps_runs_and_latest_wins(cache_path: Path) -> None:
    store = Store.open(cache_path)
    for value, when in ((100.0, "2026-01-01T00:00:00"), (120.0, "2026-02-01T00:00:00")):
        save_bench_run(
            store,
            BenchRun(
                "c1",
                "builtin",
                "bench",
                {"cpu_single_events_s": Measurement(value, 2.0)},
                measured_at=when,
            ),
        )
    assert latest_scores(store) == {"c1": {"cpu_single_events_s": 120.0}}
    assert store.db.table("bench_runs").count == 2


def test_advice_rows_keep_argv_verbatim(cache_path: Path) -> None:
    store = Store.open(cache_path)
    argv = ["--comment", "a'b; rm -rf / $(x)\nnext", "job.sh"]
    row_id = record_advice(store, Advice(user="u", policy="fill", argv=argv, outcome="dry-run"))
    stored = store.query("SELECT argv FROM advice WHERE id = ?", (row_id,))[0]["argv"]
    assert json.loads(stored) == argv


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(min_size=1, max_size=30), st.floats(min_value=0, max_value=1e9)),
        max_size=20,
    )
)
def test_observations_round_trip(rows: list[tuple[str, float]]) -> None:
    store = Store.open(":memory:")
    obs = [Observation("h", str(i), task, runtime) for i, (task, runtime) in enumerate(rows)]
    add_observations(store, obs)
    assert load_observations(store) == obs


# --- readers never block on, nor see half of, a writer ----------------------------------------


def _hold_write_transaction(
    path: str,
    started: multiprocessing.synchronize.Event,
    release: multiprocessing.synchronize.Event,
) -> None:
    store = Store.open(path)
    with store.write():
        add_observations(store, [Observation("w", str(i), "big", float(i)) for i in range(1000)])
        started.set()
        release.wait(30)


def test_reader_is_not_blocked_by_an_open_write_transaction(cache_path: Path) -> None:
    writer = Store.open(cache_path)
    add_observations(writer, [Observation("w", "before", "big", 1.0)])
    ctx = multiprocessing.get_context("spawn")
    started, release = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_hold_write_transaction, args=(str(cache_path), started, release))
    proc.start()
    try:
        assert started.wait(60), "writer did not start"
        # busy_timeout 0: if the reader had to wait for the writer, this would raise at once.
        reader = Store.open(cache_path, readonly=True, busy_timeout_s=0)
        seen = reader.query("SELECT count(*) AS n FROM observations")[0]["n"]
        assert seen == 1  # the committed state, not the writer's half-done work
        with pytest.raises(CacheError, match="read-only"), reader.write():
            pass
        reader.close()
    finally:
        release.set()
        proc.join(60)
    assert proc.exitcode == 0
    after = Store.open(cache_path, readonly=True)
    assert after.query("SELECT count(*) AS n FROM observations")[0]["n"] == 1001
    assert after.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_second_writer_waits_then_succeeds(cache_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    started, release = ctx.Event(), ctx.Event()
    Store.open(cache_path).close()
    proc = ctx.Process(target=_hold_write_transaction, args=(str(cache_path), started, release))
    proc.start()
    try:
        assert started.wait(60)
        second = Store.open(cache_path, busy_timeout_s=0)
        with pytest.raises(CacheError, match="locked") as info:
            add_observations(second, [Observation("x", "1", "t", 1.0)])
        assert "another advisor is writing" in info.value.one_line()
        release.set()
        proc.join(60)
        patient = Store.open(cache_path, busy_timeout_s=10)
        add_observations(patient, [Observation("x", "1", "t", 1.0)])
        assert len(load_observations(patient, "t")) == 1
    finally:
        release.set()
        proc.join(60)
    assert proc.exitcode == 0


def test_the_busy_timeout_and_foreign_keys_are_set_as_asked(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    with Store.open(path, busy_timeout_s=2.5) as store:
        assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 2500
        assert store.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    with Store.open(path, readonly=True, busy_timeout_s=1.0) as store:
        assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 1000
    with Store.open(":memory:", busy_timeout_s=7.0) as store:
        assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 7000
