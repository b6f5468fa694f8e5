"""The plain-Python model math: linear algebra, Student-t quantiles, conjugate online updates."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.models.bayes import LinearModel, NigPrior, SufficientStats, nig_posterior
from advisor.models.distributions import student_t_cdf, student_t_ppf
from advisor.models.features import X_UNIT_BYTES, features, size_parallel_features
from advisor.models.linalg import cholesky, diagonal, inverse_spd, matvec, outer, solve_spd


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


def test_cholesky_solve_and_inverse() -> None:
    m = ((4.0, 2.0, 0.6), (2.0, 2.0, 0.5), (0.6, 0.5, 3.0))
    low = cholesky(m)
    rebuilt = [sum(low[i][k] * low[j][k] for k in range(3)) for i in range(3) for j in range(3)]
    assert rebuilt == pytest.approx([v for row in m for v in row])
    x = solve_spd(m, (1.0, 2.0, 3.0))
    assert matvec(m, x) == pytest.approx((1.0, 2.0, 3.0))
    inv = inverse_spd(m)
    product = [v for col in zip(*inv, strict=True) for v in matvec(m, col)]
    assert product == pytest.approx([1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0], abs=1e-12)
    with pytest.raises(ValueError, match="positive definite"):
        cholesky(((1.0, 2.0), (2.0, 1.0)))


runs = st.lists(st.tuples(st.floats(0, 50e9), st.floats(0.1, 1e5)), min_size=1, max_size=30)


@settings(max_examples=50)
@given(runs)
def test_statistics_are_order_free_and_match_the_batch_products(
    data: list[tuple[float, float]],
) -> None:
    forward = SufficientStats.empty(2)
    for x, y in data:
        forward = forward.add(features("size", x), y)
    backward = SufficientStats.empty(2)
    for x, y in reversed(data):
        backward = backward.add(features("size", x), y)
    hth = [
        sum(features("size", x)[i] * features("size", x)[j] for x, _ in data)
        for i in range(2)
        for j in range(2)
    ]
    assert [v for r in forward.hth for v in r] == pytest.approx(hth, rel=1e-9)
    assert [v for r in backward.hth for v in r] == pytest.approx(hth, rel=1e-9)
    assert forward.hty == pytest.approx(backward.hty, rel=1e-9)
    assert forward.n == len(data)
    assert forward.syy == pytest.approx(sum(y * y for _, y in data), rel=1e-9)
    assert SufficientStats.from_json(forward.to_json()) == forward
    batch = SufficientStats.empty(2).add_many((features("size", x), y) for x, y in data)
    assert [v for r in batch.hth for v in r] == pytest.approx(hth, rel=1e-9)
    assert batch.hty == pytest.approx(forward.hty, rel=1e-9)
    assert (batch.n, batch.syy) == (forward.n, pytest.approx(forward.syy, rel=1e-9))


def _weak_prior(k: int) -> NigPrior:
    return NigPrior((0.0,) * k, diagonal([1e-9] * k), 1e-6, 1e-6)


def test_weak_prior_posterior_is_least_squares() -> None:
    rng = random.Random(1)
    stats = SufficientStats.empty(2)
    xs = [rng.uniform(0.1, 20) * X_UNIT_BYTES for _ in range(40)]
    for x in xs:
        stats = stats.add(features("size", x), 12.0 + 3.5 * x / X_UNIT_BYTES + rng.gauss(0, 0.5))
    post = nig_posterior(_weak_prior(2), stats)
    assert post.mean[0] == pytest.approx(12.0, abs=0.5)
    assert post.mean[1] == pytest.approx(3.5, abs=0.05)
    # The noise estimate converges to the true variance (0.25), so the P90 is about 1.28σ out.
    pred = post.predict(features("size", 10 * X_UNIT_BYTES))
    assert pred.p90_s - pred.p50_s == pytest.approx(1.29 * 0.5, rel=0.3)


def test_incremental_updates_equal_one_batch_update() -> None:
    prior = NigPrior((10.0, 2.0), ((0.5, 0.1), (0.1, 2.0)), 3.0, 6.0)
    data = [(1e9, 13.0), (5e9, 21.5), (0.2e9, 10.1)]
    one_by_one = SufficientStats.empty(2)
    posts = []
    for x, y in data:
        one_by_one = one_by_one.add(features("size", x), y)
        posts.append(nig_posterior(prior, one_by_one))
    # The batch posterior, with the normal equations written out by hand.
    h = [features("size", x) for x, _ in data]
    lam = [
        [prior.precision[i][j] + sum(r[i] * r[j] for r in h) for j in range(2)] for i in range(2)
    ]
    rhs = [
        sum(prior.precision[i][j] * prior.mean[j] for j in range(2))
        + sum(r[i] * y for r, (_, y) in zip(h, data, strict=True))
        for i in range(2)
    ]
    det = lam[0][0] * lam[1][1] - lam[0][1] * lam[1][0]
    mean = (
        (lam[1][1] * rhs[0] - lam[0][1] * rhs[1]) / det,
        (lam[0][0] * rhs[1] - lam[1][0] * rhs[0]) / det,
    )
    assert posts[-1].mean == pytest.approx(mean, rel=1e-9)
    assert posts[-1].a == prior.a + 1.5
    assert posts[-1].b > prior.b


def test_sadjadi_product_form_recovers_the_parallel_part() -> None:
    """T = (1 + 9/p)(2 + 4·GB): overhead and work both split over p cores (Sadjadi Eq. 4)."""
    stats = SufficientStats.empty(4)
    for cores in (1, 2, 4, 8):
        for gb in (0.5, 1, 2, 4):
            stats = stats.add(
                size_parallel_features(gb * X_UNIT_BYTES, cores), (1 + 9 / cores) * (2 + 4 * gb)
            )
    post = nig_posterior(_weak_prior(4), stats)
    assert post.mean == pytest.approx((2.0, 4.0, 18.0, 36.0), abs=1e-3)
    assert post.predict(size_parallel_features(3e9, 16)).mean_s == pytest.approx(
        (1 + 9 / 16) * 14, rel=1e-4
    )


def test_linear_model_predictive_widens_with_distance() -> None:
    model = LinearModel((1.0, 2.0), ((0.01, 0.0), (0.0, 0.04)), 0.25, 8)
    near, far = model.predict((1.0, 1.0)), model.predict((1.0, 10.0))
    assert near.mean_s == pytest.approx(3.0)
    assert far.p95_s - far.mean_s > near.p95_s - near.mean_s
    assert near.p50_s <= near.p90_s <= near.p95_s
    assert math.isclose(near.p90_s, near.quantile_s(0.9))


def test_outer_and_negative_predictions_clip_at_zero() -> None:
    assert outer((1.0, 2.0), (3.0, 4.0)) == ((3.0, 4.0), (6.0, 8.0))
    pred = LinearModel((-5.0, 0.0), ((0.0, 0.0), (0.0, 0.0)), 1.0, 5).predict((1.0, 0.0))
    assert pred.mean_s == 0.0
    assert pred.p50_s == 0.0
