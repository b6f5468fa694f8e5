"""``history_limit``: what the sbatch wrapper gets for a job without a task model."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from advisor.history.budget import KillBudget
from advisor.history.cache import (
    load_budget,
    load_key_states,
    reserved_risk,
    running_advised,
    save_budgets,
    save_cells,
    save_key_states,
)
from advisor.history.cells import BELOW, ScoreCell, key_cell
from advisor.history.keys import KINDS, HistoryKey
from advisor.history.lookup import export_limits, history_advice, history_limit
from advisor.history.policy import DEFAULT_CONFIG, Proposal, Refusal
from advisor.services.export import export_from_cache
from advisor.slurm.records import Node, Partition
from advisor.store import Store
from advisor.store.advice import Advice, record_advice
from advisor.store.cluster import save_cluster
from advisor.store.names import name_key
from advisor.validate import validate
from tests.helpers.jobs import finished, learn
from tests.helpers.paths import REPO

#: What a partition with thousands of completed jobs and no kill has earned.
EARNED = KillBudget(0.01, math.log(1000.0), credit=20.0, completed=5000)
#: Its jobs with a key needed at most e^-2 (basis + 2 h) more than their key's longest run.
CALM = ScoreCell.of(tuple([BELOW] * 1000 + [-2.0 - i / 1000 for i in range(1000)]))


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


def earned(store: Store, *partitions: str, budget: KillBudget = EARNED) -> None:
    """The partitions' budgets and history cells as months of calm jobs would leave them."""
    save_budgets(store, dict.fromkeys(partitions, budget))
    save_cells(
        store,
        {key_cell(partition, kind): CALM for partition in partitions for kind in KINDS},
    )


def test_no_history_no_limit(store: Store) -> None:
    assert history_limit(store, "alice", "sim", "cpu") is None
    earned(store, "cpu")
    assert history_limit(store, "alice", "sim", "cpu") is None


def test_a_key_with_five_runs_gets_its_longest_run_plus_the_cells_margin(store: Store) -> None:
    learn(store, *(finished(n, 7000 + 100 * n) for n in range(1, 6)))
    assert history_limit(store, "alice", "sim", "cpu") is None  # five jobs earn no budget
    earned(store, "cpu")
    limit, why = history_limit(store, "alice", "sim", "cpu") or (0, "")
    assert 7500 < limit < 86400 and limit % 60 == 0
    assert "user alice, name sim" in why and "kill budget 1%" in why


def test_never_above_the_request_or_the_partitions_maxtime(store: Store) -> None:
    learn(store, *(finished(n, 3000, partition="short") for n in range(1, 6)))
    earned(store, "short")
    limit, _ = history_limit(store, "alice", "sim", "short") or (0, "")
    assert 3000 < limit < 7200
    assert history_limit(store, "alice", "sim", "short", request_s=3000) is None  # nothing to gain
    limit, _ = history_limit(store, "alice", "sim", "short", request_s=6000) or (0, "")
    assert 3000 < limit < 6000


def test_without_a_partition_the_default_one_answers(store: Store) -> None:
    learn(store, *(finished(n, 600, name=f"job{n}") for n in range(1, 6)))
    earned(store, "cpu")
    found = history_limit(store, "alice", "new-name", None)
    assert found is not None and "user alice, partition cpu" in found[1]


def test_numbered_names_share_their_familys_history(store: Store) -> None:
    learn(store, *(finished(n, 600, name=f"snp_{n}.sh") for n in range(1, 6)))
    earned(store, "cpu", budget=EARNED._replace(credit=0.0))
    found = history_limit(store, "alice", "snp_77.sh", "cpu")
    assert found is not None and "user alice, family snp_#.sh" in found[1]


def test_a_burst_gets_limits_while_the_budget_could_absorb_it(store: Store) -> None:
    learn(store, *(finished(n, 600) for n in range(1, 6)))
    earned(store, "cpu", budget=EARNED._replace(credit=2.0))
    now = datetime.now(UTC)
    for job_id in (77, 78):
        assert history_limit(store, "alice", "sim", "cpu", now=lambda: now) is not None
        record_advice(store, Advice(user="alice", policy="history", argv=["sbatch"],
                                    outcome="submitted", task="sim", partition="cpu",
                                    quantile=0.999, cluster="advisor", job_id=job_id))  # fmt: skip
    found, _ = history_advice(store, "alice", "sim", "cpu", now=lambda: now)
    assert not isinstance(found, Proposal) and "could absorb (2)" in found.reason
    assert history_limit(store, "bob", "sim", "cpu", now=lambda: now) is None  # no history
    learn(store, finished(77, 650))  # accounting saw one finish
    assert history_limit(store, "alice", "sim", "cpu", now=lambda: now) is not None
    later = now + timedelta(days=8)  # a lost job stops counting after a week
    assert history_limit(store, "alice", "sim", "cpu", now=lambda: later) is not None


def test_a_job_array_counts_as_its_tasks_against_the_burst_bound(store: Store) -> None:
    """One submission of 3 tasks was one job: a credit of 2 kills let all 3 run tightened."""
    learn(store, *(finished(n, 600) for n in range(1, 6)))
    earned(store, "cpu", budget=EARNED._replace(credit=2.0))
    now = datetime.now(UTC)
    found, _ = history_advice(store, "alice", "sim", "cpu", now=lambda: now, tasks=3)
    assert isinstance(found, Refusal) and "this job array's 3 tasks" in found.reason
    assert history_limit(store, "alice", "sim", "cpu", now=lambda: now, tasks=2) is not None
    # an array of two that runs tightened leaves no room for another job of the user's
    record_advice(store, Advice(user="alice", policy="history", argv=["sbatch"], tasks=2,
                                outcome="submitted", task="sim", partition="cpu",
                                cluster="advisor", job_id=90))  # fmt: skip
    assert [r.tasks for r in running_advised(store, "alice", since="2000-01-01")] == [2]
    assert history_limit(store, "alice", "sim", "cpu", now=lambda: now) is None
    # its tasks are the partition's risk, a spool line's claim of tasks only its user's own
    since = (now - timedelta(days=1)).isoformat()
    direct = reserved_risk(store, "cpu", since=since, unknown=0.01)
    record_advice(store, Advice(user="mallory", policy="history", argv=["sbatch"],
                                tasks=1_000_000, outcome="submitted", task="x",
                                partition="cpu", cluster="advisor", job_id=91),
                  origin="spool")  # fmt: skip
    assert direct == pytest.approx(0.02)
    assert reserved_risk(store, "cpu", since=since, unknown=0.01) == pytest.approx(0.03)
    assert [r.tasks for r in running_advised(store, "mallory", since=since)] == [1_000_000]


def test_a_kill_at_a_recorded_limit_costs_the_partition_and_the_keys(store: Store) -> None:
    learn(store, *(finished(n, 600) for n in range(1, 6)))
    earned(store, "cpu")
    first, _ = history_limit(store, "alice", "sim", "cpu") or (0, "")
    record_advice(store, Advice(user="alice", policy="history", argv=["sbatch"],
                                outcome="submitted", task="sim", partition="cpu", limit_s=first,
                                quantile=0.99, cluster="advisor", job_id=6))  # fmt: skip
    killed = finished(6, first + 30, state="TIMEOUT")._replace(
        timelimit_s=first, comment=f"advisor:history,action=set,limit={first // 60},task=sim"
    )
    learn(store, killed)
    after = load_budget(store, "cpu")
    assert after is not None and after.killed == 1 and after.log_price > EARNED.log_price
    second, _ = history_limit(store, "alice", "sim", "cpu") or (86400, "")
    assert second > first


def test_works_on_a_read_only_cache(store: Store, cache_path: Path) -> None:
    learn(store, *(finished(n, 600) for n in range(1, 6)))
    earned(store, "cpu")
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


def test_export_gives_every_key_with_enough_runs_its_partitions_margin(store: Store) -> None:
    learn(store, *(finished(n, 9000, partition="short") for n in range(1, 6)))
    learn(store, finished(9, 60, name="rare", user="bob"))
    assert export_limits(store).rows == []  # no partition has earned a budget
    earned(store, "short")
    rows = {(row["kind"], row["user"], row["name"]): row for row in export_limits(store).rows}
    margin = math.exp(CALM.quantiles()[6])  # the 1 % level
    assert rows[("user+name", "alice", "sim")]["limit_s"] == 60 * math.ceil(
        (9000 + margin * (9000 + 7200)) / 60
    )
    assert rows[("user+partition", "alice", "")]["limit_s"] == 7200  # MaxTime of short
    assert not any(row["user"] == "bob" for row in rows.values())  # one run is not enough


def test_the_limits_file_carries_each_users_history_for_the_lua_plugin(store: Store) -> None:
    learn(store, *(finished(n, 3000, partition="short") for n in range(1, 6)))
    learn(store, *(finished(n, 600, name="post", partition="cpu") for n in range(6, 11)))
    learn(store, finished(19, 60, name="rare", user="bob"))
    earned(store, "cpu", "short")
    doc = export_from_cache(store, quantile=0.95, margin=0.1, generated_at="now")
    validate(doc, "export", source="export")
    alice = doc["users"]["alice"]
    # The file is everyone's to read: the job names are keyed by a digest the plugin computes.
    assert sorted(alice["tasks"]) == sorted(
        [name_key("alice", "sim", b""), name_key("alice", "post", b"")]
    )
    assert "sim" not in json.dumps(doc) and "post" not in json.dumps(doc)
    sim = alice["tasks"][name_key("alice", "sim", b"")]["partitions"]
    assert 50 < sim["short"]["limit_min"] <= 120 and sim["cpu"]["limit_min"] > 50
    assert "bob" not in doc["users"] and doc["tasks"] == {}


def test_the_limits_file_carries_each_users_name_families(store: Store) -> None:
    # numbered runs of one script: the wrapper's user+family key, for the plugin too
    learn(store, *(finished(n, 600, name=f"snp_{n}.sh") for n in range(1, 6)))
    earned(store, "cpu", "short")
    wrapper = history_limit(store, "alice", "snp_77.sh", "cpu")
    assert wrapper is not None and "family snp_#.sh" in wrapper[1]
    doc = export_from_cache(store, quantile=0.95, margin=0.1, generated_at="now")
    validate(doc, "export", source="export")
    families = doc["users"]["alice"]["families"]
    assert list(families) == [name_key("alice", "snp_#.sh", b"")]
    assert "snp_" not in json.dumps(doc)
    limits = families[name_key("alice", "snp_#.sh", b"")]["partitions"]
    row = next(r for r in export_limits(store).rows if r["kind"] == "user+family")
    assert row["name"] == "snp_#.sh" and 600 < row["limit_s"] <= 7200
    # the key has no partition: its limit in each, within each MaxTime
    assert limits == {part: {"limit_min": row["limit_s"] // 60} for part in ("cpu", "short")}
    # each budgeted partition's credit, whole kills (at least one), bounds the plugin's arrays
    assert {p: v.get("credit") for p, v in doc["partitions"].items()} == {"cpu": 20, "short": 20}
    save_budgets(store, {"cpu": EARNED._replace(credit=2.7), "short": EARNED._replace(credit=0.2)})
    doc = export_from_cache(store, quantile=0.95, margin=0.1, generated_at="now")
    assert {p: v.get("credit") for p, v in doc["partitions"].items()} == {"cpu": 2, "short": 1}


def test_the_export_holds_the_budget_level_where_the_wrapper_follows_the_price(
    store: Store,
) -> None:
    """The plugin's kills never move the price (no advice row), so the export stays at the
    budget's level; the wrapper's own limit for the same job, with nothing in flight and
    MaxTime as request, is the price's choice: bolder at a low price, more careful at a high."""
    learn(store, *(finished(n, 600, name="post", partition="cpu") for n in range(1, 7)))
    earned(store, "cpu")  # a price of 1000 s per kill
    rows = {(row["kind"], row["name"]): row["limit_s"] for row in export_limits(store).rows}
    exported = rows[("user+name", "post")]
    assert exported == 60 * math.ceil((600 + math.exp(CALM.quantiles()[6]) * 7800) / 60)  # 1 %
    cheap = history_advice(store, "alice", "post", "cpu")[0]
    assert isinstance(cheap, Proposal) and cheap.risk == 0.05 and cheap.limit_s < exported
    dear = EARNED._replace(log_price=math.log(1e6))  # as after a run of kills
    save_budgets(store, {"cpu": dear})
    careful = history_advice(store, "alice", "post", "cpu")[0]
    assert isinstance(careful, Proposal) and careful.risk < 0.01 and careful.limit_s >= exported
    assert {(row["kind"], row["name"]): row["limit_s"] for row in export_limits(store).rows} == rows


def test_the_export_leaves_out_a_user_the_wrapper_refuses_for_their_kills(store: Store) -> None:
    """Issue 30: the wrapper stops advising a user whose kills passed their share of the budget
    (policy.propose); the plugin went on lowering that user's plain sbatch jobs."""
    learn(store, *(finished(n, 600, name="post", partition="cpu") for n in range(1, 7)))
    learn(store, *(finished(n, 600, name="post", partition="cpu", user="bob")
                   for n in range(7, 13)))  # fmt: skip
    earned(store, "cpu")

    def limits() -> dict[tuple[str, str, str], int]:
        return {(r["user"], r["kind"], r["name"]): r["limit_s"] for r in export_limits(store).rows}

    before = limits()
    assert {user for user, _, _ in before} == {"alice", "bob"}
    key = HistoryKey("user", "alice")
    with store.write():
        alice = load_key_states(store, [key])[key]
        allowed = EARNED.budget * alice.completed + DEFAULT_CONFIG.user_slack
        save_key_states(store, {key: alice._replace(kills=math.floor(allowed))})
    assert limits() == before  # within the slack: as before
    with store.write():
        save_key_states(store, {key: alice._replace(kills=math.floor(allowed) + 1)})
    assert limits() == {key: limit for key, limit in before.items() if key[0] == "bob"}
    assert isinstance(history_advice(store, "alice", "post", "cpu")[0], Refusal)
    assert isinstance(history_advice(store, "bob", "post", "cpu")[0], Proposal)
