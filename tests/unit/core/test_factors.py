"""Lotaru's node ratios and task factor (advisor/factors.py), on the paper's own numbers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.errors import InputError
from advisor.factors import NodeRatios, node_ratios, task_factor

# Lotaru (SSDBM 2022) Table 2, as in tests/data/imports/lotaru-table2/nodes.json.
LOCAL = {
    "cpu_single_events_s": 458,
    "linpack_kflops": 3959800,
    "memory_score": 18600,
    "io_score": 415,
}
A1 = {"cpu_single_events_s": 223, "io_score": 303}  # LINPACK and memory failed on A1
N1 = {"cpu_single_events_s": 369, "linpack_kflops": 3620426, "memory_score": 13400, "io_score": 483}


def test_a1_cpu_ratio_uses_sysbench_alone_where_linpack_failed() -> None:
    ratios = node_ratios(LOCAL, A1)
    assert ratios.cpu == pytest.approx(458 / 223)
    assert ratios.cpu == pytest.approx(2.05, abs=0.005)
    assert ratios.io == pytest.approx(415 / 303)
    assert ratios.memory is None


def test_cpu_ratio_is_the_mean_of_the_available_cpu_benchmarks() -> None:
    ratios = node_ratios(LOCAL, N1)
    assert ratios.cpu == pytest.approx((458 / 369 + 3959800 / 3620426) / 2)
    assert ratios.io == pytest.approx(415 / 483)
    assert ratios.memory == pytest.approx(18600 / 13400)


def test_a_node_against_itself_has_ratio_one() -> None:
    assert node_ratios(LOCAL, LOCAL) == NodeRatios(cpu=1.0, io=1.0, memory=1.0)


def test_no_common_benchmark_gives_none() -> None:
    assert node_ratios({"io_score": 1.0}, {"cpu_single_events_s": 2.0}) == NodeRatios(
        None, None, None
    )


def test_own_benchmarks_feed_the_io_ratio() -> None:
    ref = {"seq_read_mib_s": 200.0, "seq_write_mib_s": 100.0, "rand_read_iops": 1000.0}
    target = {"seq_read_mib_s": 100.0, "seq_write_mib_s": 100.0, "rand_read_iops": 500.0}
    assert node_ratios(ref, target).io == pytest.approx((2 + 1 + 2) / 3)


@pytest.mark.parametrize("bad", [0.0, -458.0])
def test_non_positive_scores_are_input_errors(bad: float) -> None:
    with pytest.raises(InputError, match="cpu_single_events_s"):
        node_ratios(LOCAL, {"cpu_single_events_s": bad})


def test_paper_table_1_example_factor() -> None:
    # Lotaru Table 1 style: w = 0.8, F = 0.8 * cpu + 0.2 * io.
    ratios = node_ratios(LOCAL, A1)
    assert task_factor(ratios, 0.8) == pytest.approx(0.8 * 458 / 223 + 0.2 * 415 / 303)


def test_weight_one_is_the_cpu_ratio_and_zero_the_io_ratio() -> None:
    ratios = NodeRatios(cpu=2.0, io=1.5, memory=None)
    assert task_factor(ratios, 1.0) == 2.0
    assert task_factor(ratios, 0.0) == 1.5


def test_a_missing_ratio_counts_as_no_change() -> None:
    assert task_factor(NodeRatios(cpu=None, io=2.0, memory=None), 0.5) == pytest.approx(1.5)
    assert task_factor(NodeRatios(cpu=3.0, io=None, memory=None), 0.5) == pytest.approx(2.0)


@pytest.mark.parametrize("weight", [-0.01, 1.01])
def test_weight_outside_unit_interval_is_refused(weight: float) -> None:
    with pytest.raises(ValueError, match="outside"):
        task_factor(NodeRatios(1.0, 1.0, None), weight)


ratio = st.floats(min_value=0.01, max_value=100, allow_nan=False)


@given(cpu=ratio, io=ratio, weight=st.floats(min_value=0, max_value=1))
def test_factor_lies_between_the_two_ratios(cpu: float, io: float, weight: float) -> None:
    factor = task_factor(NodeRatios(cpu, io, None), weight)
    assert min(cpu, io) - 1e-9 <= factor <= max(cpu, io) + 1e-9


@given(
    ref=st.floats(min_value=1, max_value=1e6),
    target=st.floats(min_value=1, max_value=1e6),
)
def test_ratios_are_reciprocal(ref: float, target: float) -> None:
    forward = node_ratios({"io_score": ref}, {"io_score": target}).io
    backward = node_ratios({"io_score": target}, {"io_score": ref}).io
    assert forward is not None and backward is not None
    assert forward * backward == pytest.approx(1.0)
