"""``advisor calibrate``: one short run of a task on every node class, stored and learnt."""

from __future__ import annotations

import argparse
import logging

from advisor.errors import AdvisorError, UsageError
from advisor.progress import ProgressBar
from advisor.render import Result, Table
from advisor.services.calibrate import CalibrationRequest, calibrate
from advisor.slurm.backend import CliBackend
from advisor.store import Store
from advisor.text import storable

log = logging.getLogger(__name__)

COLUMNS = (
    "node_class", "node", "partition", "status", "job_id", "runtime_s",
    "predicted_before_s", "predicted_after_s", "p95_after_s", "error",
)  # fmt: skip


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "calibrate",
        parents=parents,
        help="run a task once on every node class and learn the runs",
        description="Runs COMMAND (as sbatch --wrap) once on one node of each node class of "
        "the selected partitions, all classes in parallel, each job pinned to its node "
        "(sbatch --wait --nodelist). Each run's Slurm runtime is stored as an observation of "
        "its class with the uncompressed size of --input, and the class's model learns it. "
        "A class whose job fails, is killed at --time-limit or does not end within --timeout "
        "is reported by name; the others are stored. Run it from a directory the nodes share.",
    )
    parser.add_argument("task", type=storable, help="the task (process) name")
    parser.add_argument("--command", required=True, help="the shell command of one short run")
    parser.add_argument(
        "--input", nargs="+", required=True, metavar="SMALL",
        help="the small input files the command reads (gzip/bgzip measured uncompressed)",
    )  # fmt: skip
    parser.add_argument(
        "--partition", action="append", default=[], metavar="P",
        help="probe the node classes of P (repeatable; default: every partition)",
    )  # fmt: skip
    parser.add_argument(
        "--time-limit", type=int, default=10, metavar="MIN",
        help="each job's Slurm time limit in minutes (default 10)",
    )  # fmt: skip
    parser.add_argument(
        "--timeout", type=float, default=900.0, metavar="S",
        help="cancel a job that has not ended after S s, queueing included (default 900)",
    )  # fmt: skip
    parser.add_argument("--cores", type=int, help="--cpus-per-task of each job")
    parser.add_argument(
        "--dir", metavar="D", help="where the jobs write their output (default: here)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Calibrate, and lay out; fails (exit 1) only when no class gave a run."""
    if args.time_limit < 1 or args.timeout <= 0 or (args.cores is not None and args.cores < 1):
        raise UsageError("--time-limit, --timeout and --cores must be positive")
    request = CalibrationRequest(
        task=args.task,
        command=args.command,
        inputs=tuple(args.input),
        partitions=tuple(args.partition),
        time_limit_min=args.time_limit,
        timeout_s=args.timeout,
        cores=args.cores,
        directory=args.dir,
    )
    with (
        Store.open(getattr(args, "db", None)) as store,
        ProgressBar("calibrate: classes done") as bar,
    ):
        done = calibrate(CliBackend(), store, request, on_progress=bar)
    failed = done.failed
    if len(failed) == len(done.outcomes):
        raise AdvisorError(
            "calibration failed on every node class: "
            + "; ".join(f"{o.node_class}: {o.error}" for o in failed)
        )
    notes = [f"failed: {o.node_class} ({o.node}): {o.error}" for o in failed]
    for note in notes:  # on stderr too, where --format json leaves the notes out
        log.warning("calibrate %s", note)
    if not done.modelled:
        notes.append(f"runs stored; {done.task!r} has no model yet: run 'advisor learn'")
    rows = [o.to_json() for o in done.outcomes]
    return Result(data=done.to_json(), tables=(Table(rows, columns=COLUMNS),), notes=tuple(notes))
