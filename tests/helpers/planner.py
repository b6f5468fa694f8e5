"""Planner inputs built for tests: small problems, random DAGs, the validity check of a plan, a submitted run."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

from advisor.planner.scheduling.plan import Plan
from advisor.planner.scheduling.problem import Node, Problem, WorkflowInfo
from advisor.planner.scheduling.ranks import critical_path_s
from advisor.services.plan import PlanRequest
from advisor.services.submit import submit_workflow
from advisor.slurm.records import JobRecord
from advisor.slurm.runner import CommandResult
from advisor.store.connection import Store
from advisor.store.workflows import load_run
from advisor.wrapper import effects
from advisor.wrapper.submit import SideEffects
from tests.helpers.paths import TEST_DATA


def make_problem(
    runtimes: list[list[float]],
    edges: list[tuple[int, int, float]],
    cores: list[int],
    *,
    bandwidth: float | None = 1.0,
    workflow_of: list[int] | None = None,
    arrivals: list[float] | None = None,
) -> Problem:
    n_tasks, n_nodes = len(runtimes), len(cores)
    parents: list[list[tuple[int, float]]] = [[] for _ in range(n_tasks)]
    for parent, child, data in edges:
        parents[child].append((parent, data))
    arrivals = arrivals or [0.0]
    return Problem(
        task_ids=tuple(f"t{i}" for i in range(n_tasks)),
        parents=tuple(tuple(p) for p in parents),
        nodes=tuple(Node(f"node{n}", c) for n, c in enumerate(cores)),
        runtime_s=np.array(runtimes, dtype=float).reshape(n_tasks, n_nodes),
        bandwidth=None if bandwidth is None else np.full((n_nodes, n_nodes), bandwidth),
        workflow_of=tuple(workflow_of or [0] * n_tasks),
        workflows=tuple(WorkflowInfo(f"w{i}", a) for i, a in enumerate(arrivals)),
    )


def assert_valid(plan: Plan) -> None:
    problem = plan.problem
    tol = 1e-7 * max(1.0, plan.makespan_s)
    assert sorted(p.task for p in plan.placements) == list(range(problem.n_tasks))
    release = problem.release_s
    for p in plan.placements:
        runtime = problem.runtime_s[p.task, p.node]
        assert math.isfinite(runtime)
        assert 0 <= p.core < problem.nodes[p.node].cores
        assert p.finish_s - p.start_s == pytest.approx(runtime, abs=tol)
        assert p.start_s >= release[p.task] - tol
        for parent, data in problem.parents[p.task]:
            q = plan.placements[parent]
            transfer = (
                0.0
                if q.node == p.node or problem.bandwidth is None or data == 0
                else data / problem.bandwidth[q.node, p.node]
            )
            assert p.start_s >= q.finish_s + transfer - tol
    for a in plan.placements:
        for b in plan.placements:
            if a.task < b.task and (a.node, a.core) == (b.node, b.core):
                overlap = min(a.finish_s, b.finish_s) - max(a.start_s, b.start_s)
                assert overlap <= tol or a.start_s == a.finish_s or b.start_s == b.finish_s
    assert plan.makespan_s >= critical_path_s(problem) - tol


@st.composite
def random_problems(draw: st.DrawFn) -> Problem:
    n_tasks = draw(st.integers(0, 12))
    cores = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    n_nodes = len(cores)
    cost = st.floats(0.0, 50.0, allow_nan=False) | st.just(math.inf)
    runtimes = []
    for _ in range(n_tasks):
        row = draw(st.lists(cost, min_size=n_nodes, max_size=n_nodes))
        if not any(math.isfinite(v) for v in row):
            row[draw(st.integers(0, n_nodes - 1))] = draw(st.floats(0.0, 50.0))
        runtimes.append(row)
    edges = []
    for child in range(n_tasks):
        for parent in range(child):
            if draw(st.booleans()) and draw(st.booleans()):
                edges.append((parent, child, draw(st.floats(0.0, 30.0))))
    n_workflows = draw(st.integers(1, 2)) if n_tasks else 1
    workflow_of = [draw(st.integers(0, n_workflows - 1)) for _ in range(n_tasks)]
    # edges stay inside a workflow: a task joins its parent's workflow
    for parent, child, _ in edges:
        workflow_of[child] = workflow_of[parent]
    arrivals = [0.0] + [draw(st.floats(0.0, 40.0)) for _ in range(n_workflows - 1)]
    bandwidth = draw(st.sampled_from([None, 0.5, 2.0]))
    return make_problem(
        runtimes, edges, cores, bandwidth=bandwidth, workflow_of=workflow_of, arrivals=arrivals
    )


DATA = TEST_DATA / "workflows"
FORKJOIN = DATA / "forkjoin-sleep-1.5.json"


WORKS = [f"work_{i}" for i in range(1, 9)]


class FakeSbatch:
    """Answers like sbatch: job ids from 101 up; fails for job names in ``refuse``."""

    def __init__(self, refuse: Sequence[str] = ()) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.refuse = refuse

    def __call__(self, argv: Sequence[str], stdin: str | None, waits: bool) -> CommandResult:
        self.calls.append(tuple(argv))
        if any(f"--job-name={name}" in argv for name in self.refuse):
            return CommandResult(
                ("sbatch", *argv),
                1,
                "",
                "sbatch: error: Batch job submission "
                "failed: Invalid account or account/partition combination\n",
            )
        return CommandResult(
            ("sbatch", *argv), 0, f"Submitted batch job {100 + len(self.calls)}\n", ""
        )

    def side(self) -> SideEffects:
        return effects.real()._replace(
            run_sbatch=self, user=lambda: "alice", cluster=lambda: "testc"
        )


def record(
    job_id: int,
    partition: str,
    start: float | None,
    end: float | None,
    state: str = "COMPLETED",
    base: datetime = datetime(2026, 1, 1, 12),
) -> JobRecord:
    def at(seconds: float | None) -> datetime | None:
        return None if seconds is None else base + timedelta(seconds=seconds)

    return JobRecord(
        "testc",
        str(job_id),
        job_id,
        "x",
        "alice",
        "acct",
        partition,
        ("c1",),
        1,
        None,
        int((end or 0) - (start or 0)),
        60,
        None,
        state,
        None,
        0,
        0,
        base,
        at(start),
        at(end),
        "",
    )


def submitted_run(cache: Path) -> Any:
    submit_workflow(PlanRequest(inputs=(str(FORKJOIN),), db=str(cache)), side=FakeSbatch().side())
    with Store.open(cache, readonly=True) as store:
        return load_run(store)
