"""The demo: the advisor's main job on a throw-away cache built from the bundled samples.

Needs no Slurm and no set-up.  Every part runs the code the real commands run: ``advisor learn``,
the wrapper's own decision (``advisor sbatch --advisor-dry-run``), ``advisor plan`` and
``advisor submit --dry-run`` on the cached cluster, and ``advisor replay`` on a real log.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.imports.json_files import read_cluster, read_task_runs
from advisor.replay.engine import limit_series, replay
from advisor.replay.jobs import replay_jobs
from advisor.services.cluster import PartitionView, cluster_view
from advisor.services.learn import learn
from advisor.services.replay import policies, scores_report
from advisor.store import Store
from advisor.store.cluster import load_nodes, load_partitions, save_cluster
from advisor.store.observations import add_observations

if TYPE_CHECKING:
    from advisor.planner.scheduling.plan import Plan
    from advisor.wrapper.explain import Explanation

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
class DemoModel:
    """A task's learned model, in brief."""

    task: str
    node_classes: tuple[str, ...]
    kind: str
    pearson_r: float | None
    cpu_weight: float
    runs: int

    def to_json(self) -> dict[str, Any]:
        """The model's row."""
        return {"task": self.task, "node_classes": list(self.node_classes), "kind": self.kind,
                "pearson_r": self.pearson_r, "cpu_weight": self.cpu_weight, "runs": self.runs}  # fmt: skip


@dataclass(frozen=True)
class DemoTask:
    """A task of the planned sample workflow: its class, partition, pinning, limit and why."""

    task: str
    node_class: str | None
    partition: str | None
    constraint: str | None
    nodelist: str | None
    start_s: float
    finish_s: float
    limit_s: int | None
    #: the class that runs the task fastest, and why it runs where it does (planner.reasons)
    fastest_class: str
    why: str

    def to_json(self) -> dict[str, Any]:
        """The task's row."""
        return {
            "task": self.task,
            "node_class": self.node_class,
            "partition": self.partition,
            "constraint": self.constraint,
            "nodelist": self.nodelist,
            "start_s": self.start_s,
            "finish_s": self.finish_s,
            "limit_s": self.limit_s,
            "fastest_class": self.fastest_class,
            "why": self.why,
        }


@dataclass(frozen=True)
class DemoClass:
    """A node class the sample workflow was planned on: its cores and the tasks it got."""

    node_class: str
    cores: int
    tasks: int

    def to_json(self) -> dict[str, Any]:
        """The class's row."""
        return {"node_class": self.node_class, "cores": self.cores, "tasks": self.tasks}


@dataclass(frozen=True)
class DemoPlan:
    """The sample workflow planned on the sample cluster, and its first submit lines."""

    workflow: str
    algorithm: str
    makespan_s: float
    p50_s: float
    p95_s: float
    #: the workflow's classic estimates by name (naive_s, naive_concurrent_s, critical_path_s)
    estimates: Mapping[str, float] | None
    #: the classes of the nodes planned on, in the planner's order
    classes: tuple[DemoClass, ...]
    tasks: tuple[DemoTask, ...]
    submit_lines: tuple[str, ...]
    gantt: str | None

    def to_json(self) -> dict[str, Any]:
        """The demo's ``plan`` object."""
        return {
            "workflow": self.workflow,
            "algorithm": self.algorithm,
            "makespan_s": self.makespan_s,
            "p50_s": self.p50_s,
            "p95_s": self.p95_s,
            "estimates": None if self.estimates is None else dict(self.estimates),
            "classes": [c.to_json() for c in self.classes],
            "tasks": [t.to_json() for t in self.tasks],
            "submit_lines": list(self.submit_lines),
            "gantt": self.gantt,
        }


@dataclass(frozen=True)
class PolicyScore:
    """One policy replayed: completed jobs killed at its limits, reserved time freed."""

    policy: str
    killed_completed_pct: float
    freed_pct: float

    def to_json(self) -> dict[str, Any]:
        """The policy's row."""
        return {"policy": self.policy, "killed_completed_pct": self.killed_completed_pct,
                "freed_pct": self.freed_pct}  # fmt: skip


@dataclass(frozen=True)
class DemoReplay:
    """The history policy and the baselines on the bundled log."""

    log: str
    attribution: str
    jobs: int
    completed: int
    killed_completed_pct: float
    freed_pct: float
    policies: tuple[PolicyScore, ...]
    plot: str | None

    def to_json(self) -> dict[str, Any]:
        """The demo's ``replay`` object."""
        return {
            "log": self.log,
            "attribution": self.attribution,
            "jobs": self.jobs,
            "completed": self.completed,
            "killed_completed_pct": self.killed_completed_pct,
            "freed_pct": self.freed_pct,
            "policies": [p.to_json() for p in self.policies],
            "plot": self.plot,
        }


@dataclass(frozen=True)
class DemoResult:
    """What each part of the demo produced; ``to_json`` is the --format json output."""

    cache: str
    imported_runs: int
    partitions: tuple[PartitionView, ...]
    models: tuple[DemoModel, ...]
    sbatch_argv: tuple[str, ...]
    #: the wrapper's own explanation (advisor.wrapper.explain)
    sbatch: Explanation
    limits: tuple[Mapping[str, Any], ...]
    plan: DemoPlan
    replay: DemoReplay
    plots: tuple[str, ...]
    next_commands: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The JSON document (schemas/demo-output.json)."""
        return {
            "cache": self.cache,
            "imported_runs": self.imported_runs,
            "partitions": [p.to_json() for p in self.partitions],
            "models": [m.to_json() for m in self.models],
            "sbatch": {"argv": list(self.sbatch_argv), "explain": self.sbatch.to_json()},
            "limits": [dict(row) for row in self.limits],
            "plan": self.plan.to_json(),
            "replay": self.replay.to_json(),
            "plots": list(self.plots),
            "next_commands": list(self.next_commands),
        }


def sample_file(name: str) -> Path:
    """A file of the bundled sample data."""
    return Path(str(resources.files("advisor.sample").joinpath(name)))


def plots_available() -> bool:
    """True when matplotlib (the ``plots`` extra) is installed."""
    return importlib.util.find_spec("matplotlib") is not None


def _build_cache(db_path: Path) -> tuple[int, tuple[PartitionView, ...], tuple[DemoModel, ...]]:
    """Import the sample cluster and runs, learn: (runs imported, partitions, model rows)."""
    partitions, nodes = read_cluster(sample_file("cluster.json"))
    runs = read_task_runs(sample_file("task-runs.json"), source="sample:task-runs.json")
    with Store.open(db_path) as store:
        save_cluster(store, partitions, nodes)
        imported = add_observations(store, runs)
        view = cluster_view(load_partitions(store), load_nodes(store))
        learned = learn(store)
    models = tuple(
        DemoModel(
            task=m.task,
            node_classes=(m.reference, *m.classes),
            kind=m.kind,
            pearson_r=m.pearson_r,
            cpu_weight=m.cpu_weight,
            runs=m.n_train,
        )
        for m in learned.task_models
    )
    return imported, view.partitions, models


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


def wrapper_decision(argv: list[str]) -> Explanation:
    """What ``advisor sbatch ARGV`` decides: the wrapper's own code, its real side effects."""
    from advisor.advice.settings import parse_command_line
    from advisor.wrapper.effects import real
    from advisor.wrapper.explain import explanation
    from advisor.wrapper.submit import prepare

    prepared = prepare(parse_command_line(argv), real())
    return explanation(prepared.advice, prepared.argv, prepared.warning)


def limit_rows(explained: Explanation) -> list[dict[str, Any]]:
    """Per partition: the limit, and P50/P95 of the slowest node class (the one that sets it)."""
    rows = []
    for limit in explained.partitions:
        slowest = max(limit.forecasts, key=lambda f: f.quantile_s, default=None)
        rows.append(
            {
                "partition": limit.partition,
                "node_class": slowest.node_class if slowest else None,
                "p50_s": slowest.p50_s if slowest else None,
                "p95_s": slowest.p95_s if slowest else None,
                "limit_s": limit.limit_s,
                "why": limit.reason,
            }
        )
    return rows


def node_classes(plan: Plan) -> tuple[DemoClass, ...]:
    """The plan's node classes with their cores and how many tasks each runs."""
    class_of = [node.node_class or node.name for node in plan.problem.nodes]
    cores: Counter[str] = Counter()
    for node, name in zip(plan.problem.nodes, class_of, strict=True):
        cores[name] += node.cores
    tasks = Counter(class_of[p.node] for p in plan.placements)
    return tuple(
        DemoClass(node_class=name, cores=count, tasks=tasks[name]) for name, count in cores.items()
    )


def _plan(db_path: Path, plots_dir: Path | None) -> DemoPlan:
    """HEFT on the cached cluster, and the first tasks' submit lines (advisor submit --dry-run)."""
    from advisor.planner.cluster.reasons import placement_reasons
    from advisor.planner.gantt import save_gantt
    from advisor.services.plan import PlanRequest, plan_workflows
    from advisor.services.submit import submit_workflow
    from advisor.users import current_user

    request = PlanRequest(
        inputs=(str(sample_file(SAMPLE_WORKFLOW)),), db=str(db_path), user=current_user()
    )
    planned = plan_workflows(request)
    submitted = submit_workflow(request, dry_run=True)
    gantt = None
    if plots_dir is not None:
        gantt = plots_dir / "plan-gantt.png"
        save_gantt(planned.plan, gantt)
    summary = planned.summary
    workflow = summary.workflows[0]
    reasons = placement_reasons(planned.plan)
    return DemoPlan(
        workflow=workflow.name,
        algorithm=summary.algorithm,
        makespan_s=summary.makespan_s,
        p50_s=summary.p50_s,
        p95_s=summary.p95_s,
        estimates=workflow.estimates,
        classes=node_classes(planned.plan),
        tasks=tuple(
            DemoTask(
                task=row.id,
                node_class=row.job.node_class if row.job else None,
                partition=row.job.partition if row.job else None,
                constraint=row.job.constraint if row.job else None,
                nodelist=row.job.nodelist if row.job else None,
                start_s=row.start_s,
                finish_s=row.finish_s,
                limit_s=row.job.limit_s if row.job else None,
                fastest_class=reasons[row.id].fastest_class,
                why=reasons[row.id].text,
            )
            for row in summary.tasks
        ),
        submit_lines=tuple(job.command_line for job in submitted.jobs[:SHOWN_SUBMITS]),
        gantt=str(gantt) if gantt else None,
    )


def _replay(plots_dir: Path | None) -> DemoReplay:
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
    return DemoReplay(
        log=SAMPLE_LOG,
        attribution="CEA Curie 2011, from the Parallel Workloads Archive (Feitelson et al.)",
        jobs=report["jobs"],
        completed=report["completed"],
        killed_completed_pct=advisor["killed_completed_pct"],
        freed_pct=advisor["freed_pct"],
        policies=tuple(
            PolicyScore(name, figures["killed_completed_pct"], figures["freed_pct"])
            for name, figures in report["policies"].items()
        ),
        plot=str(plot) if plot else None,
    )


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
    plots = tuple(p for p in (replayed.plot, plan.gantt) if p)
    return DemoResult(
        cache=os.fspath(db_path),
        imported_runs=imported,
        partitions=partitions,
        models=models,
        sbatch_argv=("sbatch", *argv),
        sbatch=explained,
        limits=tuple(limit_rows(explained)),
        plan=plan,
        replay=replayed,
        plots=plots,
        next_commands=tuple(next_commands(db_path, workdir)),
    )


def demo(db: str | None) -> DemoResult:
    """The demo in a temporary directory (plots kept), or on the cache db names, kept."""
    if db:
        kept = Path(db)
        workdir = demo_files(kept)
        return run_demo(kept, workdir, plots_dir=workdir if plots_available() else None)
    plots = Path(tempfile.mkdtemp(prefix="advisor-demo-plots-")) if plots_available() else None
    with tempfile.TemporaryDirectory(prefix="advisor-demo-") as tmp:
        result = run_demo(Path(tmp) / "cache.db", Path(tmp), plots_dir=plots)
    keep = Path("demo.db")
    again = ("advisor --db demo.db demo", *next_commands(keep, demo_files(keep)))
    return replace(result, cache="(temporary)", next_commands=again)
