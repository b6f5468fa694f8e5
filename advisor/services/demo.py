"""The demo: the advisor's main job on a throw-away cache built from the bundled samples.

Needs no Slurm and no set-up.  Every part runs the code the real commands run: ``advisor learn``,
the wrapper's own decision (``advisor sbatch --advisor-dry-run``), ``advisor plan`` and
``advisor submit --dry-run`` on the cached cluster, and ``advisor replay`` on a real log.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from advisor.imports.json_files import read_cluster, read_task_runs
from advisor.replay.jobs import replay_jobs
from advisor.replay.run import limit_series, policies, replay, scores_report
from advisor.services.cluster import cluster_view
from advisor.services.learn import learn
from advisor.store import Store
from advisor.store.cluster import load_nodes, load_partitions, save_cluster
from advisor.store.observations import add_observations

#: The sample job of part 2: task, candidate partitions (fast and slow nodes), input size.
SAMPLE_TASK = "bwa"
SAMPLE_PARTITIONS = "fast,legacy"
SAMPLE_INPUT_BYTES = 4_000_000_000
#: The real log of part 4 (advisor/sample/PROVENANCE.md) and the bundled workflow of part 3.
SAMPLE_LOG = "curie-3000.swf"
SAMPLE_WORKFLOW = "workflow.json"
#: The submit lines of the plan shown (the first tasks').
SHOWN_SUBMITS = 4


@dataclass(frozen=True)
class DemoResult:
    """What each part of the demo produced; ``document`` is the --format json output."""

    cache: str
    imported_runs: int
    partitions: list[dict[str, Any]]
    models: list[dict[str, Any]]
    sbatch_argv: list[str]
    sbatch: dict[str, Any]
    limits: list[dict[str, Any]]
    plan: dict[str, Any]
    replay: dict[str, Any]
    plots: list[str]
    next_commands: list[str]

    def document(self) -> dict[str, Any]:
        """The JSON document (schemas/demo-output.json)."""
        return {
            "cache": self.cache,
            "imported_runs": self.imported_runs,
            "partitions": self.partitions,
            "models": self.models,
            "sbatch": {"argv": self.sbatch_argv, "explain": self.sbatch},
            "limits": self.limits,
            "plan": self.plan,
            "replay": self.replay,
            "plots": self.plots,
            "next_commands": self.next_commands,
        }


def sample_file(name: str) -> Path:
    """A file of the bundled sample data."""
    return Path(str(resources.files("advisor.sample").joinpath(name)))


def plots_available() -> bool:
    """True when matplotlib (the ``plots`` extra) is installed."""
    return importlib.util.find_spec("matplotlib") is not None


def _build_cache(db_path: Path) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]]]:
    """Import the sample cluster and runs, learn: (runs imported, partitions, model rows)."""
    partitions, nodes = read_cluster(sample_file("cluster.json"))
    runs = read_task_runs(sample_file("task-runs.json"), source="sample:task-runs.json")
    with Store.open(db_path) as store:
        save_cluster(store, partitions, nodes)
        imported = add_observations(store, runs)
        view = cluster_view(load_partitions(store), load_nodes(store))
        learned = learn(store)
    models = [
        {
            "task": m.task,
            "node_classes": [m.reference, *m.classes],
            "kind": m.kind,
            "pearson_r": m.pearson_r,
            "cpu_weight": m.cpu_weight,
            "runs": m.n_train,
        }
        for m in learned.task_models
    ]
    return imported, [p.to_json() for p in view.partitions], models


def sample_argv(db_path: Path, workdir: Path) -> list[str]:
    """The sample job's ``advisor sbatch`` arguments (its files in workdir)."""
    return [
        "--advisor-db", str(db_path), "--advisor-dry-run", "--advisor-explain",
        "-p", SAMPLE_PARTITIONS, "--advisor-task", SAMPLE_TASK,
        "--advisor-input", str(workdir / "reads.fastq"), str(workdir / "align.sh"),
    ]  # fmt: skip


def write_sample_job(workdir: Path) -> None:
    """The sample job's script, and a sparse input of the bundled size (no bytes on disk)."""
    (workdir / "align.sh").write_text(
        "#!/bin/bash\n#SBATCH --job-name=align\nbwa aln ref.fa reads.fastq -f reads.sai\n"
    )
    with (workdir / "reads.fastq").open("wb") as handle:
        handle.truncate(SAMPLE_INPUT_BYTES)


def wrapper_decision(argv: list[str]) -> dict[str, Any]:
    """What ``advisor sbatch ARGV`` decides: the wrapper's own code, its real side effects."""
    from advisor.wrapper.argv import parse_command_line
    from advisor.wrapper.effects import real
    from advisor.wrapper.explain import explanation
    from advisor.wrapper.submit import prepare

    prepared = prepare(parse_command_line(argv), real())
    return explanation(prepared.plan, prepared.argv, prepared.warning)


def limit_rows(explained: dict[str, Any]) -> list[dict[str, Any]]:
    """Per partition: the limit, and P50/P95 of the slowest node class (the one that sets it)."""
    rows = []
    for part in explained["partitions"]:
        slowest = max(part["node_classes"], key=lambda c: c["quantile_s"], default=None)
        rows.append(
            {
                "partition": part["partition"],
                "node_class": slowest["node_class"] if slowest else None,
                "p50_s": slowest["p50_s"] if slowest else None,
                "p95_s": slowest["p95_s"] if slowest else None,
                "limit_s": part["limit_s"],
                "why": part["reason"],
            }
        )
    return rows


def _plan(db_path: Path, plots_dir: Path | None) -> dict[str, Any]:
    """HEFT on the cached cluster, and the first tasks' submit lines (advisor submit --dry-run)."""
    from advisor.planner.gantt import save_gantt
    from advisor.planner.planning import PlanRequest
    from advisor.services.plan import plan_workflows
    from advisor.services.submit import submit_workflow
    from advisor.wrapper.effects import user

    request = PlanRequest(inputs=(str(sample_file(SAMPLE_WORKFLOW)),), db=str(db_path), user=user())
    plan, data = plan_workflows(request)
    submitted = submit_workflow(request, dry_run=True)
    gantt = None
    if plots_dir is not None:
        gantt = plots_dir / "plan-gantt.png"
        save_gantt(plan, gantt)
    workflow = data["workflows"][0]
    return {
        "workflow": workflow["name"],
        "algorithm": data["algorithm"],
        "makespan_s": data["makespan_s"],
        "p50_s": data["p50_s"],
        "p95_s": data["p95_s"],
        "estimates": workflow["estimates"],
        "tasks": [
            {
                "task": row["id"],
                "node_class": row["node_class"],
                "partition": row["partition"],
                "constraint": row.get("constraint"),
                "nodelist": row.get("nodelist"),
                "start_s": row["start_s"],
                "finish_s": row["finish_s"],
                "limit_s": row["limit_s"],
            }
            for row in data["tasks"]
        ],
        "submit_lines": [job["command_line"] for job in submitted["jobs"][:SHOWN_SUBMITS]],
        "gantt": str(gantt) if gantt else None,
    }


def _replay(plots_dir: Path | None) -> dict[str, Any]:
    """The history policy and the baselines replayed on the bundled log."""
    from advisor.accounting.swf import read_swf

    log = sample_file(SAMPLE_LOG)
    jobs = replay_jobs(read_swf(log))
    scores = replay(jobs, policies(), keep=("user", "advisor") if plots_dir else ())
    report = scores_report(jobs, scores, source=SAMPLE_LOG)
    plot = None
    if plots_dir is not None:
        from advisor.reports.plots import save_limit_series

        plot = plots_dir / "replay-limits.png"
        save_limit_series(limit_series(jobs, scores), plot, title=f"replay of {SAMPLE_LOG}")
    advisor = report["policies"]["advisor"]
    return {
        "log": SAMPLE_LOG,
        "attribution": "CEA Curie 2011, from the Parallel Workloads Archive (Feitelson et al.)",
        "jobs": report["jobs"],
        "completed": report["completed"],
        "killed_completed_pct": advisor["killed_completed_pct"],
        "freed_pct": advisor["freed_pct"],
        "policies": [
            {
                "policy": name,
                "killed_completed_pct": figures["killed_completed_pct"],
                "freed_pct": figures["freed_pct"],
            }
            for name, figures in report["policies"].items()
        ],
        "plot": str(plot) if plot else None,
    }


def next_commands(db_path: Path, workdir: Path) -> list[str]:
    """Three commands to try next on the cache at db_path."""
    from advisor.wrapper.explain import command_line

    db = command_line([str(db_path)])
    job = sample_argv(db_path, workdir)[2:]  # the --db before the command names the cache
    return [
        f"advisor --db {db} predict --task {SAMPLE_TASK} --input-bytes {SAMPLE_INPUT_BYTES}",
        f"advisor --db {db} sbatch {command_line(job)}",
        f"advisor --db {db} plan {command_line([str(sample_file(SAMPLE_WORKFLOW))])}",
    ]


def demo_files(db_path: Path) -> Path:
    """Where a kept cache's sample files go: DB-demo/ beside it."""
    return db_path.with_name(db_path.stem + "-demo")


def run_demo(db_path: Path, workdir: Path, *, plots_dir: Path | None = None) -> DemoResult:
    """Build the cache at db_path and run every part; sample files go to workdir."""
    workdir.mkdir(parents=True, exist_ok=True)
    if plots_dir is not None:
        plots_dir.mkdir(parents=True, exist_ok=True)
    imported, partitions, models = _build_cache(db_path)
    write_sample_job(workdir)
    argv = sample_argv(db_path, workdir)
    explained = wrapper_decision(argv)
    plan = _plan(db_path, plots_dir)
    replayed = _replay(plots_dir)
    plots = [p for p in (replayed["plot"], plan["gantt"]) if p]
    return DemoResult(
        cache=os.fspath(db_path),
        imported_runs=imported,
        partitions=partitions,
        models=models,
        sbatch_argv=["sbatch", *argv],
        sbatch=explained,
        limits=limit_rows(explained),
        plan=plan,
        replay=replayed,
        plots=plots,
        next_commands=next_commands(db_path, workdir),
    )
