"""Node classes: equal hardware and features, one class; stored in nodes.node_class."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from advisor.profiling.classes import NodeHardware, assign_classes, class_name, refresh_node_classes
from advisor.slurm.records import Node, Partition
from advisor.store import Store
from advisor.store.benchmarks import BenchRun, Measurement, save_bench_run
from advisor.store.cluster import save_cluster
from advisor.store.node_classes import load_node_classes

XEON = "Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz"


def hw(
    name: str,
    cpus: int = 2,
    memory_mb: int = 4000,
    features: tuple[str, ...] = ("cpu", "intel"),
    model: str | None = XEON,
) -> NodeHardware:
    return NodeHardware(name, cpus, memory_mb, features, model)


def test_class_name_says_features_shape_and_cpu() -> None:
    assert class_name(hw("c1")) == "cpu+intel-2c-4000m-intel-xeon-gold-6130-2.10ghz"
    assert class_name(hw("x", features=(), model=None)) == "plain-2c-4000m"


def test_equal_hardware_one_class_different_hardware_another() -> None:
    classes = assign_classes(
        [
            hw("c1"),
            hw("c2"),
            hw("c3", features=("intel", "cpu")),  # feature order does not matter
            hw("f1", cpus=8, memory_mb=64000, features=("fat",)),
            hw("c4", model="AMD EPYC 7742 64-Core Processor"),
            hw("c5", model=None),
        ]
    )
    assert classes["c1"] == classes["c2"] == classes["c3"]
    assert len({classes[n] for n in ("c1", "f1", "c4", "c5")}) == 4


def test_hardware_that_slugs_alike_still_gets_distinct_classes() -> None:
    classes = assign_classes([hw("a", model="X (R) 1"), hw("b", model="X 1")])
    assert classes["a"] != classes["b"]
    assert classes["a"].startswith("cpu+intel-2c-4000m-x-1-")


names = st.text(alphabet="abc", min_size=1, max_size=3)


@given(
    st.lists(
        st.tuples(
            st.sampled_from([1, 2]),
            st.sampled_from([("a",), ("b",), ()]),
            st.sampled_from([None, "m1", "m2"]),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_same_class_exactly_when_same_key(
    specs: list[tuple[int, tuple[str, ...], str | None]],
) -> None:
    nodes = [hw(f"n{i}", cpus=c, features=f, model=m) for i, (c, f, m) in enumerate(specs)]
    classes = assign_classes(nodes)
    for left in nodes:
        for right in nodes:
            assert (classes[left.name] == classes[right.name]) == (left.key() == right.key())


def test_refresh_stores_classes_using_the_benchmarked_cpu_model() -> None:
    store = Store.open(":memory:")
    nodes = [Node(n, 2, 4000, ("cpu",), ("cpu",), "IDLE") for n in ("c1", "c2")]
    save_cluster(store, [Partition("cpu", ("c1", "c2"), None, None, True, "UP")], nodes)
    before = refresh_node_classes(store)
    assert before["c1"] == before["c2"] == "cpu-2c-4000m"
    save_bench_run(
        store,
        BenchRun(
            "c2",
            "builtin",
            "profile",
            {"io_score": Measurement(1.0)},
            hardware={"cpu_model": "AMD EPYC"},
        ),
    )
    refresh_node_classes(store)
    stored = load_node_classes(store)
    assert stored == {"c1": "cpu-2c-4000m", "c2": "cpu-2c-4000m-amd-epyc"}
