"""The wrapper's limits stay within what Slurm accepts: QoS and association MaxWall (issue 30).

Issue 30: with a QoS of ``MaxWall=00:10:00`` granted and a job whose history gives 01:01:00,
``advisor sbatch --advisor-dry-run --qos advshort`` set ``--time=01:01:00``, a job that pends
forever or is refused where limits are enforced.  The flow runs as ``advisor sbatch`` does,
with a real cache (a learned model of ``align``, the cluster's QoS and associations saved as
``advisor cluster --save`` saves them) and sbatch recorded instead of run.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pytest

from advisor.advice.snapshot import Snapshot, load_snapshot
from advisor.slurm.records import Association, Qos, SiteLimits, StartEstimate
from advisor.slurm.runner import CommandResult
from advisor.store.cluster import save_site_limits
from advisor.store.connection import Store
from advisor.store.guard import Heartbeat, write_heartbeat
from advisor.wrapper.command import main
from advisor.wrapper.submit import SideEffects
from tests.helpers.caches import NODES, PARTITIONS, train

CLUSTER = "advisor"
LIMITS = SiteLimits(
    {"normal": Qos("normal", None), "advshort": Qos("advshort", 600)},
    (
        Association(CLUSTER, "research", "alice", "", None, ("advshort", "normal"), ""),
        Association(CLUSTER, "capped", "alice", "", 420, ("normal",), "normal"),
    ),
    {"alice": "research"},
    True,
    frozenset({"associations", "limits", "qos"}),
)


class Flow:
    """advisor sbatch over a real cache, as alice; sbatch's argv recorded, nothing submitted."""

    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self.runs: list[tuple[str, ...]] = []

    def run_sbatch(self, argv: Sequence[str], stdin: str | None, waits: bool) -> CommandResult:
        self.runs.append(tuple(argv))
        return CommandResult(("sbatch", *argv), 0, "Submitted batch job 42\n", "")

    def load(self, db: str | None, task: str, user: str) -> Snapshot:
        with Store.open(self.cache, readonly=True) as store:
            return load_snapshot(store, (task,), user=user)

    def side(self) -> SideEffects:
        def nothing(*args: object) -> None:
            return None

        def history(
            db: str | None,
            user: str,
            name: str,
            parts: Sequence[str],
            request_s: int | None,
            tasks: int,
        ) -> dict[str, tuple[int, str] | None]:
            return {p: (3660, "longest of the last 50 runs 2440 s + 50 %") for p in parts}

        def estimate(argv: Sequence[str]) -> StartEstimate:
            raise AssertionError("not asked")

        return SideEffects(env={}, read_script=lambda p: Path(p).read_text(), read_stdin=lambda: "",
                           input_bytes=lambda paths: 0, load_snapshot=self.load, history=history,
                           run_sbatch=self.run_sbatch, estimate_start=estimate, record=nothing,
                           user=lambda: "alice", cluster=lambda: CLUSTER)  # fmt: skip

    def sbatch(self, *argv: str) -> tuple[dict[str, str], str]:
        """The options the wrapper gave sbatch (name -> value), and what it explained."""
        out, err = io.StringIO(), io.StringIO()
        code = main(
            ["--advisor-explain", *argv, "--wrap", "true"], side=self.side(), out=out, err=err
        )
        assert code == 0, err.getvalue()
        options = dict(
            a[2:].split("=", 1) for a in self.runs[-1] if a.startswith("--") and "=" in a
        )
        return options, err.getvalue()


@pytest.fixture
def flow(tmp_path: Path) -> Flow:
    cache = train(tmp_path / "cache.db", "align", PARTITIONS, NODES)
    with Store.open(cache) as store:
        save_site_limits(store, LIMITS)
    return Flow(cache)


def test_a_history_limit_stays_within_the_qos(flow: Flow) -> None:
    """Issue 30's reproducer: the history gives 01:01:00, the QoS allows ten minutes."""
    bounded, explained = flow.sbatch("--qos", "advshort", "-J", "sim", "-p", "cpu")
    assert bounded["time"] == "00:10:00"
    assert "clamped to QoS advshort MaxWall" in explained
    free, _ = flow.sbatch("-J", "sim", "-p", "cpu")
    assert free["time"] == "01:01:00"  # without the QoS: the history limit


def test_a_model_limit_stays_within_the_association_and_the_qos(flow: Flow) -> None:
    free, _ = flow.sbatch("-J", "align", "-p", "cpu")
    capped, explained = flow.sbatch("--account=capped", "-J", "align", "-p", "cpu")
    assert free["time"] > "00:07:00" and capped["time"] == "00:07:00", (free, capped)
    assert "clamped to association capped/alice MaxWall" in explained


def test_no_association_leaves_the_job_to_slurm(flow: Flow) -> None:
    options, explained = flow.sbatch("--account=elsewhere", "-J", "sim", "-p", "cpu")
    assert "time" not in options
    assert "no association for user alice in account elsewhere" in explained


def test_guarded_never_lowers_a_request_no_guard_may_raise_to(flow: Flow) -> None:
    with Store.open(flow.cache) as store:
        import time

        write_heartbeat(store, Heartbeat(time.time(), "h", 1, 10, 0, 0))
    over, explained = flow.sbatch("--advisor-policy", "guarded", "--qos", "advshort", "-t", "60",
                                  "-J", "sim", "-p", "cpu")  # fmt: skip
    assert "time" not in over and "-t" in flow.runs[-1], flow.runs[-1]  # the user's own 60 min
    assert "which no guard may raise a job past" in explained
    within, _ = flow.sbatch("--advisor-policy", "guarded", "-t", "120", "-J", "sim", "-p", "cpu")
    assert within["time"] == "01:01:00"  # lowered to the history: the guard may raise to 2 h
