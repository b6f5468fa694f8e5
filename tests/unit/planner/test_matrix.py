"""The runtime matrix on node classes, the network, the predictive sampler, the cluster view."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from advisor.advice.snapshot import load_snapshot
from advisor.errors import InputError
from advisor.models.distributions import Predictive, predictive
from advisor.planner.cluster.cache_models import CacheModels
from advisor.planner.cluster.matrix import runtime_matrix
from advisor.planner.cluster.nodes import build_cluster
from advisor.planner.cluster.predictive_sampler import PredictiveSampler
from advisor.planner.scheduling import heft
from advisor.planner.scheduling.problem import Node
from advisor.planner.scheduling.ranks import mean_comm
from advisor.planner.scheduling.uncertainty import makespan_distribution, sample_makespans
from advisor.planner.workflow.build import to_problem
from advisor.planner.workflow.network import bandwidth_matrix
from advisor.planner.workflow.workflow import DataFile, Task, Workflow
from advisor.slurm.records import Node as SlurmNode
from advisor.slurm.records import Partition
from advisor.store.connection import Store
from tests.helpers.caches import NODES, PARTITIONS, train


@dataclass
class FakeModels:
    """Predictions per (task, class), factors per (origin, target), machines' classes."""

    predictions: dict[tuple[str, str], Predictive] = field(default_factory=dict)
    factors: dict[tuple[str, str], float] = field(default_factory=dict)
    classes: dict[str, str] = field(default_factory=dict)
    asked: list[tuple[str, int | None, str]] = field(default_factory=list)

    def predict(
        self, task: str, input_bytes: int | None, node_class: str
    ) -> tuple[Predictive, str] | None:
        self.asked.append((task, input_bytes, node_class))
        found = self.predictions.get((task, node_class))
        return None if found is None else (found, "online")

    def factor(self, task: str, origin: str, target: str) -> float | None:
        return self.factors.get((origin, target))

    def class_of(self, machine: str) -> str | None:
        return self.classes.get(machine)


def workflow(*tasks: Task) -> Workflow:
    files = {"big": DataFile("big", 3_000), "mid": DataFile("mid", 500), "out": DataFile("out", 7)}
    return Workflow("w", tasks, files=files, source="w.json")


def test_a_model_prediction_wins_and_gets_the_input_file_sizes() -> None:
    models = FakeModels(predictions={("align", "small"): predictive(40.0, 2.0, 5.0)})
    flow = workflow(
        Task("a1", "a1", input_files=("big", "mid"), runtime_s=99.0, model_name="align")
    )
    matrix = runtime_matrix(flow, ("small",), models)
    cell = matrix.cell(0, "small")
    assert cell is not None and cell.runtime_s == 40.0 and cell.source == "model:online"
    assert cell.predictive is not None and cell.predictive.scale_s == 2.0
    assert models.asked == [("align", 3_500, "small")]


def test_a_task_without_input_files_asks_with_no_size() -> None:
    models = FakeModels(predictions={("t", "small"): predictive(5.0, 0.0, 3.0)})
    runtime_matrix(workflow(Task("t", "t")), ("small",), models)
    assert models.asked == [("t", None, "small")]


def test_recorded_runtime_is_carried_over_by_the_node_factor() -> None:
    models = FakeModels(factors={("small", "big"): 0.5}, classes={"c1": "small", "f1": "big"})
    flow = workflow(Task("t", "t", runtime_s=30.0, machines=("c1",)))
    matrix = runtime_matrix(flow, ("small", "big", "odd"), models)
    cells = [matrix.cell(0, c) for c in ("small", "big", "odd")]
    assert [(c.runtime_s, c.source) for c in cells if c] == [
        (30.0, "recorded"),
        (15.0, "recorded×factor"),
        (30.0, "recorded, no factor"),
    ]


def test_a_machine_outside_the_cluster_keeps_its_recorded_runtime() -> None:
    flow = workflow(Task("t", "t", runtime_s=12.0, machines=("elsewhere",)))
    matrix = runtime_matrix(flow, ("small", "big"), FakeModels())
    assert {matrix.cell(0, c).source for c in ("small", "big")} == {"recorded, no factor"}  # type: ignore[union-attr]


def test_a_task_with_neither_model_nor_runtime_is_named() -> None:
    flow = workflow(Task("ok", "ok", runtime_s=1.0), Task("lost_7", "lost", model_name="bwa"))
    with pytest.raises(InputError, match=r"w.json: task 'lost_7': no runtime model of 'bwa'"):
        runtime_matrix(flow, ("small", "big"), FakeModels())


def test_a_class_without_an_estimate_is_closed_to_the_task() -> None:
    models = FakeModels(predictions={("t", "small"): predictive(8.0, 1.0, 4.0)})
    matrix = runtime_matrix(workflow(Task("t", "t")), ("small", "big"), models)
    nodes = (Node("c1", 2, "small"), Node("f1", 8, "big"), Node("c2", 2, "small"))
    assert matrix.on_nodes(nodes).tolist() == [[8.0, np.inf, 8.0]]


def test_communication_costs_bytes_over_bandwidth_and_nothing_within_a_shared_class() -> None:
    nodes = (Node("c1", 2, "small"), Node("c2", 2, "small"), Node("f1", 8, "big"))
    flow = workflow(
        Task("p", "p", output_files=("mid",), runtime_s=1.0),
        Task("c", "c", parents=("p",), input_files=("mid",), runtime_s=1.0),
    )
    plain = to_problem(flow, nodes, [1.0, 1.0], 100.0)
    shared = to_problem(flow, nodes, [1.0, 1.0], 100.0, shared_fs=True)
    assert plain.comm_s(500, 0, 1) == plain.comm_s(500, 0, 2) == 5.0
    assert shared.comm_s(500, 0, 1) == 0.0 and shared.comm_s(500, 0, 2) == 5.0
    assert shared.comm_s(500, 1, 1) == plain.comm_s(500, 2, 2) == 0.0
    assert to_problem(flow, nodes, [1.0, 1.0]).comm_s(500, 0, 2) == 0.0  # no bandwidth: free
    # the mean transfer time per byte over the 6 links: 2 free, 4 at 1/100
    assert mean_comm(shared) == (0.0, pytest.approx(4 / 6 / 100))
    assert mean_comm(plain) == (0.0, pytest.approx(1 / 100))
    with pytest.raises(InputError, match="--bandwidth must be positive"):
        bandwidth_matrix(nodes, 0.0)


def test_shared_fs_lets_heft_keep_a_chain_inside_a_class() -> None:
    nodes = (Node("a1", 1, "a"), Node("a2", 1, "a"), Node("b1", 1, "b"))
    flow = workflow(
        Task("p", "p", output_files=("big",), runtime_s=1.0),
        Task("c1", "c1", parents=("p",), input_files=("big",), runtime_s=4.0),
        Task("c2", "c2", parents=("p",), input_files=("big",), runtime_s=4.0),
    )
    plan = heft.schedule(to_problem(flow, nodes, [1.0, 4.0, 4.0], 100.0, shared_fs=True))
    assert {plan.problem.nodes[p.node].node_class for p in plan.placements} == {"a"}
    assert plan.makespan_s == 5.0  # both children start at 1 on a1 and a2, no transfer


def test_predictive_sampler_draws_student_t_where_a_model_spoke() -> None:
    models = FakeModels(predictions={("m", "small"): predictive(100.0, 10.0, 1e8)})
    flow = workflow(Task("m", "m"), Task("r", "r", runtime_s=50.0))
    nodes = (Node("c1", 2, "small"),)
    matrix = runtime_matrix(flow, ("small",), models)
    sampler = PredictiveSampler.from_matrices([matrix], nodes, cv=0.0)
    draws = sampler.sample(
        np.array([0, 1]),
        np.array([0, 0]),
        np.array([100.0, 50.0]),
        np.random.default_rng(1),
        20_000,
    )
    assert draws[0].mean() == pytest.approx(100.0, rel=0.01)
    assert draws[0].std() == pytest.approx(10.0, rel=0.05)  # dof 1e8: the normal's spread
    assert np.all(draws[1] == 50.0)  # no model, cv 0: exactly the recorded runtime


def test_exact_models_give_the_planned_makespan_and_spread_widens_it() -> None:
    nodes = (Node("c1", 1, "small"),)
    exact = FakeModels(predictions={(t, "small"): predictive(10.0, 0.0, 5.0) for t in "ab"})
    loose = FakeModels(predictions={(t, "small"): predictive(10.0, 3.0, 5.0) for t in "ab"})
    flow = workflow(Task("a", "a"), Task("b", "b", parents=("a",)))
    for models, wide in ((exact, False), (loose, True)):
        matrix = runtime_matrix(flow, ("small",), models)
        plan = heft.schedule(to_problem(flow, nodes, matrix.on_nodes(nodes)))
        sampler = PredictiveSampler.from_matrices([matrix], nodes, cv=0.0)
        spread = makespan_distribution(plan, sampler, samples=300, seed=2)
        assert plan.makespan_s == 20.0
        assert (spread.p95_s > 22.0) is wide
        assert spread.p50_s == pytest.approx(20.0, abs=1.0)
        again = sample_makespans(plan, sampler, samples=50, seed=2)
        assert np.array_equal(again, sample_makespans(plan, sampler, samples=50, seed=2))


def test_cache_models_predict_exactly_what_the_wrapper_forecasts(tmp_path: Path) -> None:
    cache = train(tmp_path / "cache.db", "align", PARTITIONS, NODES)
    with Store.open(cache, readonly=True) as store:
        snapshot = load_snapshot(store, ("align",))
    models = CacheModels.from_snapshot(snapshot, frozenset({"c1", "c2", "f1"}))
    for node_class in ("small", "big"):
        for size in (10**9, None):
            found = models.predict("align", size, node_class)
            wrapper = snapshot.predictor.forecast("align", size, node_class, 0.95)
            assert found is not None and wrapper is not None
            assert found[0].mean_s == wrapper.mean_s and found[0].p95_s == wrapper.p95_s
    assert models.predict("unknown", 10, "small") is None
    assert models.class_of("f1") == "big" and models.class_of("elsewhere") is None
    assert models.factor("other", "small", "small") == 1.0


def test_cluster_view_orders_partitions_and_leaves_out_unusable_nodes() -> None:
    partitions = [
        Partition("long", ("c1", "c2"), None, None, False, "UP"),
        Partition("cpu", ("c1", "c2"), 86400, 1800, True, "UP"),
        Partition("fat", ("f1",), 3600, 3600, False, "UP"),
        Partition("old", ("o1",), 3600, 3600, False, "DOWN"),
    ]
    nodes = [
        SlurmNode("c1", 2, 4000, ("cpu",), ("cpu", "long"), "IDLE"),
        SlurmNode("c2", 2, 4000, ("cpu",), ("cpu", "long"), "IDLE+DRAIN"),
        SlurmNode("f1", 8, 64000, ("fat",), ("fat",), "MIXED"),
        SlurmNode("o1", 4, 64000, (), ("old",), "IDLE"),
    ]
    cluster = build_cluster(partitions, nodes, {"c1": "small", "c2": "small"})
    assert [p.name for p in cluster.partitions] == ["cpu", "fat", "long"]  # default first, UP only
    assert [(n.name, n.cores, n.node_class) for n in cluster.planning_nodes()] == [
        ("c1", 2, "small"),
        ("f1", 8, "f1"),  # a node without a class is its own
    ]
    assert [p.name for p in cluster.partitions_of("c1")] == ["cpu", "long"]
    chosen = build_cluster(partitions, nodes, {}, ("fat", "old"))
    assert [n.name for n in chosen.nodes] == ["f1", "o1"]  # asked for: even a DOWN partition
    with pytest.raises(InputError, match="unknown partition 'gpu'"):
        build_cluster(partitions, nodes, {}, ("gpu",))
    with pytest.raises(InputError, match="no usable node"):
        build_cluster(partitions[:1], nodes[1:2], {}, ("long",))
