"""The Done-when figures on the Lotaru development traces (../shared/data/lotaru).

Paper protocol (Bader et al., SSDBM 2022): train on the local machine's train-e runs, CPU weights
from the reduced-clock twin, predict the test runs of the other machines.  Reference figures for
the two workflows here: median error 8.7 % homogeneous, 14.5 % heterogeneous, Online-P 33.9 %.

Issue 19's figures are cross-validated (advisor.models.cross_validation): leave one workflow
out and leave one target out, each fold's discrepancy estimated without it.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.imports.lotaru import read_lotaru_csv
from advisor.models.evaluation import calibration_run
from advisor.profiling.imports import read_node_import
from advisor.store import Store
from advisor.store.benchmarks import save_bench_run
from advisor.validate import validate

TARGETS = ("asok01", "asok02", "n1", "n2", "c2")
WORKFLOWS = ("eager", "bacass")
SCHEMES = ("leave-one-workflow-out", "leave-one-target-out")


def _cli(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue()


@pytest.fixture(scope="module")
def document(shared_data: Path) -> dict[str, Any]:
    data = json.loads(
        _cli("--format", "json", "evaluate", "--traces", str(shared_data / "lotaru"), "--calibrate")
    )
    validate(data, "evaluate-output", source="evaluate")
    return data


@pytest.fixture(scope="module")
def evaluation(document: dict[str, Any]) -> dict[Any, Any]:
    return {(p["scope"], p["method"]): p for p in document["pooled"]}


@pytest.fixture(scope="module")
def folds(document: dict[str, Any]) -> dict[Any, Any]:
    return {(f["scheme"], f["fold"], f["scope"], f["method"]): f for f in document["folds"]}


def test_the_paper_method_is_reproduced(evaluation: dict[Any, Any]) -> None:
    assert evaluation[("homogeneous", "paper")]["median_error"] == pytest.approx(0.087, abs=0.01)
    assert evaluation[("heterogeneous", "paper")]["median_error"] == pytest.approx(0.145, abs=0.01)
    assert evaluation[("heterogeneous", "online-p")]["median_error"] == pytest.approx(
        0.339, abs=0.01
    )
    assert evaluation[("heterogeneous", "online-m")]["median_error"] == pytest.approx(
        0.339, abs=0.01
    )
    assert evaluation[("heterogeneous", "naive")]["median_error"] > 0.5
    assert evaluation[("heterogeneous", "advisor")]["n"] == 360


def test_every_fold_has_every_method(document: dict[str, Any], folds: dict[Any, Any]) -> None:
    methods = set(document["methods"])
    assert {"advisor", "paper", "online-p", "advisor+1run", "probe+1run", "probe+3runs"} <= methods
    for fold in (*WORKFLOWS, "all"):
        for method in methods:
            assert (SCHEMES[0], fold, "heterogeneous", method) in folds
    for fold in (*TARGETS, "all"):
        for method in methods:
            assert (SCHEMES[1], fold, "heterogeneous", method) in folds


def test_local_only_error_is_at_or_below_the_papers_on_every_fold(folds: dict[Any, Any]) -> None:
    """Issue 19, Done when: heterogeneous median error <= the paper method's on every fold.

    Where the two agree on which explanation holds, the averaged model keeps a sliver of the
    other (0.14 % for a task with r = 0.89): such a fold's figure may differ in the fifth digit.
    """
    for (scheme, fold, scope, method), row in folds.items():
        if scope == "heterogeneous" and method == "advisor":
            paper = folds[(scheme, fold, scope, "paper")]
            assert row["median_error"] <= paper["median_error"] + 1e-4, (scheme, fold)
    assert (
        folds[(SCHEMES[1], "all", "heterogeneous", "advisor")]["median_error"]
        < folds[(SCHEMES[1], "all", "heterogeneous", "paper")]["median_error"] - 0.01
    )


def test_one_calibration_run_beats_the_plain_probe_ratio_by_fifteen_percent(
    folds: dict[Any, Any],
) -> None:
    """Issue 19, Done when: the calibrated setting >= 15 % (relative) below the plain ratio."""
    for scheme in SCHEMES:
        ours = folds[(scheme, "all", "heterogeneous", "advisor+1run")]["median_error"]
        probe = folds[(scheme, "all", "heterogeneous", "probe+1run")]["median_error"]
        assert ours <= 0.85 * probe, scheme
        # and more runs help, more than they help the plain ratio
        more = [folds[(scheme, "all", "heterogeneous", f"advisor+{k}runs")] for k in (2, 3)]
        assert ours >= more[0]["median_error"] >= more[1]["median_error"]
        assert (
            more[1]["median_error"]
            <= 0.85 * (folds[(scheme, "all", "heterogeneous", "probe+3runs")]["median_error"])
        )


def test_the_p95_covers_ninety_percent_cross_validated(folds: dict[Any, Any]) -> None:
    """Issue 19: on the training machine, and on the targets with one calibration run."""
    assert folds[(SCHEMES[0], "all", "homogeneous", "advisor")]["p95_coverage"] >= 0.90
    for scheme in SCHEMES:
        assert folds[(scheme, "all", "heterogeneous", "advisor+1run")]["p95_coverage"] >= 0.90
        assert folds[(scheme, "all", "heterogeneous", "advisor")]["p95_coverage"] >= 0.90
    # the paper's own intervals do not (its noise variance is the training scatter only)
    assert folds[(SCHEMES[0], "all", "homogeneous", "paper")]["p95_coverage"] < 0.80


def test_each_fold_estimates_its_own_discrepancy(document: dict[str, Any]) -> None:
    lowo = {
        f["fold"]: f["discrepancy"]
        for f in document["folds"]
        if f["scheme"] == SCHEMES[0] and f["fold"] != "all"
    }
    assert set(lowo) == set(WORKFLOWS)
    assert lowo["eager"] != lowo["bacass"]  # estimated on the other workflow's runs
    assert all(0.05 < d < 0.4 for d in lowo.values())
    # the shipped value is what these traces estimate (advisor.models.discrepancy)
    assert document["discrepancy"]["used"] == pytest.approx(
        document["discrepancy"]["estimated"], abs=0.005
    )


def test_the_table_shows_the_folds_side_by_side(shared_data: Path) -> None:
    text = _cli("evaluate", "--traces", str(shared_data / "lotaru"))
    first = text.split("\n\n")[0]
    assert "workflow:bacass" in first and "target:asok01" in first and "target:all" in first
    rows = {line.split()[0] for line in first.splitlines()[3:]}
    assert {"advisor", "paper", "online-p", "online-m", "naive"} <= rows


def _fresh_cache(tmp: Path, lotaru: Path, labels: list[str]) -> str:
    db = str(tmp / "cache.db")
    with Store.open(db) as store:
        for run in read_node_import(lotaru / "nodes.json"):
            save_bench_run(store, run)
    files = [
        str(p)
        for m in ("local", "wallyRedCpu")
        for p in sorted((lotaru / "execution_reports" / m).glob("results_*/*.csv"))
    ]
    _cli(
        "runs",
        "import",
        *files,
        "--format",
        "lotaru",
        *[a for label in labels for a in ("--label", label)],
        "--db",
        db,
    )
    _cli("--db", db, "learn")
    return db


def _test_rows(lotaru: Path) -> list[tuple[str, str, int, float]]:
    """(task, machine, input_bytes, actual_s) of the test runs on inputs the local machine also ran."""
    rows = []
    for wf in WORKFLOWS:
        local = read_lotaru_csv(
            lotaru / f"execution_reports/local/results_{wf}/execution_report_local.csv",
            labels=["test"],
        )
        shared = {r.workflow_input_bytes for r in local}
        for machine in ("local", *TARGETS):
            path = (
                lotaru / f"execution_reports/{machine}/results_{wf}/execution_report_{machine}.csv"
            )
            for r in read_lotaru_csv(path, labels=["test"]):
                if r.workflow_input_bytes in shared:
                    o = r.observation
                    rows.append((o.task, machine, int(o.input_bytes or 0), o.runtime_s))
    return rows


def _errors(
    db: str, tmp: Path, rows: list[tuple[str, str, int, float]], method: str
) -> dict[str, list[float]]:
    queries = tmp / "queries.csv"
    with open(queries, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["task", "node", "input_bytes"])
        writer.writerows(r[:3] for r in rows)
    data = json.loads(
        _cli(
            "--db", db, "--format", "json", "predict", "--queries", str(queries), "--method", method
        )
    )
    validate(data, "predict-output", source="predict")
    out: dict[str, list[float]] = {"homogeneous": [], "heterogeneous": []}
    for p, (_, machine, _, actual) in zip(data["predictions"], rows, strict=True):
        out["homogeneous" if machine == "local" else "heterogeneous"].append(
            abs(p["predicted_s"] - actual) / actual
        )
    return out


def _calibrate(db: str, tmp: Path, lotaru: Path, labels: list[str]) -> None:
    runs = []
    for wf in WORKFLOWS:
        for machine in TARGETS:
            path = (
                lotaru / f"execution_reports/{machine}/results_{wf}/execution_report_{machine}.csv"
            )
            train = [r.observation for r in read_lotaru_csv(path, labels=labels)]
            for task in sorted({o.task for o in train}):
                run = calibration_run([o for o in train if o.task == task])
                assert run is not None
                runs.append(
                    {
                        "task": task,
                        "node": machine,
                        "node_class": machine,
                        "input_bytes": run.input_bytes,
                        "runtime_s": run.runtime_s,
                        "label": "calibration",
                    }
                )
    path = tmp / "calibration.json"
    path.write_text(json.dumps({"runs": runs}))
    _cli("runs", "import", str(path), "--input-format", "json", "--db", db)
    _cli("--db", db, "learn")


def test_cli_flow_per_training_set_gives_the_evaluated_figures(
    shared_data: Path, tmp_path: Path, evaluation: dict[Any, Any]
) -> None:
    """nodes -> runs import (local + twin) -> learn -> predict --queries, once per train-e.

    What the CLI predicts from the stored models is what ``advisor evaluate`` scores.
    """
    lotaru = shared_data / "lotaru"
    rows = _test_rows(lotaru)
    pooled: dict[tuple[str, str], list[float]] = {}
    for label in ("train-1", "train-2"):
        tmp = tmp_path / label
        tmp.mkdir()
        db = _fresh_cache(tmp, lotaru, [label])
        for method in ("lotaru", "paper", "online-p"):
            for scope, errors in _errors(db, tmp, rows, method).items():
                pooled.setdefault((scope, method), []).extend(errors)
        _calibrate(db, tmp, lotaru, [label])
        for scope, errors in _errors(db, tmp, rows, "lotaru").items():
            pooled.setdefault((scope, "calibrated"), []).extend(errors)
    median = {key: statistics.median(v) for key, v in pooled.items()}
    for scope in ("homogeneous", "heterogeneous"):
        assert median[(scope, "lotaru")] == pytest.approx(
            evaluation[(scope, "advisor")]["median_error"], abs=1e-9
        )
        assert median[(scope, "paper")] == pytest.approx(
            evaluation[(scope, "paper")]["median_error"], abs=1e-9
        )
    assert median[("heterogeneous", "online-p")] == pytest.approx(0.339, abs=0.01)
    assert median[("heterogeneous", "calibrated")] == pytest.approx(
        evaluation[("heterogeneous", "advisor+1run")]["median_error"], abs=1e-9
    )


def test_cli_flow_training_on_both_sets_at_once(shared_data: Path, tmp_path: Path) -> None:
    """One import of the local and twin CSVs (training rows), one learn."""
    lotaru = shared_data / "lotaru"
    rows = _test_rows(lotaru)
    db = _fresh_cache(tmp_path, lotaru, ["train-*"])
    errors = _errors(db, tmp_path, rows, "lotaru")
    paper = _errors(db, tmp_path, rows, "paper")
    assert statistics.median(errors["homogeneous"]) == pytest.approx(0.087, abs=0.015)
    assert statistics.median(errors["heterogeneous"]) <= statistics.median(paper["heterogeneous"])
    online_p = _errors(db, tmp_path, rows, "online-p")
    assert statistics.median(online_p["heterogeneous"]) == pytest.approx(0.339, abs=0.02)
    _calibrate(db, tmp_path, lotaru, ["train-*"])
    assert statistics.median(_errors(db, tmp_path, rows, "lotaru")["heterogeneous"]) <= 0.10
