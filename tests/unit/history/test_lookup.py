"""``history_limit``: what the sbatch wrapper gets for a job without a task model."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from advisor.history.lookup import export_limits, history_limit
from advisor.services.export import export_from_cache
from advisor.slurm.records import Node, Partition
from advisor.store import Store
from advisor.store.advice import Advice, record_advice
from advisor.store.cluster import save_cluster
from advisor.store.names import name_key
from advisor.validate import validate
from tests.helpers.jobs import finished, learn
from tests.helpers.paths import REPO


@pytest.fixture
def store(cache_path: Path) -> Iterator[Store]:
    with Store.open(cache_path) as opened:
        save_cluster(
            opened,
            [
                Partition("cpu", ("c1",), 86400, 1800, True, "UP"),
                Partition("short", ("c1",), 7200, 600, False, "UP"),
            ],
            [Node("c1", 2, 4000, (), ("cpu", "short"), "IDLE")],
        )
        yield opened


def test_no_history_no_limit(store: Store) -> None:
    assert history_limit(store, "alice", "sim", "cpu") is None


def test_five_completed_runs_give_the_longest_plus_margin_in_whole_minutes(store: Store) -> None:
    learn(store, *(finished(n, 7000 + 100 * n) for n in range(1, 6)))
    found = history_limit(store, "alice", "sim", "cpu")
    assert found is not None
    limit, why = found
    assert limit == 11280  # 7500 s × 1.5 = 11250 s, rounded up to 188 min
    assert "user alice, name sim" in why


def test_never_above_the_request_or_the_partitions_maxtime(store: Store) -> None:
    learn(store, *(finished(n, 9000, partition="short") for n in range(1, 6)))
    limit, why = history_limit(store, "alice", "sim", "short") or (0, "")
    assert limit == 7200 and "clamped to MaxTime of short" in why
    limit, why = history_limit(store, "alice", "sim", "short", request_s=3000) or (0, "")
    assert limit == 3000 and "kept at the requested time" in why


def test_without_a_partition_the_default_one_answers(store: Store) -> None:
    learn(store, *(finished(n, 600, name=f"job{n}") for n in range(1, 6)))
    found = history_limit(store, "alice", "new-name", None)
    assert found is not None and "user alice, partition cpu" in found[1]


def test_an_advised_job_still_running_uses_up_the_keys_budget(store: Store) -> None:
    learn(store, *(finished(n, 600) for n in range(1, 6)))
    now = datetime.now(UTC)
    record_advice(store, Advice(user="alice", policy="history", argv=["sbatch"], outcome="submitted",
                                task="sim", partition="cpu", cluster="advisor", job_id=77))  # fmt: skip
    assert history_limit(store, "alice", "sim", "cpu", now=lambda: now) is None
    assert history_limit(store, "bob", "sim", "cpu", now=lambda: now) is None  # no history
    learn(store, finished(77, 650))  # accounting saw it finish
    assert history_limit(store, "alice", "sim", "cpu", now=lambda: now) is not None
    # a lost job stops counting after a week
    record_advice(store, Advice(user="alice", policy="history", argv=["sbatch"], outcome="submitted",
                                task="sim", partition="cpu", cluster="advisor", job_id=78))  # fmt: skip
    later = now + timedelta(days=8)
    assert history_limit(store, "alice", "sim", "cpu", now=lambda: later) is not None


def test_a_kill_at_an_advised_limit_raises_the_next_limit(store: Store) -> None:
    learn(store, *(finished(n, 600) for n in range(1, 6)))
    first, _ = history_limit(store, "alice", "sim", "cpu") or (0, "")
    learn(store, finished(6, first + 30, state="TIMEOUT"))
    second, _ = history_limit(store, "alice", "sim", "cpu") or (0, "")
    assert second > first


def test_works_on_a_read_only_cache(store: Store, cache_path: Path) -> None:
    learn(store, *(finished(n, 600) for n in range(1, 6)))
    with Store.open(cache_path, readonly=True) as readonly:
        assert history_limit(readonly, "alice", "sim", "cpu") == history_limit(
            store, "alice", "sim", "cpu"
        )


def test_the_lookup_needs_only_the_standard_library() -> None:
    code = (
        "import sys, advisor.history.lookup; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'numpy', 'sklearn', 'sqlite_utils', 'tenacity', 'jsonschema', 'tabulate', 'scipy'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert done.stdout.strip() == "[]"


def test_export_lists_every_key_with_enough_runs_and_its_limit(store: Store) -> None:
    learn(store, *(finished(n, 9000, partition="short") for n in range(1, 6)))
    learn(store, finished(9, 60, name="rare", user="bob"))
    rows = {(row["kind"], row["user"], row["name"]): row for row in export_limits(store).rows}
    assert rows[("user+name", "alice", "sim")]["limit_s"] == 13500
    assert rows[("user+partition", "alice", "")]["limit_s"] == 7200  # MaxTime of short
    assert not any(row["user"] == "bob" for row in rows.values())  # one run is not enough


def test_the_limits_file_carries_each_users_history_for_the_lua_plugin(store: Store) -> None:
    learn(store, *(finished(n, 9000, partition="short") for n in range(1, 6)))
    learn(store, *(finished(n, 600, name="post", partition="cpu") for n in range(6, 11)))
    learn(store, finished(19, 60, name="rare", user="bob"))
    doc = export_from_cache(store, quantile=0.95, margin=0.1, generated_at="now")
    validate(doc, "export", source="export")
    alice = doc["users"]["alice"]
    # user + name: 9000 s + 50 % in cpu; short's MaxTime (120 min) bounds it there.  The file
    # is everyone's to read: the job names are keyed by a digest the plugin computes.
    assert sorted(alice["tasks"]) == sorted(
        [name_key("alice", "sim", b""), name_key("alice", "post", b"")]
    )
    assert "sim" not in json.dumps(doc) and "post" not in json.dumps(doc)
    assert alice["tasks"][name_key("alice", "sim", b"")]["partitions"] == {
        "cpu": {"limit_min": 225}, "short": {"limit_min": 120},
    }  # fmt: skip
    assert alice["tasks"][name_key("alice", "post", b"")]["partitions"]["cpu"] == {
        "limit_min": 70
    }  # 600 s + 1 h
    # user + partition for the names without history of their own; one run of bob's is none
    assert alice["partitions"] == {"cpu": {"limit_min": 70}, "short": {"limit_min": 120}}
    assert "bob" not in doc["users"] and doc["tasks"] == {}


def test_the_wrapper_sets_the_history_limit_of_a_task_without_model(
    store: Store, cache_path: Path, tmp_path: Path
) -> None:
    """The real effects on a real cache: --dry-run of a job whose name has history, no model."""
    learn(store, *(finished(n, 7000 + 100 * n, user="root") for n in range(1, 6)))
    script = tmp_path / "sim"
    script.write_text("#!/bin/sh\n#SBATCH -p cpu\nsleep 1\n")
    code = (
        "import sys, advisor.wrapper.effects as e\n"
        "e.user = lambda: 'root'\n"
        "from advisor.cli import main\n"
        f"sys.exit(main(['--db', {str(cache_path)!r}, 'sbatch', '--advisor-dry-run',"
        f" {str(script)!r}]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    limit, _ = history_limit(store, "root", "sim", "cpu") or (0, "")
    assert limit == 11280  # 7500 s + 50 %, up to whole minutes
    assert f"--time={limit // 3600:02d}:{limit % 3600 // 60:02d}:00" in done.stdout
    assert "--comment=advisor:history,action=set,limit=188,task=sim" in done.stdout
