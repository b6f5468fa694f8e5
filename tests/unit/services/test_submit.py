"""``advisor submit``: dry-run lines, submission through the wrapper's path, the stored run,
and ``--status`` (planned against actual) — Slurm replaced at the process boundary."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import pytest

from advisor.advice.snapshot import load_snapshot
from advisor.cli import main
from advisor.errors import SlurmCommandError
from advisor.services.plan import PlanRequest
from advisor.services.submit import compare, submit_workflow, workflow_status
from advisor.slurm.records import JobRecord
from advisor.store.cluster import save_cluster
from advisor.store.connection import Store
from advisor.store.node_classes import save_node_classes
from advisor.store.workflows import load_run
from advisor.validate import validate
from tests.helpers.caches import NODES, PARTITIONS, train
from tests.helpers.planner import DATA, FORKJOIN, WORKS, FakeSbatch, record, submitted_run

COMMANDS = DATA / "commands-1.4.json"


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """The made-up cluster (cpu: c1, c2 of class small; fat: f1 of class big), no models."""
    path = tmp_path / "cache.db"
    with Store.open(path) as store:
        save_cluster(store, PARTITIONS, NODES)
        save_node_classes(store, {"c1": "small", "c2": "small", "f1": "big"})
    return path


def dry_run_lines(
    capsys: pytest.CaptureFixture[str], cache: Path, workflow: Path, *options: str
) -> list[list[str]]:
    assert main(["submit", str(workflow), "--dry-run", "--db", str(cache), *options]) == 0
    return [shlex.split(line) for line in capsys.readouterr().out.splitlines()]


def option(argv: Sequence[str], name: str) -> str | None:
    values = [a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")]
    return values[-1] if values else None


def test_dry_run_prints_one_sbatch_per_task_parents_first(
    capsys: pytest.CaptureFixture[str], cache: Path
) -> None:
    lines = dry_run_lines(capsys, cache, FORKJOIN)
    names = [option(argv, "job-name") for argv in lines]
    assert len(lines) == 10 and all(argv[0] == "sbatch" for argv in lines)
    assert names[0] == "fork" and names[-1] == "join" and sorted(names[1:-1]) == WORKS
    deps = {option(argv, "dependency") for argv in lines[1:-1]}
    assert deps == {"afterok:<fork>"}
    assert option(lines[0], "dependency") is None
    assert option(lines[-1], "dependency") == "afterok:" + ":".join(f"<{w}>" for w in WORKS)
    doc = json.loads(FORKJOIN.read_text())
    sleeps = {t["id"]: t["advisor"]["command"] for t in doc["workflow"]["specification"]["tasks"]}
    for argv in lines:
        name = option(argv, "job-name")
        assert option(argv, "wrap") == sleeps[name]
        assert option(argv, "partition") in ("cpu", "fat")
        assert option(argv, "time") == "00:01:00"  # 1-3 s recorded, P95 + 10 %, whole minutes
        assert f"task=wf-sleep-{name.split('_')[0]}" in (option(argv, "comment") or "")
    with Store.open(cache, readonly=True) as store:  # a dry run writes nothing
        assert load_run(store) is None
        assert store.query("SELECT COUNT(*) AS n FROM advice")[0]["n"] == 0


def test_commands_reach_sbatch_verbatim(capsys: pytest.CaptureFixture[str], cache: Path) -> None:
    lines = {option(a, "job-name"): a for a in dry_run_lines(capsys, cache, COMMANDS)}
    assert option(lines["prep_00000001"], "wrap") == (
        'wfbench prep_00000001 --percent-cpu 0.6 --out "{\\"clean.txt\\":4000000}" raw.txt'
    )
    assert option(lines["report_00000002"], "wrap") == ("echo \"$HOME\" 'it''s' > out.txt; sleep 1")
    assert "task=prep" in (option(lines["prep_00000001"], "comment") or "")  # the 1.4 category
    assert option(lines["report_00000002"], "dependency") == "afterok:<prep_00000001>"


def test_dry_run_json_validates(capsys: pytest.CaptureFixture[str], cache: Path) -> None:
    assert (
        main(
            [
                "submit",
                str(FORKJOIN),
                "--dry-run",
                "--db",
                str(cache),
                "--format",
                "json",
                "--partition",
                "fat",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    validate(data, "submit-output", source="submit")
    assert data["state"] == "dry-run" and data["run_id"] is None
    assert {job["partition"] for job in data["jobs"]} == {"fat"}
    assert data["makespan_s"] == 5.0  # 1 + 3 + 1: eight slots of f1 hold the eight workers


def test_submission_chains_real_job_ids_records_the_run_and_the_advice(cache: Path) -> None:
    sbatch = FakeSbatch()
    data = submit_workflow(
        PlanRequest(inputs=(str(FORKJOIN),), db=str(cache)), side=sbatch.side()
    ).to_json()
    validate(data, "submit-output", source="submit")
    ids = {job["id"]: job["job_id"] for job in data["jobs"]}
    assert ids["fork"] == 101 and ids["join"] == 110
    for argv in sbatch.calls:
        name = option(argv, "job-name")
        want = [ids["fork"]] if name in WORKS else [ids[w] for w in WORKS] if name == "join" else []
        got = option(argv, "dependency")
        assert got == (f"afterok:{':'.join(map(str, want))}" if want else None)
        assert all(ids[w] < ids[name] for w in ([] if name == "fork" else ["fork"]))
    with Store.open(cache, readonly=True) as store:
        loaded = load_run(store)
        advice = store.query("SELECT task, job_id, outcome, cluster, user FROM advice ORDER BY id")
    assert loaded is not None
    run, jobs = loaded
    assert (run.id, run.state, run.cluster, run.user) == (
        data["run_id"],
        "submitted",
        "testc",
        "alice",
    )
    assert run.planned_makespan_s == data["makespan_s"]
    assert [j.job_id for j in jobs] == [ids[j.task_id] for j in jobs]
    assert jobs[-1].argv == tuple(sbatch.calls[-1])
    assert len(advice) == 10 and {a["outcome"] for a in advice} == {"submitted"}
    assert advice[0] == {
        "task": "wf-sleep-fork",
        "job_id": 101,
        "outcome": "submitted",
        "cluster": "testc",
        "user": "alice",
    }


def test_a_failed_sbatch_stops_the_submission_and_names_the_task(cache: Path) -> None:
    sbatch = FakeSbatch(refuse=["join"])
    with pytest.raises(SlurmCommandError) as info:
        submit_workflow(PlanRequest(inputs=(str(FORKJOIN),), db=str(cache)), side=sbatch.side())
    message = info.value.one_line()
    assert "task 'join': sbatch failed" in message and "101, 102" in message
    assert "Invalid account" in message
    # the wrapper's fail-open path tried the job's own arguments once more
    assert [option(a, "job-name") for a in sbatch.calls[-2:]] == ["join", "join"]
    assert option(sbatch.calls[-1], "time") is None
    with Store.open(cache, readonly=True) as store:
        loaded = load_run(store)
    assert loaded is not None
    run, jobs = loaded
    assert run.state == "failed"
    assert [j.job_id is not None for j in jobs] == [True] * 9 + [False]


def test_status_compares_planned_and_actual(cache: Path) -> None:
    run, jobs = submitted_run(cache)
    by_task = {j.task_id: j for j in jobs}
    records = [record(by_task["fork"].job_id, by_task["fork"].partition, 2, 3)]
    records += [record(by_task[w].job_id, by_task[w].partition, 5, 8) for w in WORKS]
    records.append(record(by_task["join"].job_id, by_task["join"].partition, 10, 11))
    submitted = datetime(2026, 1, 1, 12)
    data = compare(run, jobs, records, submitted).to_json()
    validate(data, "submit-output", source="status")
    assert data["actual_makespan_s"] == 9.0 and data["turnaround_s"] == 11.0
    assert data["planned_makespan_s"] == 5.0
    assert data["dependency_order_ok"] is True and data["partitions_match"] is True
    assert data["jobs_completed"] == 10 and data["finished"] is True
    assert {r["id"]: r["start_s"] for r in data["jobs"]}["join"] == 8.0
    early = [
        r if r.job_id_raw != by_task["join"].job_id else record(r.job_id_raw, "fat", 7, 9)
        for r in records
    ]
    worse = compare(run, jobs, early, submitted).to_json()
    assert worse["dependency_order_ok"] is False
    assert worse["partitions_match"] is (by_task["join"].partition == "fat")
    still = record(by_task["join"].job_id, "cpu", 10, None, "RUNNING")
    running = compare(run, jobs, [*records[:-1], still], submitted).to_json()
    assert running["actual_makespan_s"] is None and running["finished"] is False
    assert running["jobs_final"] == 9


def test_status_asks_sacct_for_the_runs_job_ids(cache: Path) -> None:
    _, jobs = submitted_run(cache)
    asked: list[tuple[datetime, datetime, tuple[int, ...]]] = []

    def accounting(start: datetime, end: datetime, ids: Sequence[int]) -> list[JobRecord]:
        asked.append((start, end, tuple(ids)))
        return []

    data = workflow_status(str(cache), None, accounting=accounting).to_json()
    assert asked and asked[0][2] == tuple(j.job_id for j in jobs)
    assert asked[0][0] < asked[0][1]
    assert {r["state"] for r in data["jobs"]} == {"NOT_IN_ACCOUNTING"}
    assert data["dependency_order_ok"] is None and data["partitions_match"] is None


def test_submit_usage_and_input_errors(
    capsys: pytest.CaptureFixture[str], cache: Path, tmp_path: Path
) -> None:
    assert main(["submit", "--db", str(cache)]) == 2
    assert "give a WORKFLOW" in capsys.readouterr().err
    assert main(["submit", "--status", "x", "--db", str(cache)]) == 2
    assert "not a run id" in capsys.readouterr().err
    assert main(["submit", "--status", "--db", str(cache)]) == 2
    assert "no workflow has been submitted" in capsys.readouterr().err
    bare = tmp_path / "bare.json"
    doc = json.loads(FORKJOIN.read_text())
    del doc["workflow"]["specification"]["tasks"][3]["advisor"]["command"]
    bare.write_text(json.dumps(doc))
    assert main(["submit", str(bare), "--dry-run", "--db", str(cache)]) == 2
    assert "task 'work_3' has no command" in capsys.readouterr().err
    assert (
        main(["submit", str(FORKJOIN), "--dry-run", "--db", str(cache), "--partition", "gpu"]) == 2
    )
    assert "unknown partition 'gpu'" in capsys.readouterr().err


def test_plan_on_the_cached_cluster(capsys: pytest.CaptureFixture[str], cache: Path) -> None:
    assert main(["plan", str(FORKJOIN), "--db", str(cache), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    validate(data, "plan-output", source="plan")
    assert [n["name"] for n in data["nodes"]] == ["c1", "c2", "f1"]
    assert data["cluster"]["classes"] == [
        {"name": "small", "nodes": ["c1", "c2"], "cores": 4},
        {"name": "big", "nodes": ["f1"], "cores": 8},
    ]
    rows = {row["id"]: row for row in data["tasks"]}
    assert {rows[t]["partition"] for t in rows} <= {"cpu", "fat"}
    assert all(rows[t]["constraint"] is None and rows[t]["limit_s"] == 60 for t in rows)
    assert rows["join"]["start_s"] >= max(rows[w]["finish_s"] for w in WORKS)
    assert main(["plan", str(FORKJOIN), "--db", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "Tasks (jobs)" in out and "00:01:00" in out
    assert main(["plan", str(FORKJOIN), "--db", str(cache), "--nodes", "2"]) == 2
    assert "--nodes/--cores plan on made-up nodes" in capsys.readouterr().err


def test_plan_uses_the_task_models(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cache = train(tmp_path / "models.db", "align", PARTITIONS, NODES)
    spec = [
        {
            "name": "align",
            "id": f"align_{i}",
            "parents": [],
            "children": [],
            "inputFiles": [f"reads_{i}"],
            "advisor": {"command": "true"},
        }
        for i in range(3)
    ]
    files = [{"id": f"reads_{i}", "sizeInBytes": 10**9} for i in range(3)]
    flow = tmp_path / "aligns.json"
    flow.write_text(
        json.dumps(
            {
                "name": "aligns",
                "schemaVersion": "1.5",
                "workflow": {"specification": {"tasks": spec, "files": files}},
            }
        )
    )
    assert main(["plan", str(flow), "--db", str(cache), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    with Store.open(cache, readonly=True) as store:
        predictor = load_snapshot(store, ("align",)).predictor
    for row in data["tasks"]:
        assert row["runtime_source"].startswith("model:")
        forecast = predictor.forecast("align", 10**9, row["node_class"], 0.95)
        assert forecast is not None
        assert row["finish_s"] - row["start_s"] == pytest.approx(forecast.mean_s)
    assert {row["node_class"] for row in data["tasks"]} == {"big"}  # f1 runs it twice as fast
    assert data["p95_s"] > data["makespan_s"]  # the models' spread, not a fixed cv
