"""``advisor plan`` and ``advisor estimate``: JSON that validates, tables, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.validate import validate
from tests.helpers.paths import TEST_DATA

DATA = TEST_DATA / "workflows"


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main([*argv, "--format", "json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def test_plan_json_follows_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "plan", str(DATA / "fork-1.4.json"))
    validate(data, "plan-output", source="plan")
    # recorded machines: alpha (2 cores) and beta (1 core); no transfers
    assert data["makespan_s"] == 30.0
    assert data["workflows"][0]["recorded_makespan_s"] == 41.0
    assert {t["id"]: t["node"] for t in data["tasks"]}["split"] in {"alpha", "beta"}
    assert [n["cores"] for n in data["nodes"]] == [2, 1]
    assert data["p50_s"] <= data["p95_s"]
    assert data["fairness"] is None


def test_plan_several_workflows_with_fdws(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(
        capsys,
        "plan",
        str(DATA / "fork-1.4.json"),
        str(DATA / "chain-1.6.json"),
        "--algorithm",
        "fdws",
        "--arrivals",
        "0,5",
        "--nodes",
        "2",
        "--cores",
        "2",
    )
    validate(data, "plan-output", source="plan")
    assert [w["arrival_s"] for w in data["workflows"]] == [0.0, 5.0]
    assert data["fairness"]["unfairness"] >= 0.0
    assert len(data["tasks"]) == 6


def test_plan_cpu_work_needs_a_platform(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(DATA / "diamond-1.3.json"), "--nodes", "2"]) == 2
    err = capsys.readouterr().err
    assert "task 'split_00000001' has no recorded runtime" in err
    assert err.count("\n") == 1
    data = run_json(
        capsys,
        "plan",
        str(DATA / "diamond-1.3.json"),
        "--nodes",
        "2",
        "--platform",
        "summit",
        "--flops-per-unit",
        "61.542Gf",
        "--cv",
        "0",
    )
    # about one second per cpu-work unit: split 100 + left 200 + join 10 (+ tiny I/O)
    assert data["makespan_s"] == pytest.approx(310.0, rel=1e-3)


def test_plan_table_and_gantt(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "plan.png"
    assert main(["plan", str(DATA / "chain-1.6.json"), "--gantt", str(png)]) == 0
    out = capsys.readouterr().out
    assert "Plan (heft)" in out and "Tasks" in out and "P95" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plan_errors_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cyclic = tmp_path / "cycle.json"
    cyclic.write_text(
        json.dumps(
            {
                "name": "c",
                "schemaVersion": "1.5",
                "workflow": {
                    "specification": {
                        "tasks": [
                            {"name": "a", "id": "a", "parents": ["b"], "children": []},
                            {"name": "b", "id": "b", "parents": ["a"], "children": []},
                        ]
                    }
                },
            }
        )
    )
    assert main(["plan", str(cyclic)]) == 2
    err = capsys.readouterr().err
    assert err == f"advisor: error: {cyclic}: cycle: a -> b -> a\n"
    assert main(["plan", str(DATA / "fork-1.4.json"), "--arrivals", "0,1"]) == 2
    assert "2 arrival times for 1 workflows" in capsys.readouterr().err
    assert main(["plan", str(DATA / "fork-1.4.json"), "--algorithm", "nope"]) == 2
    capsys.readouterr()


def test_plan_a_planning_problem_case(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    problem = tmp_path / "p.json"
    problem.write_text(
        json.dumps(
            {
                "cases": {
                    "tiny": {
                        "computation_cost": [[2, 3], [4, None]],
                        "edges": [[0, 1, 5]],
                        "comm_bandwidth": [[0, 1], [1, 0]],
                        "comm_startup": [0, 0],
                    }
                }
            }
        )
    )
    data = run_json(capsys, "plan", f"{problem}#tiny", "--algorithm", "peft")
    validate(data, "plan-output", source="plan")
    assert data["makespan_s"] == 6.0  # both on P1: 2 + 4, no transfer
    assert main(["plan", f"{problem}#other"]) == 2
    assert "no case 'other'" in capsys.readouterr().err
    cyclic = tmp_path / "cyclic.json"
    cyclic.write_text(json.dumps({"computation_cost": [[1], [1]], "edges": [[0, 1, 1], [1, 0, 1]]}))
    assert main(["plan", str(cyclic)]) == 2
    assert capsys.readouterr().err.endswith("cycle: n1 -> n2 -> n1\n")


def test_estimate_json_follows_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(
        capsys,
        "estimate",
        str(DATA / "diamond-1.3.json"),
        "--platform",
        "summit",
        "--nodes",
        "1",
        "--cores",
        "2",
        "--flops-per-unit",
        "61.542Gf",
    )
    validate(data, "estimate-output", source="estimate")
    assert data["levels"] == 3
    assert data["naive_s"] >= data["naive_concurrent_s"]
    # levels: 100 s, then 200 and 50 s side by side (phase mean 125 s), then 10 s
    assert data["critical_path_s"] == pytest.approx(235.0, rel=1e-3)


def test_estimate_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "estimate",
                str(DATA / "fork-1.4.json"),
                "--platform",
                "summit",
                "--nodes",
                "2",
                "--cores",
                "4",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "critical path (level by level)" in out and "3 tasks in 2 levels" in out
