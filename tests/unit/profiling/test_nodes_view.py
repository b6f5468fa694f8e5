"""``advisor nodes``: scores, ratios, ages and classes out of the cache."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from advisor.cli.nodes_cmd import _result
from advisor.errors import InputError
from advisor.profiling.nodes_view import load_nodes_view, nodes_view
from advisor.slurm.records import Node, Partition
from advisor.store import Store
from advisor.store.benchmarks import BenchRun, Measurement, save_bench_run
from advisor.store.cluster import save_cluster
from advisor.validate import validate

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def run(node: str, when: str, tool: str = "builtin", **scores: float) -> BenchRun:
    return BenchRun(
        node,
        tool,
        "profile",
        {m: Measurement(v) for m, v in scores.items()},
        hardware={"cpu_model": "AMD EPYC"},
        measured_at=when,
    )


@pytest.fixture
def store() -> Store:
    store = Store.open(":memory:")
    nodes = [
        Node("c1", 2, 4000, ("cpu",), ("cpu",), "IDLE"),
        Node("c2", 2, 4000, ("cpu",), ("cpu",), "IDLE"),
        Node("c3", 2, 4000, ("cpu",), ("cpu",), "IDLE"),
        Node("f1", 8, 64000, ("fat",), ("fat",), "IDLE"),
    ]
    save_cluster(
        store,
        [
            Partition("cpu", ("c1", "c2", "c3"), None, None, True, "UP"),
            Partition("fat", ("f1",), None, None, False, "UP"),
        ],
        nodes,
    )
    save_bench_run(
        store, run("c1", "2026-11-29T10:00:00+00:00", cpu_single_events_s=100, seq_read_mib_s=50)
    )
    save_bench_run(
        store, run("c1", "2026-11-29T11:00:00+00:00", cpu_single_events_s=200, seq_read_mib_s=100)
    )
    save_bench_run(
        store, run("c2", "2026-11-29T11:59:00+00:00", cpu_single_events_s=100, seq_read_mib_s=100)
    )
    save_bench_run(
        store, run("f1", "2026-11-27T12:00:00+00:00", cpu_single_events_s=400, seq_read_mib_s=25)
    )
    return store


def test_ratios_ages_and_history(store: Store) -> None:
    view = nodes_view(store, reference="c1", now=NOW)
    validate(view, "nodes-output", source="view")
    rows = {row["name"]: row for row in view["nodes"]}
    assert rows["c1"]["scores"] == {"cpu_single_events_s": 200, "seq_read_mib_s": 100}  # newest run
    assert rows["c1"]["age_s"] == 3600 and rows["f1"]["age_s"] == 2 * 86400
    assert rows["c2"]["ratios"] == {"cpu": 2.0, "io": 1.0, "memory": None}
    assert rows["f1"]["ratios"] == {"cpu": 0.5, "io": 4.0, "memory": None}
    assert (
        rows["c3"]["scores"] == {} and rows["c3"]["ratios"] is None and rows["c3"]["age_s"] is None
    )


def test_classes_group_equal_hardware_and_take_medians(store: Store) -> None:
    view = nodes_view(store, reference="c1", now=NOW)
    classes = {row["name"]: row for row in view["classes"]}
    cpu_class = next(c for c in classes.values() if "c1" in c["nodes"])
    # c3 was never benchmarked, so it has no CPU model yet: a class of its own until profiled.
    assert cpu_class["nodes"] == ["c1", "c2"] and cpu_class["profiled"] == 2
    assert cpu_class["scores"] == {"cpu_single_events_s": 150.0, "seq_read_mib_s": 100.0}
    assert cpu_class["ratios"]["cpu"] == pytest.approx(200 / 150)
    assert len(classes) == 3


def test_default_reference_is_the_first_node_with_scores(store: Store) -> None:
    assert nodes_view(store, now=NOW)["reference"] == "c1"


@pytest.mark.parametrize(
    ("reference", "message"),
    [("nosuch", "unknown node 'nosuch'"), ("c3", "'c3' has no benchmark scores")],
)
def test_bad_reference_is_an_input_error(store: Store, reference: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        nodes_view(store, reference=reference, now=NOW)
    assert info.value.exit_code == 2


def test_empty_cache_has_no_reference() -> None:
    view = nodes_view(Store.open(":memory:"), now=NOW)
    assert view == {
        "reference": None,
        "generated_at": "2026-11-29T12:00:00+00:00",
        "nodes": [],
        "classes": [],
    }


def test_table_warns_when_tools_differ(store: Store) -> None:
    save_bench_run(
        store, run("f1", "2026-11-29T11:30:00+00:00", tool="sysbench", cpu_single_events_s=9)
    )
    result = _result(load_nodes_view(store, reference="c1", now=NOW))
    assert any(
        "f1 were measured with another tool than c1 (builtin)" in note for note in result.notes
    )
    assert {row["age"] for row in result.tables[0].rows} >= {"1h", "30m", ""}
