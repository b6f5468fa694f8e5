"""services.evaluate and ``advisor evaluate`` on made-up traces and runs files.

The traces follow the Lotaru layout (nodes.json, execution_reports/<machine>/results_<wf>/) with
runtimes drawn from known laws: a task whose runtime follows its input (overhead + cost per
byte) and one whose runtime does not, on a reference machine, its reduced-clock twin and a
target half as fast.  The runs file has tasks on two classes, B 1.5 times slower than A.
The figures on the development data are benchmarks (benchmarks/model_choices.py).
"""

from __future__ import annotations

import csv
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.models.cross_validation import HETEROGENEOUS, HOMOGENEOUS, LOTO, LOWO
from advisor.services.evaluate import (
    EvaluateRequest,
    EvaluateRunsRequest,
    evaluate,
    evaluate_runs,
)
from advisor.validate import validate

COLUMNS = ["Label", "Machine", "Workflow", "Task", "WorkflowInputSize", "Realtime",
           "TaskInputSizeUncompressed", "peak_rss"]  # fmt: skip
SPEED = {"local": 1.0, "twin": 1.2, "slow": 2.0}


def _runtime_s(task: str, size: float, machine: str, rng: random.Random) -> float:
    noise = rng.uniform(0.97, 1.03)
    if task == "align":
        return (3.0 + 20.0 * size / 1e9) * SPEED[machine] * noise
    return 30.0 * SPEED[machine] * rng.uniform(0.8, 1.25)  # does not follow its input


def _peak_bytes(task: str, size: float, rng: random.Random) -> int:
    """A peak that grows with the input (align) or does not (count), the same on every machine."""
    noise = rng.lognormvariate(0, 0.05)
    if task == "align":
        return round((200e6 + 0.5 * size) * noise)
    return round(300e6 * noise)


def _traces(root: Path) -> Path:
    rng = random.Random(29)
    peaks = random.Random(33)
    nodes = {
        "nodes": [
            {"name": "local", "sysbench_cpu_events_per_s": 400, "fio_io_score": 400,
             "linpack_kflops": None, "memory_score": None},
            {"name": "twin", "same_hardware_as": "local", "cpu_clock_ghz": 3.0,
             "reference_cpu_clock_ghz": 3.6},
            {"name": "slow", "sysbench_cpu_events_per_s": 200, "fio_io_score": 200,
             "linpack_kflops": None, "memory_score": None},
        ]
    }  # fmt: skip
    root.mkdir()
    (root / "nodes.json").write_text(json.dumps(nodes), encoding="utf-8")
    for workflow in ("wf1", "wf2"):
        for machine in SPEED:
            folder = root / "execution_reports" / machine / f"results_{workflow}"
            folder.mkdir(parents=True)
            with (folder / f"execution_report_{machine}.csv").open("w", newline="") as out:
                writer = csv.writer(out)
                writer.writerow(COLUMNS)
                for task in ("align", "count"):
                    for label, sizes in (
                        ("train-1", [1e8 * 2**i for i in range(8)]),
                        ("test", [4e10, 6e10]),
                    ):
                        for size in sizes:
                            ms = round(1000 * _runtime_s(task, size, machine, rng))
                            writer.writerow([label, machine, workflow, task, int(size * 10 if label == "test" else size), ms, int(size), _peak_bytes(task, size, peaks)])  # fmt: skip
    return root


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _traces(tmp_path_factory.mktemp("evaluate") / "traces")


def test_the_protocol_on_traces_follows_the_schema(traces: Path) -> None:
    done = evaluate(EvaluateRequest(traces, calibrate=True))
    data = json.loads(json.dumps(done.to_json(), allow_nan=False))
    validate(data, "evaluate-output", source="evaluate")
    assert (data["reference"], data["twin"]) == ("local", "twin")
    assert {r.scheme for r in done.folds} == {LOWO, LOTO}
    pooled = {(r.scope, r.method): r.summary for r in done.pooled}
    for method in ("advisor", "paper", "advisor+1run", "probe+1run"):
        assert (HETEROGENEOUS, method) in pooled
    # the runtime that follows its input is extrapolated by the line, carried by the factor
    assert pooled[(HOMOGENEOUS, "advisor")].median_error < 0.1
    assert pooled[(HETEROGENEOUS, "advisor")].median_error < 0.15
    # the pooled rows over the folds have no multiplier of their own
    assert all(r.conformal is None for r in done.folds if r.fold == "all")
    # the memory model, on the same traces' peaks: the input-driven peaks of the full-size test
    # runs (beyond every training size) are covered by the line, not by the largest peak seen
    memory = {(r.method, r.scope): r.summary for r in done.memory}
    assert memory[("advisor", "pooled")].coverage >= 0.9
    assert memory[("largest training peak", "pooled")].coverage <= 0.5
    assert [row["method"] for row in data["memory"]] == [r.method for r in done.memory]
    # each advisor method beside the methods that saw as many runs, on the same test runs
    beside = {(c.scope, c.method, c.against): c for c in done.comparisons}
    paper = beside[(HETEROGENEOUS, "advisor", "paper")]
    assert paper.n == pooled[(HETEROGENEOUS, "paper")].n and paper.tasks == 4
    assert (HETEROGENEOUS, "advisor+1run", "probe+1run") in beside
    assert (HETEROGENEOUS, "advisor+1run", "paper") not in beside
    assert (HOMOGENEOUS, "advisor", "paper") in beside


def _runs_file(path: Path) -> Path:
    rng = random.Random(7)
    runs: list[dict[str, Any]] = []
    for t in range(12):
        base = 5.0 * (t + 1)
        for i in range(60):
            size = rng.randint(10**6, 10**9)
            runtime = base * (1 + size / 1e9) * rng.lognormvariate(0, 0.2)
            runs.append({"task": f"t{t}", "node_class": "A", "input_bytes": size,
                         "runtime_s": runtime})  # fmt: skip
            if i % 4 == 0:
                runs.append({"task": f"t{t}", "node_class": "B", "input_bytes": size,
                             "runtime_s": 1.5 * runtime * rng.lognormvariate(0, 0.1)})  # fmt: skip
    path.write_text(json.dumps({"runs": runs}), encoding="utf-8")
    return path


def test_a_runs_file_is_scored_across_tasks(tmp_path: Path) -> None:
    runs = _runs_file(tmp_path / "runs.json")
    done = evaluate_runs(EvaluateRunsRequest(runs, "A", "B", probe=True))
    data = json.loads(json.dumps(done.to_json(), allow_nan=False))
    validate(data, "evaluate-output", source="evaluate")
    assert done.tasks == 12
    pooled = {r.method: r.summary for r in done.pooled}
    assert {"advisor", "median", "line", "paper", "advisor+1run", "probe+1run",
            "probe-line+1run"} <= set(pooled)  # fmt: skip
    # B is 1.5 times slower for every task: the other tasks' runs there say so
    assert pooled["advisor"].median_error < 0.5 * pooled["median"].median_error  # type: ignore[operator]
    assert (pooled["advisor+1run"].median_error or 1) <= (
        pooled["probe-line+1run"].median_error or 0
    )
    assert (pooled["advisor"].p95_coverage or 0) >= 0.9
    assert {r.task for r in done.by_task} == {f"t{t}" for t in range(12)}
    assert {r.fold for r in done.by_fold} <= set(range(5))
    # the advisor's lead over A's median holds whichever tasks a site has: every draw of them
    median = next(c for c in done.comparisons if (c.method, c.against) == ("advisor", "median"))
    assert median.tasks == 12 and median.high is not None and median.high < 1.0


def test_the_command_line_evaluates_a_runs_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = _runs_file(tmp_path / "runs.json")
    args = ["--format", "json", "evaluate", "--runs", str(runs), "--train", "A", "--target", "B"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["train"] == "A" and data["probe"] is False
    assert {(c["method"], c["against"]) for c in data["comparisons"]} == {
        ("advisor", "median"), ("advisor", "line"), ("advisor", "paper"),
    }  # fmt: skip
    assert main(["evaluate", "--runs", str(runs), "--train", "A", "--target", "B"]) == 0
    assert "median errors' ratio" in capsys.readouterr().out
    assert main(["evaluate", "--runs", str(runs), "--train", "A"]) == 2
    assert "--train CLASS and --target CLASS" in capsys.readouterr().err
    assert main(["evaluate", "--runs", str(runs), "--train", "A", "--target", "nowhere"]) == 2
    assert "no task has runs on both" in capsys.readouterr().err
    assert math.isfinite(data["pooled"][0]["median_error"])
