"""Every workflow instance of ../shared/data/workflows loads, validates and plans.

WfCommons WfInstances and the BLAST benchmark: development data whose licence does not let
the project copy them into tests/data, so they are read by path here, as an evaluation.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.planner.scheduling.registry import SCHEDULERS
from advisor.planner.workflow import wfformat
from advisor.services.estimate import estimate_workflow
from advisor.services.plan import PlanRequest, plan_workflows
from advisor.validate import load_json, validate
from tests.helpers.schemas import broken_copies, python_says_valid


def wfinstances(shared_data: Path) -> list[Path]:
    found = sorted((shared_data / "workflows" / "wfinstances").glob("*.json"))
    assert len(found) >= 6
    return found


@pytest.mark.parametrize("algorithm", sorted(SCHEDULERS))
def test_every_wfinstance_plans_on_its_recorded_machines(shared_data: Path, algorithm: str) -> None:
    for path in wfinstances(shared_data):
        planned = plan_workflows(PlanRequest((str(path),), algorithm=algorithm, samples=20))
        plan, data = planned.plan, planned.to_json()
        validate(data, "plan-output", source=str(path))
        row = data["workflows"][0]
        assert row["recorded_makespan_s"] > 0
        # recorded makespans include workflow-system overhead, so they are never below the plan's
        # lower bound; HEFT's plan itself is at least that bound
        assert row["critical_path_s"] <= row["recorded_makespan_s"]
        assert plan.makespan_s >= row["critical_path_s"] - 1e-6
        recorded = {m for t in data["tasks"] for m in [t["node"]]}
        assert recorded <= {n["name"] for n in data["nodes"]}


def test_blast_benchmark_plans_and_estimates(shared_data: Path) -> None:
    blast = str(shared_data / "workflows" / "blast-benchmark-200.json")
    planned = plan_workflows(
        PlanRequest(
            (blast,), platform="summit", flops_per_unit="100Gf", nodes=10, cores=10, samples=20
        )
    )
    plan, data = planned.plan, planned.to_json()
    assert len(data["tasks"]) == 198
    estimates = estimate_workflow(
        blast, platform="summit", nodes=10, cores=10, flops_per_unit="100Gf"
    ).to_json()
    validate(estimates, "estimate-output", source=blast)
    # 198 tasks x 150 units x 100 Gf on 100 cores of 61.542 Gf/s: 482.6 s of compute
    assert estimates["total_flops"] == pytest.approx(198 * 150 * 100e9)
    assert estimates["naive_concurrent_s"] == pytest.approx(482.59, abs=0.05)
    assert estimates["naive_s"] > estimates["naive_concurrent_s"]
    # three levels: split, 196 blastall in two phases, two merges -> about 4 task lengths
    assert estimates["critical_path_s"] == pytest.approx(4 * 243.7, rel=0.01)
    assert plan.makespan_s == pytest.approx(4 * 243.7, rel=0.01)  # 196 tasks need 2 rounds


def test_both_engines_agree_on_the_real_wfcommons_instances(shared_data: Path) -> None:
    for path in sorted((shared_data / "workflows" / "wfinstances").glob("*.json")):
        doc = load_json(path)
        check = wfformat._validator(doc["schemaVersion"])
        assert check.is_valid_fast(doc)
        assert python_says_valid(check.contents, doc, draft="7")
        if path.stat().st_size > 100_000:
            continue  # jsonschema takes seconds per copy of the large ones
        for broken in broken_copies(doc, limit=15):
            assert (check.first_error(broken) is None) == python_says_valid(
                check.contents, broken, draft="7"
            )
