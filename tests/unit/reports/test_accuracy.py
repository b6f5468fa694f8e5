"""``report accuracy`` on constructed cases whose answer is known, and the quantile recovery."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from advisor.advice.forecast import ModelPredictor
from advisor.models.conformal import DEFAULT_SCALE
from advisor.models.distributions import student_t_ppf
from advisor.models.evidence import MAD_TO_SD, Evidence, Moments, Score
from advisor.models.features import X_UNIT_BYTES
from advisor.models.predict import task_models_from_rows
from advisor.models.task_model import Reference
from advisor.reports.accuracy import USER_LIMIT, accuracy_report, coverage, score_jobs, too_low
from advisor.reports.jobs import AdvisorLimit, JobView
from advisor.reports.loading import Selection
from advisor.reports.quantiles import implied_input, job_quantiles
from advisor.store import Store
from advisor.store.accounting import save_jobs
from advisor.store.advice import Advice, record_advice
from advisor.store.task_models import TaskModelRow, upsert_task_model
from tests.helpers.report_cache import real_jobs

GB = X_UNIT_BYTES
#: The log scale of the predictive: P90 at 1 GB is 122.8 s (110 s times e^(t90·SCALE)).
ERRORS = 100
SCALE = math.log(122.8 / 110.0) / student_t_ppf(0.9, 1 + ERRORS)


def _evidence() -> Evidence:
    """runtime = 10 s + 100 s/GB, its line leading with errors of spread SCALE (pooled)."""
    own = math.sqrt(((1 + ERRORS) * SCALE**2 - DEFAULT_SCALE**2) / ERRORS)
    errors = tuple(own / MAD_TO_SD * (1 if i % 2 else -1) for i in range(ERRORS))
    sizes = [GB * k / 10 for k in range(1, 11)]  # the line's moments: exactly 10 + 100·x
    line = Moments()
    for x in sizes:
        line = line.add(x / GB, 10.0 + 100.0 * x / GB)
    return Evidence(
        n=50,
        runs=tuple((x, math.log(10.0 + 100.0 * x / GB)) for x in sizes),
        line=line,
        floor=20.0,
        x_max_bytes=GB,
        scores=(Score(), Score(50, 10.0, errors), Score(), Score()),
    )


MODEL = Reference("small", _evidence(), pearson_r=0.99)
P50 = 110.0
P90, P95 = (110.0 * math.exp(student_t_ppf(q, 1 + ERRORS) * SCALE) for q in (0.9, 0.95))
#: Elapsed seconds: 10 at or under P50, 8 more under P90, 1 more under P95, 1 above P95.
CALIBRATED = [100, 102, 104, 105, 106, 107, 108, 109, 110, 110,
              111, 112, 114, 115, 117, 118, 120, 122, 125, 140]  # fmt: skip


def _job(job_id: int, elapsed_s: int, task: str, state: str = "COMPLETED") -> object:
    template = next(job for job in real_jobs() if job.job_id == "38")
    return template._replace(
        job_id=str(job_id), job_id_raw=job_id, name=task, elapsed_s=elapsed_s,
        state=state, timelimit_s=600, nodes=("c1",),
    )  # fmt: skip


def _cache(path: Path, jobs: dict[str, list[int]], *, timeouts: tuple[int, ...] = ()) -> Path:
    with Store.open(path) as store:
        store.conn.execute(
            "INSERT INTO nodes (name, node_class, cpus, memory_mb, features, partitions, state, "
            "updated_at) VALUES ('c1', 'small', 2, 4000, '[]', '[\"cpu\"]', 'idle', 'now')"
        )
        records, job_id = [], 1000
        for task, elapsed in jobs.items():
            upsert_task_model(store, TaskModelRow(task, "*", "lotaru", MODEL.to_params(), 50))
            for seconds in elapsed:
                job_id += 1
                state = "TIMEOUT" if job_id in timeouts else "COMPLETED"
                records.append(_job(job_id, seconds, task, state))
                record_advice(store, Advice(
                    user="root", policy="fill", argv=["x.sh"], outcome="submitted", task=task,
                    partition="cpu", node_class="small", predicted_s=P95, quantile=0.95,
                    limit_s=600, cluster="advisor", job_id=job_id,
                ))  # fmt: skip
        save_jobs(store, records)
    return path


def _report(path: Path, **kwargs: object) -> dict[str, object]:
    from datetime import UTC, datetime

    with Store.open(path, readonly=True) as store:
        return accuracy_report(store, Selection(), now=datetime.now(UTC), **kwargs).report.to_json()  # type: ignore[arg-type]


def test_a_calibrated_model_covers_what_its_quantiles_promise(tmp_path: Path) -> None:
    data = _report(_cache(tmp_path / "c.db", {"sim": CALIBRATED}))
    (row,) = data["rows"]  # type: ignore[misc]
    assert (row["task"], row["node_class"], row["jobs"]) == ("sim", "small", 20)
    assert row["cover_p50"] == pytest.approx(10 / 20)
    assert row["cover_p90"] == pytest.approx(18 / 20)
    assert row["cover_p95"] == pytest.approx(19 / 20)
    assert row["check"] == "ok"
    errors = sorted(abs(P50 - a) / a for a in CALIBRATED)
    assert row["median_error"] == pytest.approx((errors[9] + errors[10]) / 2)
    assert row["mean_error"] == pytest.approx(sum(errors) / 20)
    signed = sorted((P50 - a) / a for a in CALIBRATED)
    assert row["bias"] == pytest.approx((signed[9] + signed[10]) / 2)


def test_a_p95_that_covers_70_percent_is_flagged(tmp_path: Path) -> None:
    # 14 of 20 within P95 (70 %), 6 well above it: the bug the report must show.
    runs = [100] * 14 + [200] * 6
    data = _report(_cache(tmp_path / "bad.db", {"bad": runs, "sim": CALIBRATED}))
    rows = {row["task"]: row for row in data["rows"]}  # type: ignore[attr-defined]
    assert rows["bad"]["cover_p95"] == pytest.approx(0.70)
    assert rows["bad"]["check"] == "P90 covers 70%; P95 covers 70%"
    assert rows["sim"]["check"] == "ok"
    assert data["total"]["jobs"] == 40  # type: ignore[index]


def test_a_timeout_counts_as_missed_only_when_it_outran_the_quantile(tmp_path: Path) -> None:
    # 1001 timed out after 140 s (> P95: missed); 1002 after 115 s (P90/P95 above: unknown).
    data = _report(_cache(tmp_path / "t.db", {"sim": [140, 115, 100, 105]}, timeouts=(1001, 1002)))
    (row,) = data["rows"]  # type: ignore[misc]
    assert row["timeouts"] == 2
    assert row["cover_p95"] == pytest.approx(2 / 3)  # 100, 105 covered; 140 missed; 115 unknown
    assert row["cover_p50"] == pytest.approx(2 / 4)  # 115 > P50 is decided: missed
    errors = sorted(abs(P50 - a) / a for a in (100, 105))
    assert row["median_error"] == pytest.approx(sum(errors) / 2)
    assert row["check"] == "few jobs"


def test_the_stored_quantile_alone_is_used_when_the_model_is_gone(tmp_path: Path) -> None:
    path = _cache(tmp_path / "m.db", {"sim": CALIBRATED})
    with Store.open(path) as store:
        store.conn.execute("DELETE FROM task_models")
    data = _report(path)
    (row,) = data["rows"]  # type: ignore[misc]
    assert row["cover_p95"] == pytest.approx(19 / 20)
    assert row["cover_p50"] is None and row["median_error"] is None
    assert data["jobs"]["without_model"] == 20  # type: ignore[index]


def _predictor() -> ModelPredictor:
    models = {"sim": task_models_from_rows("sim", [("*", "lotaru", MODEL.to_params())])}
    return ModelPredictor(models, {})


@pytest.mark.parametrize("size_gb", [0.3, 1.0, 2.5, 40.0])
def test_quantiles_are_recovered_at_the_input_size_behind_the_stored_one(size_gb: float) -> None:
    predictor = _predictor()
    stored = predictor.forecast("sim", int(size_gb * GB), "small", 0.95)
    assert stored is not None

    def forecast_at(size: float, node_class: str):  # type: ignore[no-untyped-def]
        return predictor.forecast("sim", round(size), node_class, 0.95)

    found = job_quantiles(forecast_at, stored.quantile_s, ("small",), "small", GB)
    assert found is not None and found.input_bytes is not None
    assert found.input_bytes == pytest.approx(size_gb * GB, rel=1e-6)
    truth = predictor.forecast("sim", int(size_gb * GB), "small", 0.5)
    assert truth is not None
    assert found.p50_s == pytest.approx(10.0 + 100.0 * size_gb, rel=1e-6)  # the line's
    assert (found.p90_s, found.p95_s) == pytest.approx((truth.p90_s, truth.p95_s), rel=1e-6)


def test_a_stored_quantile_below_every_size_is_scaled() -> None:
    predictor = _predictor()

    def forecast_at(size: float, node_class: str):  # type: ignore[no-untyped-def]
        return predictor.forecast("sim", round(size), node_class, 0.95)

    # P95 at size 0 is 10 + 16.4 s; a stored 13.2 s is half of it: every quantile halves.
    at_zero = forecast_at(0.0, "small")
    found = job_quantiles(forecast_at, at_zero.quantile_s / 2, (), "small", GB)
    at_default = forecast_at(GB, "small")
    scale = (at_zero.quantile_s / 2) / at_default.quantile_s
    assert found is not None and found.input_bytes is None
    assert found.p50_s == pytest.approx(at_default.p50_s * scale)


def test_implied_input_bisects_a_monotone_curve() -> None:
    assert implied_input(lambda x: 5.0 + 2.0 * x, 25.0, 1.0) == pytest.approx(10.0)
    assert implied_input(lambda x: 5.0 + 2.0 * x, 4.0, 1.0) is None  # below the intercept
    assert implied_input(lambda x: 7.0, 9.0, 1.0) is None  # a constant never gets there
    assert implied_input(lambda x: None, 9.0, 1.0) is None
    # Curved (a quantile's scale grows like sqrt(1 + x²)): still found, from either side.
    assert implied_input(lambda x: 1.0 + x * x, 50.0, 1.0) == pytest.approx(7.0, rel=1e-7)
    assert implied_input(lambda x: 3.0 + 4.0 * math.sqrt(x), 11.0, 100.0) == pytest.approx(
        4.0, rel=1e-7
    )


def test_the_slowest_advised_class_is_the_one_whose_quantile_was_stored() -> None:
    slow_factor = 2.0

    def forecast_at(size: float, node_class: str):  # type: ignore[no-untyped-def]
        found = _predictor().forecast("sim", round(size), "small", 0.95)
        if node_class == "slow" and found is not None:
            return found._replace(
                node_class="slow",
                **{
                    k: getattr(found, k) * slow_factor
                    for k in ("p50_s", "p90_s", "p95_s", "quantile_s")
                },
            )
        return found

    stored = forecast_at(GB, "slow").quantile_s  # the wrapper stored the slow class's P95 at 1 GB
    found = job_quantiles(forecast_at, stored, ("small", "slow"), "small", GB)
    assert found is not None and found.input_bytes == pytest.approx(GB, rel=1e-6)
    assert found.node_class == "small" and found.p50_s == pytest.approx(P50, rel=1e-6)


def test_coverage_threshold_tolerates_noise_but_not_a_bug() -> None:
    assert not too_low(0.90, 0.95, 20)  # one job short of 95 % in 20 is noise
    assert too_low(0.70, 0.95, 20)
    assert too_low(0.89, 0.95, 10_000)  # with many jobs, 6 points is real
    assert not too_low(0.93, 0.95, 10_000)


def test_jobs_without_a_prediction_or_that_failed_are_not_scored() -> None:
    advice = AdvisorLimit("wrapper", 600, True, 1800, 126.4, 0.95, ("small",), "fill")
    base = JobView("advisor", "1", "u", "a", "cpu", "sim", "small", 1, 100, 600, "COMPLETED",
                   None, advice)  # fmt: skip
    models = {"sim": task_models_from_rows("sim", [("*", "lotaru", MODEL.to_params())])}
    jobs = [
        base,
        dataclasses.replace(base, job_id="2", state="FAILED"),
        dataclasses.replace(base, job_id="3", advice=dataclasses.replace(advice, predicted_s=None)),
        dataclasses.replace(base, job_id="4", advice=None),
    ]
    calls: list[tuple[int, int]] = []
    scored = score_jobs(jobs, models, {}, progress=lambda done, total: calls.append((done, total)))
    assert [s.job.job_id for s in scored] == ["1"]
    assert calls == [(1, 1)]
    assert coverage(scored, "p95") == (1.0, 1)
    assert math.isclose(scored[0].others[USER_LIMIT], 1800.0)


def test_the_quantiles_an_advice_row_stored_are_the_ones_scored(tmp_path: Path) -> None:
    """Issue 19: what the user was told, not what the model says now."""
    path = _cache(tmp_path / "s.db", {"sim": CALIBRATED})
    with Store.open(path) as store:  # the advice told 10 % less than the model says today
        store.conn.execute(
            "UPDATE advice SET input_bytes = ?, p50_s = ?, p90_s = ?, p95_s = ?",
            (GB, 0.9 * P50, 0.9 * P90, 0.9 * P95),
        )
    (row,) = _report(path)["rows"]  # type: ignore[misc]
    errors = sorted(abs(0.9 * P50 - a) / a for a in CALIBRATED)
    assert row["median_error"] == pytest.approx((errors[9] + errors[10]) / 2)
    assert row["cover_p95"] == pytest.approx(sum(a <= 0.9 * P95 for a in CALIBRATED) / 20)


def test_older_advice_is_recovered_from_the_model_that_user_saw(tmp_path: Path) -> None:
    """Without stored quantiles, the user's own runs are part of the model the limit came from."""
    from advisor.models.predict import TaskModels, predict_on
    from advisor.models.updates import learn_run
    from advisor.store.task_models import UserModelRow, upsert_user_model

    path = _cache(tmp_path / "u.db", {"sim": CALIBRATED})
    model = MODEL
    root = TaskModels("sim", model)
    for s in (0.5, 1, 2) * 4:  # root's own runs take twice as long
        root = learn_run(root, "small", GB * s, 2 * (10 + 100 * s), factor=1.0, user=True).models
    mine = root.user_runs["small"]
    with Store.open(path) as store:
        upsert_task_model(store, TaskModelRow("sim", "*", "lotaru", model.to_params(), 50))
        upsert_user_model(
            store, UserModelRow("root", "sim", "small", mine.to_params("user"), mine.n)
        )
        models = task_models_from_rows(
            "sim", [("*", "lotaru", model.to_params())], [("small", mine.to_params("user"))]
        )
        told = predict_on(models, "small", GB, factor=1.0).predictive  # root's own view
        store.conn.execute("UPDATE advice SET predicted_s = ?", (told.p95_s,))
    (row,) = _report(path)["rows"]  # type: ignore[misc]
    errors = sorted(abs(told.p50_s - a) / a for a in CALIBRATED)
    assert row["median_error"] == pytest.approx((errors[9] + errors[10]) / 2, rel=1e-6)
