"""The plain-Python model math: Student-t quantiles, Lotaru's fitted regression."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.models.bayes import LinearModel
from advisor.models.distributions import log_predictive, student_t_cdf, student_t_ppf


@pytest.mark.parametrize(
    ("q", "dof", "expected"),
    [  # textbook t-table values
        (0.95, 1, 6.313752),
        (0.975, 1, 12.706205),
        (0.95, 5, 2.015048),
        (0.90, 10, 1.372184),
        (0.99, 30, 2.457262),
        (0.05, 8, -1.859548),
        (0.5, 3, 0.0),
        (0.95, 1e9, 1.644854),
    ],
)
def test_t_quantiles(q: float, dof: float, expected: float) -> None:
    assert student_t_ppf(q, dof) == pytest.approx(expected, abs=2e-6)


@given(st.floats(0.001, 0.999), st.sampled_from([1, 2, 3, 7, 20, 100]))
def test_t_cdf_inverts_the_quantile(q: float, dof: int) -> None:
    assert student_t_cdf(student_t_ppf(q, dof), dof) == pytest.approx(q, abs=1e-8)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1])
def test_t_quantile_outside_unit_interval(bad: float) -> None:
    with pytest.raises(ValueError, match="outside"):
        student_t_ppf(bad, 5)


def test_linear_model_predictive_widens_with_distance() -> None:
    model = LinearModel((1.0, 2.0), ((0.01, 0.0), (0.0, 0.04)), 0.25, 8)
    near, far = model.predict((1.0, 1.0)), model.predict((1.0, 10.0))
    assert near.mean_s == pytest.approx(3.0)
    assert far.p95_s - far.mean_s > near.p95_s - near.mean_s
    assert near.p50_s <= near.p90_s <= near.p95_s
    assert math.isclose(near.p90_s, near.quantile_s(0.9))


def test_raw_scale_predictions_clip_at_zero() -> None:
    pred = LinearModel((-5.0, 0.0), ((0.0, 0.0), (0.0, 0.0)), 1.0, 5).predict((1.0, 0.0))
    assert pred.mean_s == 0.0
    assert pred.p50_s == 0.0


@given(
    loc=st.floats(-30, 30),
    scale=st.floats(0, 5),
    dof=st.floats(0.5, 1e6),
    q=st.floats(0.01, 0.99),
)
@settings(max_examples=200, deadline=None)
def test_log_predictive_is_positive_and_ordered(
    loc: float, scale: float, dof: float, q: float
) -> None:
    pred = log_predictive(loc, scale, dof)
    assert 0 < pred.p50_s <= pred.p90_s <= pred.p95_s
    assert pred.quantile_s(q) > 0
    assert pred.p50_s == pytest.approx(math.exp(loc))
    assert pred.quantile_s(0.9) == pytest.approx(pred.p90_s)
