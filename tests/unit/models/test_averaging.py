"""The advisor's model: averaging two explanations, carrying them to a class, its discrepancy."""

from __future__ import annotations

import json
import math
import random
import statistics

import pytest
from jsonschema import Draft202012Validator

from advisor.models.averaging import fit_averaged, linear_probability
from advisor.models.class_model import transferred
from advisor.models.discrepancy import fit_discrepancy, log_likelihood
from advisor.models.distributions import predictive, widened
from advisor.models.evaluation import calibration_runs, probe_prediction
from advisor.models.features import X_UNIT_BYTES, size_features
from advisor.models.lotaru import fit_reference, published
from advisor.models.predict import (
    TaskModels,
    paper_prediction,
    predict_on,
    task_models_from_rows,
    transferred_model,
)
from advisor.models.reference import Component, ReferenceModel, mixture
from advisor.store.observations import Observation
from advisor.validate import schema

GB = X_UNIT_BYTES
XS = [0.01 * GB * 2**i for i in range(10)]  # ten partitions, halving like Lotaru's


def _linear(a: float, b: float, wiggle: float = 0.03) -> list[float]:
    return [(a + b * x / GB) * (1 + (wiggle if i % 2 else -wiggle)) for i, x in enumerate(XS)]


NOISY = [40.0, 90.0, 41.0, 60.0, 39.0, 75.0, 42.0, 50.0, 44.0, 58.0]  # no relation to XS


def test_the_linear_probability_is_the_unit_information_bayes_factor() -> None:
    # log BF = (n/2) log(1/(1 - R²)) - (1/2) log n: at r = 0.8 and ten runs, 0.98
    assert linear_probability(10, 0.64) == pytest.approx(
        1 / (1 + math.exp(-(5 * math.log(1 / 0.36) - 0.5 * math.log(10))))
    )
    assert linear_probability(10, 0.64) == pytest.approx(0.981, abs=0.001)
    assert 0.5 < linear_probability(10, 0.25) < 0.6
    assert linear_probability(10, 0.09) < 0.4
    values = [linear_probability(10, r * r) for r in (0.0, 0.2, 0.4, 0.6, 0.8, 0.95, 1.0)]
    assert values == sorted(values) and values[-1] == 1.0
    assert linear_probability(2, 1.0) == 0.0  # two runs always fit a line


def test_runs_that_follow_the_size_give_the_regression() -> None:
    model = fit_averaged(XS, _linear(10, 30), reference="local")
    assert model.kind == "regression" and model.weight() > 0.999
    paper = fit_reference(XS, _linear(10, 30), reference="local")
    assert model.predict(20 * GB).mean_s == pytest.approx(paper.predict(20 * GB).mean_s, rel=1e-3)
    assert published(model) == paper  # the same components, the paper's switch


def test_runs_that_do_not_follow_the_size_are_mostly_the_median_and_say_so() -> None:
    model = fit_averaged(XS, NOISY, reference="local")
    assert model.kind == "median" and 0.0 < model.weight() < 0.5
    median = statistics.median(NOISY)
    near, far = model.predict(XS[-1]), model.predict(20 * XS[-1])
    assert near.mean_s == pytest.approx(median, rel=0.5)
    # extrapolating, the spread between the two explanations widens the interval
    assert far.p95_s - far.mean_s > 2 * (near.p95_s - near.mean_s)
    assert published(model).kind == "median"
    assert published(model).predict(1e15).mean_s == pytest.approx(median)


def test_a_size_that_never_varies_leaves_the_constant_alone() -> None:
    model = fit_averaged([5 * GB] * 6, [3.0, 4.0, 3.5, 5.0, 2.9, 3.1], reference="local")
    assert model.weight() == 0.0 and model.linear is None
    assert model.predict(5 * GB).mean_s == pytest.approx(3.3)


def test_the_mixture_has_the_moments_of_its_components() -> None:
    a = Component((1.0, 2.0), ((0.5, 0.0), (0.0, 0.1)), 4.0, 8.0)
    b = Component((3.0, 0.0), ((0.2, 0.0), (0.0, 0.0)), 1.0, 9.0)
    both = mixture([(0.25, a), (0.75, b)])
    assert both.mean == pytest.approx((2.5, 0.5))
    # cov = Σ p (Σ + m mᵀ) − mean meanᵀ
    assert both.cov[0][0] == pytest.approx(0.25 * (0.5 + 1) + 0.75 * (0.2 + 9) - 6.25)
    assert both.cov[0][1] == pytest.approx(0.25 * 2 + 0 - 1.25)
    assert both.cov[1][1] == pytest.approx(0.25 * (0.1 + 4) - 0.25)
    assert both.noise_var_s2 == pytest.approx(1.75) and both.dof == pytest.approx(8.75)
    assert mixture([(1.0, a), (0.0, b)]) == a


def test_the_linear_part_moves_by_the_factor_the_constant_stays_with_its_uncertainty() -> None:
    regression = fit_averaged(XS, _linear(10, 30), reference="local")
    constant = fit_averaged(XS, NOISY, reference="local")
    x = 4 * GB
    for factor in (0.5, 2.0):
        moved = transferred(regression, factor, tau=0.0)
        assert moved.mean[1] == pytest.approx(factor * regression.linear.mean[1])  # type: ignore[union-attr]
        kept = transferred(constant._replace(linear_weight=0.0), factor, tau=0.0)
        assert kept.mean == constant.constant.mean  # type: ignore[union-attr]
        # one standard deviation of the constant reaches the scaled value
        centre = constant.constant.mean[0]  # type: ignore[union-attr]
        sd = math.sqrt(kept.cov[0][0] + kept.noise_var_s2)
        assert sd >= abs(math.log(factor)) * centre
    on_class = transferred_model(regression, "fast", 0.5).predict(x)
    assert on_class.mean_s == pytest.approx(0.5 * regression.predict(x).mean_s, rel=1e-6)


def test_the_paper_scales_its_regression_and_not_its_median() -> None:
    regression = fit_reference(XS, _linear(10, 30), reference="local")
    median = fit_reference(XS, NOISY, reference="local")
    x = 4 * GB
    assert paper_prediction(regression, "slow", x, 2.0).mean_s == pytest.approx(
        2 * regression.predict(x).mean_s
    )
    assert paper_prediction(median, "slow", x, 2.0) == median.predict(x)
    rows = [("*", "paper", regression.to_params("paper"))]
    models = task_models_from_rows("t", rows)
    assert models.paper == regression and models.reference is None
    found = predict_on(models, "slow", x, factor=2.0, method="paper")
    assert found.source == "paper" and found.predictive.mean_s == pytest.approx(
        2 * regression.predict(x).mean_s
    )


def test_stored_params_validate_and_round_trip() -> None:
    model = fit_averaged(XS, NOISY, reference="local", discrepancy=0.15)
    online = transferred_model(model, "slow", 2.0).with_runs([(4 * GB, 80.0, 2)])
    validator = Draft202012Validator(schema("task-model"))
    for params in (model.to_params(), published(model).to_params("paper"), online.to_params()):
        assert not list(validator.iter_errors(params))
        json.dumps(params, allow_nan=False)
    assert ReferenceModel.from_params(json.loads(json.dumps(model.to_params()))) == model
    loaded = task_models_from_rows(
        "t", [("*", "lotaru", model.to_params()), ("slow", "online", online.to_params())]
    )
    assert loaded.classes["slow"] == online and loaded.reference == model


def test_older_rows_read_as_the_one_component_their_kind_names() -> None:
    regression = fit_reference(XS, _linear(10, 30), reference="local")
    old = {k: v for k, v in regression.to_params().items() if k != "discrepancy"}
    back = ReferenceModel.from_params(old)
    assert back.weight() == 1.0 and back.discrepancy == 0.0
    assert back.parts()[0] is not None and back.parts()[1] is None


def test_the_discrepancy_widens_every_prediction_in_proportion() -> None:
    base = predictive(100.0, 5.0, 8.0)
    wide = widened(base, 0.2)
    assert wide.scale_s == pytest.approx(math.sqrt(25 + 400)) and wide.loc_s == 100.0
    assert widened(base, 0.0) is base
    model = fit_averaged(XS, _linear(10, 30), reference="local")
    for x in (GB, 40 * GB):
        plain, with_delta = model.predict(x), model._replace(discrepancy=0.1).predict(x)
        assert with_delta.scale_s == pytest.approx(
            math.sqrt(plain.scale_s**2 + (0.1 * plain.loc_s) ** 2)
        )


def test_the_discrepancy_fades_as_runs_on_the_class_accumulate() -> None:
    model = fit_averaged(XS, _linear(10, 30), reference="local", discrepancy=0.15)
    cold = transferred_model(model, "slow", 1.5)
    runs = [(x, 1.5 * (10 + 30 * x / GB), None) for x in XS]
    warm = cold.with_runs(runs * 5)
    x = 8 * GB
    faded = warm.predict(x)
    bare = warm._replace(discrepancy=0.0).predict(x)
    share = warm.prior.a / warm.posterior().a
    assert share < 0.2
    assert faded.scale_s == pytest.approx(
        math.sqrt(bare.scale_s**2 + share * (0.15 * bare.loc_s) ** 2)
    )
    assert faded.p95_s / faded.mean_s < cold.predict(x).p95_s / cold.predict(x).mean_s


def test_the_discrepancy_is_recovered_by_maximum_likelihood() -> None:
    rng = random.Random(3)
    rows = []
    for _ in range(400):
        loc = rng.uniform(10, 1000)
        rows.append((loc * (1 + rng.gauss(0, 0.2)), loc, 0.01 * loc, 30.0))
    found = fit_discrepancy(rows)
    assert found == pytest.approx(0.2, abs=0.03)
    assert log_likelihood(rows, found) >= log_likelihood(rows, 0.1)
    assert log_likelihood(rows, found) >= log_likelihood(rows, 0.3)
    exact = [(loc, loc, 1.0, 30.0) for loc in (10.0, 50.0, 200.0)]
    assert fit_discrepancy(exact) == 0.0  # nothing to explain
    assert fit_discrepancy([]) == 0.0


def _runs(sizes: list[float]) -> list[Observation]:
    return [Observation("t", str(i), "t", 1.0 + i, input_bytes=int(x)) for i, x in enumerate(sizes)]


def test_calibration_runs_are_the_ones_nearest_to_halving_fractions() -> None:
    sizes = [2.0**i for i in range(10)]  # largest 512
    chosen = calibration_runs(_runs(sizes), 3)
    assert [o.input_bytes for o in chosen] == [64, 32, 16]  # 1/8, 1/16, 1/32 of 512
    assert calibration_runs(_runs(sizes[:2]), 3) == calibration_runs(_runs(sizes[:2]), 2)
    assert calibration_runs([], 1) == []


def test_the_plain_probe_ratio_scales_the_papers_local_prediction() -> None:
    paper = fit_reference(XS, _linear(10, 30), reference="local")
    x1 = XS[3]
    observed = 3 * paper.predict(x1).mean_s
    found = probe_prediction(paper, [(x1, observed)], 5 * GB)
    assert found is not None
    assert found.mean_s == pytest.approx(3 * paper.predict(5 * GB).mean_s)
    two = probe_prediction(paper, [(x1, observed), (XS[4], paper.predict(XS[4]).mean_s)], GB)
    ratio = (observed + paper.predict(XS[4]).mean_s) / (
        paper.predict(x1).mean_s + paper.predict(XS[4]).mean_s
    )
    assert two is not None and two.mean_s == pytest.approx(ratio * paper.predict(GB).mean_s)


def test_one_run_moves_the_class_model_toward_it() -> None:
    model = fit_averaged(XS, _linear(10, 30), reference="local", discrepancy=0.15)
    prior = transferred_model(model, "slow", 1.2)
    x1 = XS[6]
    truth = 2.0 * (10 + 30 * x1 / GB)  # the class is twice as slow, not 1.2 times
    after = prior.with_runs([(x1, truth, None)])
    assert abs(after.predict(x1).mean_s - truth) < 0.5 * abs(prior.predict(x1).mean_s - truth)
    h = size_features(x1)
    assert len(h) == 2
    models = TaskModels("t", model, {"slow": after})
    assert predict_on(models, "slow", x1, factor=1.2).source == "online"
