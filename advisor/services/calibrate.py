"""``advisor calibrate``: one short run of a task on every node class, learnt as it ran.

The practical form of "one observed run per task and node class" (issue 19): the task's command
runs once on a small input, on one node of each class at the same time, each as its own batch
job pinned to its node (``sbatch --wait --nodelist``).  Each run's runtime is Slurm's (sacct
Elapsed, the quantity the limits are about); it is stored as an observation of its class
(source 'calibrate', no user: like an administrator's import, it shapes the shared models) and
learnt online (advisor.models.online), so the next prediction for that class already uses it.
The input's size is its uncompressed size (advisor.inputs), the model's feature.

A class whose job is refused, fails, is killed at its limit or does not end in time is named
with the reason, and the other classes' runs are stored.  Which node stands for a class: the
first node of the selected partitions, in their order, that can run a job now.
"""

from __future__ import annotations

import secrets
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError, InputError
from advisor.inputs import total_uncompressed
from advisor.models.distributions import Predictive
from advisor.models.loading import NodeContext, load_models, load_node_context
from advisor.models.memory_book import learn_online
from advisor.models.online import update_online
from advisor.models.predict import NoFactorError, TaskModels, predict_task
from advisor.progress import Progress
from advisor.services.profile import ProfileRequest, Target, select_targets
from advisor.slurm.backend import CliBackend
from advisor.slurm.records import JobRecord
from advisor.store.cluster import save_cluster
from advisor.store.connection import Store
from advisor.store.observations import Observation, add_observations

#: sacct has a job's final record a few seconds after it ends (slurmdbd writes it in steps).
RECORD_WAIT_S = 60.0
SOURCE = "calibrate"


@dataclass(frozen=True)
class CalibrationRequest:
    """What to run, on which input, where, and for how long at most."""

    task: str
    command: str
    inputs: tuple[str, ...]
    partitions: tuple[str, ...] = ()
    time_limit_min: int = 10
    timeout_s: float = 900.0
    cores: int | None = None
    directory: str | None = None


@dataclass(frozen=True)
class ClassOutcome:
    """One node class's probe: its run, or why there is none, and the prediction it moved."""

    node_class: str
    node: str | None
    partition: str | None
    job_id: int | None = None
    runtime_s: float | None = None
    error: str | None = None
    before: Predictive | None = None
    after: Predictive | None = None
    observation: Observation | None = None

    @property
    def status(self) -> str:
        """stored, or failed (with the error)."""
        return "failed" if self.error else "stored"

    def to_json(self) -> dict[str, Any]:
        """The class's row in schemas/calibrate-output.json."""
        return {
            "node_class": self.node_class,
            "node": self.node,
            "partition": self.partition,
            "status": self.status,
            "job_id": self.job_id,
            "runtime_s": self.runtime_s,
            "predicted_before_s": None if self.before is None else float(self.before.mean_s),
            "predicted_after_s": None if self.after is None else float(self.after.mean_s),
            "p95_after_s": None if self.after is None else float(self.after.p95_s),
            "error": self.error,
        }


@dataclass(frozen=True)
class Calibration:
    """Every class's outcome, the input size the runs had, and whether a model was updated."""

    task: str
    input_bytes: int
    outcomes: tuple[ClassOutcome, ...]
    modelled: bool

    @property
    def failed(self) -> tuple[ClassOutcome, ...]:
        """The classes whose probe gave no run, with why."""
        return tuple(o for o in self.outcomes if o.error)

    def to_json(self) -> dict[str, Any]:
        """The document ``advisor calibrate`` prints."""
        return {
            "task": self.task,
            "input_bytes": self.input_bytes,
            "stored": len(self.outcomes) - len(self.failed),
            "failed": len(self.failed),
            "classes": [o.to_json() for o in self.outcomes],
        }


def class_targets(targets: Sequence[Target], context: NodeContext) -> dict[str, list[Target]]:
    """The selected nodes grouped by node class, in order (a node without class is its own)."""
    out: dict[str, list[Target]] = {}
    for target in targets:
        out.setdefault(context.class_of(target.node), []).append(target)
    return out


def sbatch_args(request: CalibrationRequest, target: Target, output: Path) -> list[str]:
    """The probe's sbatch options: pinned to the node, one task, the time limit, the command."""
    args = [
        f"--partition={target.partition}",
        f"--nodelist={target.node}",
        "--nodes=1",
        "--ntasks=1",
        f"--time={request.time_limit_min}",
        f"--output={output}",
    ]
    if request.cores:
        args.append(f"--cpus-per-task={request.cores}")
    return [*args, f"--wrap={request.command}"]


def _tail(path: Path) -> str:
    """The last non-empty line of a job's output, if it left one."""
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines()]
    except OSError:
        return ""
    last = next((line for line in reversed(lines) if line), "")
    return last[:200]


def final_record(
    backend: CliBackend,
    job_id: int,
    since: datetime,
    *,
    wait_s: float = RECORD_WAIT_S,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], datetime] = datetime.now,
) -> JobRecord | None:
    """The job's final sacct record, polled until slurmdbd has it (None after wait_s)."""
    deadline = time.monotonic() + wait_s
    while True:
        found = [
            r
            for r in backend.accounting(since, now() + timedelta(minutes=1), job_ids=[job_id])
            if r.job_id_raw == job_id
        ]
        if found and found[0].is_final:
            return found[0]
        if time.monotonic() >= deadline:
            return None
        sleep(1.0)


def _failure(record: JobRecord, request: CalibrationRequest, output: Path) -> str:
    if record.state == "TIMEOUT":
        return f"job {record.job_id} killed at its limit of {request.time_limit_min} min"
    detail = _tail(output)
    code = f" (exit {record.exit_code})" if record.exit_code else ""
    return f"job {record.job_id} {record.state}{code}" + (f": {detail}" if detail else "")


def probe_class(
    backend: CliBackend,
    request: CalibrationRequest,
    node_class: str,
    targets: Sequence[Target],
    input_bytes: int,
    folder: Path,
    token: str,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> ClassOutcome:
    """Run the command once on the class's first usable node; every failure is the error."""
    usable = next((t for t in targets if t.problem is None), None)
    if usable is None:
        first = targets[0]
        return ClassOutcome(node_class, first.node, first.partition, error=first.problem)
    output = folder / f"{usable.node}.out"
    since = datetime.now().replace(microsecond=0) - timedelta(seconds=5)
    try:
        job = backend.run_job(
            sbatch_args(request, usable, output),
            job_name=f"advisor-calibrate-{token}-{usable.node}",
            timeout_s=request.timeout_s,
        )
        record = final_record(backend, job.job_id, since, sleep=sleep)
    except AdvisorError as error:
        return ClassOutcome(node_class, usable.node, usable.partition, error=error.one_line())
    if record is None:
        return ClassOutcome(
            node_class=node_class, node=usable.node, partition=usable.partition, job_id=job.job_id,
            error=f"job {job.job_id}: no final accounting record within {RECORD_WAIT_S:g} s",
        )  # fmt: skip
    if record.state != "COMPLETED" or record.exit_code:
        return ClassOutcome(
            node_class=node_class, node=usable.node, partition=usable.partition, job_id=job.job_id,
            error=_failure(record, request, output),
        )  # fmt: skip
    ran_on = record.nodes[0] if record.nodes else usable.node
    observation = Observation(
        source=SOURCE,
        source_key=f"{record.cluster}:{record.job_id}",
        task=request.task,
        runtime_s=float(record.elapsed_s),
        node=ran_on,
        node_class=node_class,
        label="calibration",
        input_bytes=input_bytes,
        cores=record.cpus or None,
        partition=record.partition,
        state=record.state,
        observed_at=record.end.isoformat() if record.end else None,
        peak_mem_mb=record.max_rss_mb,
    )
    return ClassOutcome(
        node_class=node_class,
        node=ran_on,
        partition=usable.partition,
        job_id=job.job_id,
        runtime_s=float(record.elapsed_s),
        observation=observation,
    )


def _prediction(
    models: TaskModels | None, context: NodeContext, node_class: str, input_bytes: int
) -> Predictive | None:
    reference = models.reference if models is not None else None
    if models is None or reference is None:
        return None
    try:
        return predict_task(models, node_class, float(input_bytes), context.scores).predictive
    except (LookupError, NoFactorError):
        return None


def calibrate(
    backend: CliBackend,
    store: Store,
    request: CalibrationRequest,
    *,
    sleep: Callable[[float], None] = time.sleep,
    on_progress: Progress | None = None,
) -> Calibration:
    """Probe every node class in parallel, store the runs, learn them (module docstring).

    on_progress(done, total) hears of each class whose probe ended (the jobs take minutes).
    """
    if not request.command.strip():
        raise InputError("--command is empty")
    input_bytes = total_uncompressed(request.inputs)
    partitions, nodes = backend.partitions(), backend.nodes()
    targets = select_targets(
        partitions, nodes, ProfileRequest(argv=(), partitions=request.partitions)
    )
    if not targets:
        raise InputError("no nodes selected", hint="check --partition")
    context = load_node_context(store)
    by_class = class_targets(targets, context)
    models = load_models(store, (request.task,)).get(request.task)
    token = secrets.token_hex(3)
    folder = Path(request.directory or ".") / f".advisor-calibrate-{token}"
    try:
        folder.mkdir(parents=True)
    except OSError as error:
        raise InputError(
            f"cannot create the jobs' output directory: {error.strerror}", source=str(folder),
            hint="give --dir a directory the nodes share and you can write",
        ) from None  # fmt: skip
    try:
        with ThreadPoolExecutor(max_workers=len(by_class)) as pool:
            futures = [
                pool.submit(
                    probe_class,
                    backend,
                    request,
                    name,
                    members,
                    input_bytes,
                    folder,
                    token,
                    sleep=sleep,
                )
                for name, members in by_class.items()
            ]
            if on_progress is not None:
                on_progress(0, len(futures))
                for done, _ in enumerate(as_completed(futures), start=1):
                    on_progress(done, len(futures))
            outcomes = [f.result() for f in futures]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    outcomes = [
        replace(o, before=_prediction(models, context, o.node_class, input_bytes)) for o in outcomes
    ]
    stored = [o.observation for o in outcomes if o.observation is not None]
    learnt: dict[str, Predictive] = {}
    with store.write():
        save_cluster(store, partitions, nodes)
        add_observations(store, stored)
        learn_online(store, stored)  # the peaks, into the task's shared memory model
        for observation in stored:
            model = update_online(store, observation)
            if model is not None and observation.node_class is not None:
                learnt[observation.node_class] = model
    final = tuple(replace(o, after=learnt.get(o.node_class)) for o in outcomes)
    return Calibration(request.task, input_bytes, final, models is not None)
