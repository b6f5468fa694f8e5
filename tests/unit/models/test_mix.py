"""One run per task on a class: the plain probe ratio, until the class's evidence favours the model.

Issue 29: the advisor must never do worse than what a user computes by hand.  A task that ran
once on a class whose effect holds no comparison of the ratio with the model predicts exactly
the probe ratio; the class's comparisons move it toward the model as far as they favour it.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import pytest

from advisor.models.evidence import learnt
from advisor.models.pooling import ClassEffect
from advisor.models.predict import TaskModels, predict_on
from advisor.models.task_model import Reference
from advisor.models.updates import learn_run

MB = 1e6
SCALE = math.log(2.0)
KEY = ("a", "b")


#: The task's runs on its reference class a: about 10 s of overhead and 0.05 s per MB, give or
#: take a fifth (noisy enough that one run on b does not make the model the ratio).
RUNS = [
    (x, (10.0 + 0.05 * x) * noise)
    for x, noise in zip((100, 300, 200, 500, 400, 800, 600, 700), (1.2, 0.8) * 4, strict=True)
]
FIT = statistics.linear_regression([x for x, _ in RUNS], [y for _, y in RUNS])


def _line(x_mb: float) -> float:
    """The reference's least-squares line at x_mb, as a user fits it by hand."""
    return FIT.intercept + FIT.slope * x_mb


def _models(effect: dict[str, Any] | None) -> TaskModels:
    """The task learnt on a, and the class effect of b as stored (None: no row for b)."""
    runs = [(x * MB, y) for x, y in RUNS]
    effects = {} if effect is None else {KEY: ClassEffect.from_json(effect)}
    return TaskModels("t", Reference("a", learnt(runs, site_scale=SCALE)), effects=effects)


#: b's effect as a learn before the comparisons stored it: 30 % slower, quite sure of it.
BEFORE_THE_MIX = {"mean": 0.3, "variance": 0.001, "tau2": 0.01, "tasks": 5, "runs": 20}


def _p50(models: TaskModels, x_mb: float) -> float:
    return predict_on(models, "b", x_mb * MB, factor=None).predictive.p50_s


def _one_run(effect: dict[str, Any] | None) -> TaskModels:
    """After one run on b at 200 MB, 2.5 times as long as on a."""
    return learn_run(_models(effect), "b", 200 * MB, 2.5 * _line(200), factor=None).models


@pytest.mark.parametrize("effect", [BEFORE_THE_MIX, None], ids=["stored-without-mix", "no-row"])
def test_one_run_without_comparisons_predicts_the_probe_ratio(
    effect: dict[str, Any] | None,
) -> None:
    """The run's runtime over the reference line there, applied to the line: 2.5 × 35 s."""
    models = _one_run(effect)
    assert _p50(models, 500) == pytest.approx(2.5 * _line(500), rel=1e-9)
    assert _p50(models, 100) == pytest.approx(2.5 * _line(100), rel=1e-9)
    # the model alone says otherwise: the mix is what makes it the ratio
    model = _p50(_with_mix(models, {"compared": 1, "cross": 1.0, "spread": 1.0}), 500)
    assert abs(model - 2.5 * _line(500)) > 1.0


def _with_mix(models: TaskModels, mix: dict[str, Any]) -> TaskModels:
    stored = {**BEFORE_THE_MIX, "mix": mix}
    return models._replace(effects={KEY: ClassEffect.from_json(stored)})


def test_comparisons_that_favour_the_model_move_the_weight_toward_it() -> None:
    models = _one_run(BEFORE_THE_MIX)
    ratio = _p50(models, 500)
    # the ratio's errors (e_r) and the model's (e_m) on earlier runs of the class
    pairs = [(0.4, 0.1), (-0.3, 0.0), (0.2, -0.1), (0.1, 0.15)]
    cross = math.fsum(r * (r - m) for r, m in pairs)
    spread = math.fsum((r - m) ** 2 for r, m in pairs)
    weight = cross / spread
    assert 0.5 < weight < 1.0
    model = _p50(_with_mix(models, {"compared": 1, "cross": 1.0, "spread": 1.0}), 500)  # w = 1
    mixed = _p50(_with_mix(models, {"compared": 4, "cross": cross, "spread": spread}), 500)
    assert mixed == pytest.approx(ratio ** (1 - weight) * model**weight, rel=1e-9)
    assert min(ratio, model) < mixed < max(ratio, model)
    # evidence against the model: the weight is clipped at 0, the ratio
    against = _p50(_with_mix(models, {"compared": 2, "cross": -0.5, "spread": 0.3}), 500)
    assert against == pytest.approx(ratio, rel=1e-9)


def test_each_run_after_the_first_adds_its_comparison_to_the_class() -> None:
    models = _one_run(BEFORE_THE_MIX)
    effect = models.effects[KEY]
    assert effect.mix.compared == 0  # the first run has nothing before it to be a ratio of
    second = 3.0 * _line(600)
    model = math.log(_p50(_with_mix(models, {"compared": 1, "cross": 1.0, "spread": 1.0}), 600))
    after = learn_run(models, "b", 600 * MB, second, factor=None).models
    found = after.effects[KEY]
    e_r = math.log(second) - math.log(2.5 * _line(600))  # the ratio of the first run
    e_m = math.log(second) - model
    assert found.mix.compared == 1
    assert found.mix.cross == pytest.approx(e_r * (e_r - e_m), rel=1e-9)
    assert found.mix.spread == pytest.approx((e_r - e_m) ** 2, rel=1e-9)
    assert found._replace(mix=effect.mix) == effect  # the pooled factor is learn's
    assert ClassEffect.from_json(found.to_json()) == found
