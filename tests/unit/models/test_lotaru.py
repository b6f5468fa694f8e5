"""Lotaru's per-task model, CPU weight, transfer to other classes, and the paper's baselines."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest
from jsonschema import Draft202012Validator

from advisor.factors import Twin, class_factor, class_scores, with_twins
from advisor.models.baselines import fit_baseline, gamma_cdf, pearson
from advisor.models.cpu_weight import cpu_weight, pair_runs
from advisor.models.evidence import learnt
from advisor.models.features import X_UNIT_BYTES
from advisor.models.lotaru import fit_reference
from advisor.models.predict import (
    NoFactorError,
    TaskModels,
    predict_on,
    predict_task,
    task_models_from_rows,
)
from advisor.models.reference import ReferenceModel
from advisor.models.task_model import ClassRecord, Reference
from advisor.store.observations import Observation
from advisor.validate import schema

GB = X_UNIT_BYTES
XS = [0.5 * GB * 2**i for i in range(8)]


def _linear(xs: list[float], a: float, b: float, wiggle: float = 0.02) -> list[float]:
    return [(a + b * x / GB) * (1 + (wiggle if i % 2 else -wiggle)) for i, x in enumerate(xs)]


def test_correlated_runs_give_a_bayesian_regression() -> None:
    model = fit_reference(XS, _linear(XS, 10, 3), reference="local")
    assert model.kind == "regression"
    assert model.pearson_r is not None and model.pearson_r > 0.99
    assert model.mean[0] == pytest.approx(10, abs=2)
    assert model.mean[1] == pytest.approx(3, rel=0.05)  # seconds per GB
    pred = model.predict(100 * GB)
    assert pred.mean_s == pytest.approx(310, rel=0.05)
    assert pred.p50_s < pred.p90_s < pred.p95_s
    back = ReferenceModel.from_params(json.loads(json.dumps(model.to_params())))
    assert back == model


def test_uncorrelated_runs_give_the_median_with_a_spread() -> None:
    ys = [40.0, 90.0, 41.0, 60.0, 39.0, 75.0, 42.0, 50.0]
    model = fit_reference(XS, ys, reference="local")
    assert model.kind == "median"
    assert model.predict(1e15).mean_s == pytest.approx(statistics.median(ys))
    assert model.predict(1.0).p95_s > statistics.median(ys)


def test_threshold_is_inclusive_at_point_eight() -> None:
    xs, ys = [1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 3.0, 2.0, 5.0, 4.0]
    r = pearson(xs, ys)
    assert r == pytest.approx(0.8)
    assert fit_reference(xs, ys, reference="x", threshold=0.8).kind == "regression"
    assert fit_reference(xs, ys, reference="x", threshold=0.81).kind == "median"


def _runs(node: str, times: list[float], xs: list[float] | None = None) -> list[Observation]:
    return [
        Observation(
            "t",
            f"{node}{i}",
            "bwa",
            t,
            node=node,
            node_class=node,
            workflow="w",
            label="train-1",
            input_bytes=int(x),
        )
        for i, (t, x) in enumerate(zip(times, xs or XS, strict=True))
    ]


def test_cpu_weight_pairs_same_inputs_and_divides_by_the_cpu_bound_slowdown() -> None:
    ratio = 3.7 / 3.0
    normal = [10.0 * (i + 1) for i in range(8)]
    half = [t * (1 + 0.5 * (ratio - 1)) for t in normal]
    pairs = pair_runs(_runs("local", normal), _runs("twin", half, [x * 1.000001 for x in XS]))
    assert len(pairs) == 8
    weight = cpu_weight(pairs, ratio)
    assert weight is not None
    assert weight.value == pytest.approx(0.5)
    # Faster on the slow clock (noise): w clips at 0; twice the CPU-bound slowdown: at 1.
    assert cpu_weight([(10.0, 9.0)], ratio).value == 0.0  # type: ignore[union-attr]
    assert cpu_weight([(10.0, 20.0)], ratio).value == 1.0  # type: ignore[union-attr]
    assert cpu_weight([], ratio) is None


def test_runs_of_other_inputs_or_labels_do_not_pair() -> None:
    other_label = [
        Observation("t", "k", "bwa", 5.0, label="train-2", workflow="w", input_bytes=int(XS[0]))
    ]
    far = [
        Observation(
            "t", "k", "bwa", 5.0, label="train-1", workflow="w", input_bytes=int(XS[0] * 1.5)
        )
    ]
    assert pair_runs(_runs("local", [1.0] * 8), other_label) == []
    assert pair_runs(_runs("local", [1.0] * 8), far) == []


SCORES = {
    "local": {"cpu_single_events_s": 458.0, "io_score": 415.0},
    "slow": {"cpu_single_events_s": 229.0, "io_score": 415.0},
}


def test_node_factor_follows_the_cpu_weight() -> None:
    assert class_factor("local", "local", SCORES, 0.3) == 1.0
    assert class_factor("local", "slow", SCORES, 1.0) == pytest.approx(2.0)
    assert class_factor("local", "slow", SCORES, 0.0) == pytest.approx(1.0)
    assert class_factor("local", "unknown", SCORES, 0.5) is None


def test_twins_get_their_originals_scores_with_a_slower_cpu() -> None:
    scores = with_twins(SCORES, {"red": Twin("red", "local", 3.7 / 3.0)})
    assert scores["red"]["cpu_single_events_s"] == pytest.approx(458 * 3.0 / 3.7)
    assert scores["red"]["io_score"] == 415.0
    assert class_factor("local", "red", scores, 1.0) == pytest.approx(3.7 / 3.0)


def test_class_scores_average_the_nodes_of_a_class() -> None:
    scores = class_scores(
        {"n1": {"io_score": 100.0}, "n2": {"io_score": 300.0}}, {"n1": "c", "n2": "c"}
    )
    assert scores == {"c": {"io_score": 200.0}}


def _reference(cpu_weight: float = 1.0) -> Reference:
    runs = list(zip(XS, _linear(XS, 10, 3), strict=True))
    return Reference("local", learnt(runs, site_scale=0.5), cpu_weight)


def test_transferred_prediction_is_the_reference_times_the_factor() -> None:
    models = TaskModels("bwa", _reference())
    local = predict_on(models, "local", 8 * GB, factor=1.0)
    slow = predict_on(models, "slow", 8 * GB, factor=2.0)
    assert local.source == "reference"
    assert slow.source == "transferred"
    assert slow.predictive.p50_s == pytest.approx(2 * local.predictive.p50_s)
    # The transfer is uncertain: on the log scale its interval is wider than the reference's.
    assert slow.predictive.p95_s / slow.predictive.p50_s > (
        local.predictive.p95_s / local.predictive.p50_s
    )


def test_predict_task_takes_the_factor_from_the_scores_and_the_cpu_weight() -> None:
    models = TaskModels("bwa", _reference())
    slow = predict_task(models, "slow", 8 * GB, SCORES)
    assert slow.factor == pytest.approx(2.0)  # the CPU-bound task on a CPU half as fast
    assert slow.predictive == predict_on(models, "slow", 8 * GB, factor=2.0).predictive
    half = predict_task(TaskModels("bwa", _reference(0.5)), "slow", 8 * GB, SCORES)
    assert 1.0 < half.factor < 2.0


def test_lotaru_as_published_needs_a_factor_the_advisor_does_not() -> None:
    paper = fit_reference(XS, _linear(XS, 10, 3), reference="local")
    models = TaskModels("bwa", _reference(), paper=paper)
    with pytest.raises(NoFactorError):
        predict_task(models, "unknown", 8 * GB, SCORES, method="paper")
    with pytest.raises(NoFactorError):  # the wrapper's and the planner's view: unknown
        predict_task(models, "unknown", 8 * GB, SCORES)
    same = predict_task(models, "unknown", 8 * GB, SCORES, assume=True)
    local = predict_task(models, "local", 8 * GB, SCORES)
    assert same.source == "assumed"
    assert same.predictive.p50_s == pytest.approx(local.predictive.p50_s)  # the same speed
    assert same.predictive.p95_s > 1.5 * local.predictive.p95_s  # with a wide interval


def test_stored_params_validate_and_round_trip() -> None:
    reference = _reference()
    paper = fit_reference(XS, _linear(XS, 10, 3), reference="local")
    online = TaskModels("bwa", reference)
    from advisor.models.updates import learn_run

    online = learn_run(online, "slow", 4 * GB, 30.0, factor=2.0).models
    record = online.classes["slow"]
    assert isinstance(record, ClassRecord)
    baseline = fit_baseline("online-p", XS, _linear(XS, 10, 3), task="bwa")
    validator = Draft202012Validator(schema("task-model"))
    rows = [
        ("*", "lotaru", reference.to_params()),
        ("*", "paper", paper.to_params()),
        ("slow", "online", record.to_params()),
        ("*", "online-p", baseline.to_params()),
    ]
    for _, _, params in rows:
        assert not list(validator.iter_errors(json.loads(json.dumps(params))))
    loaded = task_models_from_rows("bwa", [(c, m, json.loads(json.dumps(p))) for c, m, p in rows])
    assert loaded.reference == reference
    assert loaded.paper == paper
    assert loaded.classes["slow"] == record
    assert loaded.baselines["online-p"] == baseline
    user = record.to_params("user")
    assert not list(validator.iter_errors(user))


def test_rows_of_the_raw_scale_model_are_skipped() -> None:
    old = {"model": "lotaru", "kind": "regression", "mean": [1.0, 2.0]}
    assert Reference.from_params(old) is None
    assert ClassRecord.from_params({"model": "online", "prior": {}}) is None
    assert task_models_from_rows("t", [("*", "lotaru", old)]).reference is None


def test_naive_and_online_baselines_as_in_the_paper() -> None:
    xs = [1.0, 2.0, 4.0]
    ys = [2.0, 3.0, 8.0]
    naive = fit_baseline("naive", xs, ys)
    assert naive.point(10.0) == pytest.approx(10 * statistics.fmean([2.0, 1.5, 2.0]))
    online = fit_baseline("online-m", xs, ys)
    assert online.point(3.5) == pytest.approx(3.5 * 8 / 4)  # the ratio of the closest run
    flat = fit_baseline("online-m", xs, [5.0, 1.0, 6.0])
    assert flat.point(100.0) == 5.0  # uncorrelated: the median


def test_online_p_draws_are_seeded() -> None:
    ys = [100.0, 104.0, 98.0, 101.0, 97.0, 103.0, 99.0, 102.0]
    xs = [5.0, 1.0, 7.0, 2.0, 8.0, 3.0, 6.0, 4.0]  # uncorrelated with ys
    first = fit_baseline("online-p", xs, ys, task="a", seed=1).point(1.0)
    assert fit_baseline("online-p", xs, ys, task="a", seed=1).point(1.0) == first
    others = {fit_baseline("online-p", xs, ys, task="a", seed=s).point(1.0) for s in range(2, 8)}
    assert len(others) > 1  # a draw, not the median
    assert all(80 < v < 120 for v in others)


def test_gamma_cdf_matches_the_exponential_case() -> None:
    assert gamma_cdf(2.0, 1.0, 1.0) == pytest.approx(1 - 2.718281828459045**-2)
    assert gamma_cdf(0.0, 2.0, 1.0) == 0.0
    assert gamma_cdf(1e6, 2.0, 1.0) == pytest.approx(1.0)


def test_prediction_modules_do_not_import_numpy_or_sklearn() -> None:
    code = (
        "import sys, advisor.models.predict, advisor.factors;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'sklearn', 'scipy')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
