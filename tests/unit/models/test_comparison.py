"""advisor.models.comparison: the advisor beside a baseline, tasks resampled."""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.models.comparison import comparisons, paired, weighted_medians
from advisor.models.evaluation import method_of, runs_seen, with_runs


@dataclass(frozen=True)
class Made:
    method: str
    task: str
    run: int
    error: float
    scope: str = "heterogeneous"


@given(
    st.lists(
        st.tuples(st.floats(0, 10, allow_nan=False), st.integers(0, 4)), min_size=1, max_size=30
    ).filter(lambda rows: sum(w for _, w in rows) > 0)
)
@settings(max_examples=200, deadline=None)
def test_the_weighted_median_is_the_median_of_the_repeated_values(
    rows: list[tuple[float, int]],
) -> None:
    rows = sorted(rows)
    values = np.asarray([v for v, _ in rows])
    weights = np.asarray([w for _, w in rows])
    expanded = [v for v, w in rows for _ in range(w)]
    assert weighted_medians(values, weights[None, :])[0] == pytest.approx(
        statistics.median(expanded)
    )


def test_runs_seen_reads_the_methods_suffix() -> None:
    assert [runs_seen(m) for m in ("advisor", "probe+1run", "probe-line+3runs", "median")] == [
        0, 1, 3, 0,
    ]  # fmt: skip
    assert [runs_seen(with_runs("advisor", k)) for k in (1, 2, 12)] == [1, 2, 12]
    assert [method_of(with_runs(m, 2)) for m in ("advisor", "probe-line")] == [
        "advisor",
        "probe-line",
    ]
    assert method_of("median") == "median"


def test_a_method_half_as_wrong_on_every_run_reads_half_with_no_doubt() -> None:
    rng = random.Random(3)
    theirs = [rng.uniform(0.1, 2.0) for _ in range(200)]
    tasks = [i % 20 for i in range(200)]
    found = paired("advisor", "median", None, [e / 2 for e in theirs], theirs, tasks)
    assert found.ratio == pytest.approx(0.5)
    assert found.low == pytest.approx(0.5) and found.high == pytest.approx(0.5)
    assert (found.n, found.tasks, found.closer) == (200, 20, 1.0)


def test_the_same_predictions_read_one_and_ties_count_half() -> None:
    errors = [0.1 * (i + 1) for i in range(50)]
    found = paired("advisor+1run", "probe+1run", None, errors, errors, [i % 5 for i in range(50)])
    assert (found.ratio, found.low, found.high, found.closer) == (1.0, 1.0, 1.0, 0.5)


def test_a_lead_that_rests_on_one_task_is_not_sure() -> None:
    """Nine tasks where both err alike, one where the baseline errs wildly: the pooled ratio
    is below 1, but a site without that task would see none of it; the interval says so."""
    rng = random.Random(5)
    mine, theirs, tasks = [], [], []
    for task in range(10):
        for _ in range(30):
            error = rng.uniform(0.05, 0.5)
            mine.append(error)
            theirs.append(error * (8.0 if task == 0 else rng.uniform(0.9, 1.1)))
            tasks.append(task)
    found = paired("advisor", "paper", None, mine, theirs, tasks)
    assert found.ratio is not None and found.ratio < 1.0
    assert found.low is not None and found.high is not None
    assert found.low < found.ratio and found.high >= 1.0


def test_methods_are_paired_on_the_runs_both_predicted_and_as_many_runs_seen() -> None:
    made = [Made("advisor", f"t{t}", r, 0.1) for t in range(3) for r in range(4)]
    made += [Made("median", f"t{t}", r, 0.2) for t in range(3) for r in range(3)]  # no run 3
    made += [Made("advisor+1run", f"t{t}", r, 0.1) for t in range(3) for r in range(1, 4)]
    made += [Made("probe+1run", f"t{t}", r, 0.1) for t in range(3) for r in range(1, 4)]
    made += [Made("advisor", "t0", 0, 0.3, scope="homogeneous")]
    found = comparisons(
        made, key=lambda s: (s.task, s.run), task=lambda s: s.task, scope=lambda s: s.scope
    )
    pairs = {(c.scope, c.method, c.against): c for c in found}
    # nothing beside the homogeneous advisor: no other method there; the advisor is never a
    # baseline of its own, nor a method beside one that saw another number of runs
    assert set(pairs) == {
        ("heterogeneous", "advisor", "median"),
        ("heterogeneous", "advisor+1run", "probe+1run"),
    }
    median = pairs[("heterogeneous", "advisor", "median")]
    assert (median.n, median.tasks, median.ratio, median.closer) == (9, 3, 0.5, 1.0)
    assert pairs[("heterogeneous", "advisor+1run", "probe+1run")].n == 9


def test_a_baseline_that_never_errs_has_no_ratio() -> None:
    found = paired("advisor", "median", None, [0.1, 0.2], [0.0, 0.0], ["a", "b"])
    assert (found.ratio, found.low, found.high, found.closer) == (None, None, None, 0.0)
