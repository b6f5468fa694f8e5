"""The array kernels against the per-slot code they replaced (``tests/helpers/reference_planner.py``).

Same schedules to the last bit: every placement's node, core, start and finish compared with
``==`` on random DAGs (integer costs for ties, zero costs, barred nodes, several cores, several
workflows arriving at different times, startup costs, free links) and on the benchmark's
layered DAGs; the ranks, the OCT and the sampled makespans too.  Where the reference produced
an impossible plan (its zero-length-interval bug, see ``test_a_zero_length_task_...``) the new
kernel must produce a valid one.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.planner.scheduling import fdws, heft, peft
from advisor.planner.scheduling.plan import Plan, PlanError
from advisor.planner.scheduling.problem import Node, Problem, WorkflowInfo, combine
from advisor.planner.scheduling.ranks import critical_path_s, upward_rank
from advisor.planner.scheduling.timeline import SlotTable
from advisor.planner.scheduling.uncertainty import LognormalSampler, sample_makespans
from benchmarks.bench_heft import distinct_instance, layered_instance
from tests.helpers import reference_planner as reference
from tests.helpers.planner import assert_valid, random_problems

PAIRS = {
    "heft": (heft.schedule, reference.heft),
    "peft": (peft.schedule, reference.peft),
    "fdws": (fdws.schedule, reference.fdws),
}


def placements(plan: Plan) -> list[tuple[int, int, int, float, float]]:
    return [(p.task, p.node, p.core, p.start_s, p.finish_s) for p in plan.placements]


def overlapping(plan: Plan) -> list[tuple[int, int]]:
    """Pairs of tasks whose intervals on one core overlap, compared exactly (no tolerance)."""
    by_core: dict[tuple[int, int], list[tuple[float, float, int]]] = {}
    for p in plan.placements:
        by_core.setdefault((p.node, p.core), []).append((p.start_s, p.finish_s, p.task))
    return [
        (a[2], b[2])
        for spans in by_core.values()
        for i, a in enumerate(spans)
        for b in spans[i + 1 :]
        if a[0] < b[1] and b[0] < a[1]
    ]


def assert_same_as_reference(algorithm: str, problem: Problem) -> None:
    new, old = PAIRS[algorithm]
    try:
        expected = old(problem)
    except PlanError:  # the reference's bug: the new kernel must plan it validly
        expected = None
    if expected is None or overlapping(expected):
        # The reference's zero-length-interval bug, caught by Plan or (a subnormal runtime
        # overlapping a task by less than Plan's tolerance) only by the exact check.
        got = new(problem)
        assert_valid(got)
        assert overlapping(got) == []
        return
    got = new(problem)
    assert placements(got) == placements(expected)
    assert got.makespan_s == expected.makespan_s


def random_problem(rng: random.Random) -> Problem:
    """Up to 60 tasks, 1-5 nodes of 1-3 cores; ties, zeros, barred nodes, arrivals, startups."""
    n_tasks, n_nodes = rng.randint(0, 60), rng.randint(1, 5)
    integers, zeros, barred = rng.random() < 0.5, rng.choice([0, 0.2, 0.6]), rng.choice([0, 0.2])
    runtime = []
    for _ in range(n_tasks):
        row = [
            0.0
            if rng.random() < zeros
            else float(rng.randint(0, 6))
            if integers
            else rng.uniform(0, 20)
            for _ in range(n_nodes)
        ]
        row = [math.inf if rng.random() < barred else value for value in row]
        if not any(math.isfinite(v) for v in row):
            row[rng.randrange(n_nodes)] = 1.0
        runtime.append(row)
    n_workflows = rng.randint(1, 3)
    workflow_of = [rng.randrange(n_workflows) for _ in range(n_tasks)]
    parents: list[list[tuple[int, float]]] = [[] for _ in range(n_tasks)]
    for child in range(n_tasks):
        for parent in range(max(0, child - 8), child):
            if rng.random() < 0.25:
                data = float(rng.randint(0, 3)) if integers else rng.uniform(0, 10)
                parents[child].append((parent, data))
                workflow_of[child] = workflow_of[parent]
    bandwidth = None if rng.random() < 0.3 else np.full((n_nodes, n_nodes), rng.choice([0.5, 2.0]))
    if bandwidth is not None and rng.random() < 0.3:
        bandwidth[0, 1:] = np.inf  # free links (a shared file system)
    startup = (
        np.array([rng.choice([0.0, 0.5]) for _ in range(n_nodes)]) if rng.random() < 0.3 else None
    )
    return Problem(
        task_ids=tuple(f"t{i}" for i in range(n_tasks)),
        parents=tuple(tuple(p) for p in parents),
        nodes=tuple(Node(f"n{i}", rng.randint(1, 3)) for i in range(n_nodes)),
        runtime_s=np.array(runtime, dtype=float).reshape(n_tasks, n_nodes),
        bandwidth=bandwidth,
        startup_s=startup,
        workflow_of=tuple(workflow_of),
        workflows=tuple(
            WorkflowInfo(f"w{i}", 0.0 if i == 0 else rng.choice([0.0, 3.0, 10.5]))
            for i in range(n_workflows)
        ),
    )


@pytest.mark.parametrize("algorithm", sorted(PAIRS))
@pytest.mark.parametrize("seed", range(4))
def test_random_dags_give_the_reference_schedules(algorithm: str, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(60):
        assert_same_as_reference(algorithm, random_problem(rng))


@pytest.mark.parametrize("algorithm", sorted(PAIRS))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=random_problems())
def test_contract_problems_give_the_reference_schedules(algorithm: str, problem: Problem) -> None:
    assert_same_as_reference(algorithm, problem)


@pytest.mark.parametrize("algorithm", ["heft", "peft"])
@pytest.mark.parametrize(
    ("n_tasks", "n_nodes", "cores", "seed"),
    [
        (1000, 16, 1, 100),
        (1000, 16, 1, 101),
        (2000, 64, 4, 1),
        (1500, 8, 2, 7),
    ],
)
def test_benchmark_dags_give_the_reference_schedules(
    algorithm: str, n_tasks: int, n_nodes: int, cores: int, seed: int
) -> None:
    problem, *_ = layered_instance(n_tasks, n_nodes, cores, seed=seed)
    assert_same_as_reference(algorithm, problem)


@pytest.mark.parametrize("algorithm", ["heft", "peft"])
def test_distinct_processors_give_the_reference_schedules(algorithm: str) -> None:
    assert_same_as_reference(algorithm, distinct_instance(1500, 32, seed=3))


def test_concurrent_benchmark_workflows_give_the_reference_fdws_schedule() -> None:
    flows = [layered_instance(300, 16, 2, seed=50 + i)[0] for i in range(4)]
    assert_same_as_reference("fdws", combine(flows, [0.0, 20.0, 20.0, 75.5]))


def test_a_zero_length_task_no_longer_opens_a_gap_over_a_busy_slot() -> None:
    # z (0 s, at 3) is placed first, b ([2, 3]) then went after it in the reference's lists,
    # so its scan saw [1, 3] as free and put c ([2, 2.5]) over b: PlanError.
    problem = Problem(
        task_ids=("a", "z", "b", "c", "d"),
        parents=((), (), (), (), ((1, 0.0),)),
        nodes=(Node("n", 1),),
        runtime_s=np.array([[1.0], [0.0], [1.0], [0.5], [10.0]]),
        workflow_of=(0, 1, 2, 2, 1),
        workflows=(WorkflowInfo("w0", 0.0), WorkflowInfo("w1", 3.0), WorkflowInfo("w2", 2.0)),
    )
    with pytest.raises(PlanError, match="overlap"):
        reference.heft(problem)
    plan = heft.schedule(problem)
    assert_valid(plan)
    assert [(p.start_s, p.finish_s) for p in plan.placements] == [
        (0.0, 1.0),
        (3.0, 3.0),
        (2.0, 3.0),
        (13.0, 13.5),
        (3.0, 13.0),
    ]


def busy_conflict(start: float, finish: float, others: list[tuple[float, float]]) -> bool:
    """Plan's own overlap rule: sorted by (start, finish), a later start before an earlier end."""
    for other in others:
        first, second = sorted([(start, finish), other])
        if second[0] < first[1]:
            return True
    return False


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3), st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5]), st.integers(0, 12)
        ),
        min_size=1,
        max_size=40,
    )
)
def test_slot_table_finds_the_earliest_gap_that_holds_the_task(
    steps: list[tuple[int, float, int]],
) -> None:
    # An independent oracle: the earliest of ready and the later finishes that overlaps nothing.
    cores = [2, 1, 1]
    table = SlotTable(cores)
    busy: list[list[tuple[float, float]]] = [[] for _ in range(sum(cores))]
    for node_hint, duration, ready_tenths in steps:
        ready = np.full(len(cores), ready_tenths / 2.0)
        durations = np.full(len(cores), duration)
        durations[node_hint % len(cores)] += 1.0  # nodes differ
        node_start, slot_of = table.best_slots(table.earliest_starts(ready, durations))
        finish = node_start + durations
        node = int(np.argmin(finish))
        best = []
        for slot, intervals in enumerate(busy):
            d = float(durations[table.slot_node[slot]])
            r = float(ready[table.slot_node[slot]])
            candidates = sorted({r} | {f for _, f in intervals if f >= r})
            best.append(next(c for c in candidates if not busy_conflict(c, c + d, intervals)))
        oracle = [
            min(
                best[s] + float(durations[table.slot_node[s]])
                for s in np.flatnonzero(table.slot_node == n)
            )
            for n in range(len(cores))
        ]
        assert float(finish[node]) == min(oracle)
        assert node == oracle.index(min(oracle))
        slot = int(slot_of[node])
        assert best[slot] == float(node_start[node])
        table.reserve(slot, float(node_start[node]), float(finish[node]))
        busy[slot].append((float(node_start[node]), float(finish[node])))


def test_ranks_oct_and_bounds_equal_the_per_edge_loops() -> None:
    rng = random.Random(11)
    for _ in range(40):
        problem = random_problem(rng)
        assert np.array_equal(upward_rank(problem), reference.upward_rank(problem))
        assert np.array_equal(
            peft.optimistic_cost_table(problem), reference.optimistic_cost_table(problem)
        )
    problem, *_ = layered_instance(3000, 16, 2, seed=4)
    assert np.array_equal(upward_rank(problem), reference.upward_rank(problem))
    assert np.array_equal(
        peft.optimistic_cost_table(problem), reference.optimistic_cost_table(problem)
    )


def test_critical_path_is_the_longest_fastest_path_after_arrivals() -> None:
    problem = Problem(
        task_ids=("a", "b", "c", "d"),
        parents=((), ((0, 5.0),), ((0, 1.0),), ((1, 0.0), (2, 0.0))),
        nodes=(Node("x"), Node("y")),
        runtime_s=np.array([[2.0, 3.0], [4.0, 1.0], [6.0, 7.0], [1.0, 1.0]]),
        workflows=(WorkflowInfo("w", 1.5),),
    )
    assert critical_path_s(problem) == 1.5 + 2.0 + 6.0 + 1.0


@pytest.mark.parametrize("chunk_cells", [4_000_000, 700])
def test_sampled_makespans_equal_the_per_task_replay(chunk_cells: int) -> None:
    rng = random.Random(5)
    for _ in range(25):
        problem = random_problem(rng)
        plan = heft.schedule(problem)
        got = sample_makespans(
            plan, LognormalSampler(0.3), samples=64, seed=9, chunk_cells=chunk_cells
        )
        want = reference.sample_makespans(
            plan, LognormalSampler(0.3), samples=64, seed=9, chunk_cells=chunk_cells
        )
        assert np.array_equal(got, want)
    plan = heft.schedule(layered_instance(2000, 16, 2, seed=8)[0])
    assert np.array_equal(
        sample_makespans(plan, LognormalSampler(0.2), samples=40, seed=1),
        reference.sample_makespans(plan, LognormalSampler(0.2), samples=40, seed=1),
    )


def test_a_subnormal_runtime_the_reference_overlapped_is_planned_without_overlap() -> None:
    """Found by hypothesis: the reference put a task of 1.4e-45 s over a busy core at 0."""
    inf = math.inf
    runtime = np.array([[0, inf], [1.401298464324817e-45, 1], [inf, 1], [0, 0], [0, 0], [0, 0],
                        [inf, 0], [inf, 1], [1, 1]])  # fmt: skip
    problem = Problem(
        task_ids=tuple(f"t{i}" for i in range(9)),
        parents=((), (), (), (), (), ((2, 0.0),), (), ((5, 0.0),), ()),
        nodes=(Node("node0", 1, ""), Node("node1", 1, "")),
        runtime_s=runtime,
        bandwidth=None,
        startup_s=None,
        workflow_of=(0,) * 9,
        workflows=(WorkflowInfo("w0", 0.0, None),),
        source="",
    )
    assert overlapping(reference.heft(problem)) == [(1, 8)]
    assert_same_as_reference("heft", problem)
