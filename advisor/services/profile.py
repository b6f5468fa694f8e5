"""``advisor profile``: the microbenchmarks on every selected node, one Slurm job per node.

Lotaru profiles every target node with short benchmarks run in parallel (Sec. 3.2).  Each node
gets its own ``srun`` pinned to it; a node that is unknown, down, busy past the start time-out,
or whose benchmark fails is reported by name and the others are stored.  Runs are added, so the
cache keeps the history of every node.
"""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from typing import Any

from advisor.errors import AdvisorError, InputError
from advisor.profiling.bench import run_from_bench_output
from advisor.profiling.recording import record_runs
from advisor.progress import Progress
from advisor.slurm.backend import CliBackend
from advisor.slurm.hostlist import expand_hostlist
from advisor.slurm.records import Node, Partition
from advisor.store.benchmarks import BenchRun
from advisor.store.cluster import save_cluster
from advisor.store.connection import Store
from advisor.validate import validate

#: scontrol state words of a node that cannot run a job now (``IDLE*`` = not responding).
UNAVAILABLE_STATES = ("DOWN", "DRAIN", "FAIL", "FUTURE", "POWER", "REBOOT", "NOT_RESPONDING")


def bench_argv(*, quick: bool = True, directory: str | None = None) -> tuple[str, ...]:
    """``advisor bench`` as run inside each job: this interpreter, so the same advisor runs."""
    argv = [sys.executable, "-m", "advisor", "bench", "--format", "json"]
    if quick:
        argv.append("--quick")
    if directory:
        argv += ["--dir", directory]
    return tuple(argv)


@dataclass(frozen=True)
class ProfileRequest:
    """Which nodes, what to run on each, and how long to wait."""

    argv: tuple[str, ...]
    partitions: tuple[str, ...] = ()
    nodelist: str | None = None
    start_timeout_s: int = 60
    timeout_s: float = 180.0


@dataclass(frozen=True)
class NodeOutcome:
    """What happened on one node: a run to store, or why not."""

    node: str
    partition: str | None = None
    run: BenchRun | None = None
    error: str | None = None
    run_id: int | None = None
    node_class: str | None = None

    @property
    def status(self) -> str:
        """stored, or failed (with the error)."""
        return "failed" if self.error else "stored"

    @property
    def scores(self) -> dict[str, float]:
        """The run's scores by metric (none when it failed)."""
        return {m: r.value for m, r in self.run.results.items()} if self.run else {}

    def to_json(self) -> dict[str, Any]:
        """The node's row in schemas/profile-output.json."""
        return {
            "node": self.node,
            "partition": self.partition,
            "status": self.status,
            "run_id": self.run_id,
            "node_class": self.node_class,
            "measured_at": self.run.measured_at if self.run else None,
            "scores": self.scores,
            "error": self.error,
        }


@dataclass(frozen=True)
class Target:
    """A node to profile and the partition to submit to (or why it cannot be profiled)."""

    node: str
    partition: str | None
    problem: str | None = None


def is_unavailable(state: str) -> bool:
    """True for a node state in which a job cannot start (down, drained, not responding...)."""
    upper = state.upper()
    return upper.endswith("*") or any(word in upper for word in UNAVAILABLE_STATES)


def select_targets(
    partitions: Sequence[Partition], nodes: Sequence[Node], request: ProfileRequest
) -> list[Target]:
    """The nodes to profile: of the given partitions (default: all), narrowed to --nodelist."""
    by_part = {p.name: p for p in partitions}
    unknown = [name for name in request.partitions if name not in by_part]
    if unknown:
        raise InputError(
            f"--partition: unknown partition {unknown[0]!r}",
            hint=f"partitions: {', '.join(sorted(by_part)) or 'none'}",
        )
    chosen = [by_part[name] for name in request.partitions] or list(partitions)
    in_parts = list(dict.fromkeys(node for p in chosen for node in p.nodes))
    names = list(expand_hostlist(request.nodelist)) if request.nodelist else in_parts
    if request.nodelist and request.partitions:
        names = [name for name in names if name in in_parts]
    by_node = {n.name: n for n in nodes}
    up_parts = [p for p in chosen if p.state.upper() == "UP"]
    targets = []
    for name in names:
        node = by_node.get(name)
        if node is None:
            targets.append(Target(name, None, "not a node of this cluster"))
            continue
        partition = next((p.name for p in up_parts if name in p.nodes), None)
        if is_unavailable(node.state):
            targets.append(Target(name, partition, f"node is {node.state}, cannot run a job"))
        elif partition is None:
            targets.append(Target(name, None, "in no partition that is UP"))
        else:
            targets.append(Target(name, partition))
    return targets


def step_error(stdout: str, stderr: str, returncode: int) -> str:
    """Why a step failed, in one line: the advisor's own error if it gave one, else srun's."""
    lines = [line.strip() for line in (stderr + "\n" + stdout).splitlines() if line.strip()]
    ours = [line for line in lines if line.startswith("advisor: error:")]
    detail = (ours or lines or [""])[-1]
    return f"exited with {returncode}" + (f": {detail}" if detail else "")


def parse_step_output(node: str, stdout: str) -> BenchRun:
    """The run in a node's ``advisor bench --format json`` output; InputError if it is not one."""
    try:
        doc = json.loads(stdout)
    except json.JSONDecodeError as error:
        raise InputError(f"output is not JSON ({error.msg})") from None
    validate(doc, "bench-output", source=f"output of node {node}")
    if doc["node"] != node:
        raise InputError(f"benchmark ran on {doc['node']!r}, not on {node!r}")
    return run_from_bench_output(doc, "profile")


def profile_node(
    backend: CliBackend, target: Target, request: ProfileRequest, token: str
) -> NodeOutcome:
    """Benchmark one node through Slurm; every failure becomes the outcome's error."""
    if target.problem:
        return NodeOutcome(target.node, target.partition, error=target.problem)
    try:
        result = backend.run_on_node(
            target.node,
            request.argv,
            partition=target.partition,
            start_timeout_s=request.start_timeout_s,
            timeout_s=request.timeout_s,
            job_name=f"advisor-profile-{token}-{target.node}",
        )
        if result.returncode != 0:
            return NodeOutcome(
                target.node,
                target.partition,
                error=step_error(result.stdout, result.stderr, result.returncode),
            )
        return NodeOutcome(
            target.node, target.partition, run=parse_step_output(target.node, result.stdout)
        )
    except AdvisorError as error:
        return NodeOutcome(target.node, target.partition, error=error.one_line())


@dataclass(frozen=True)
class Profiled:
    """What ``advisor profile`` did, node by node (schemas/profile-output.json)."""

    outcomes: tuple[NodeOutcome, ...]

    @property
    def failed(self) -> tuple[NodeOutcome, ...]:
        """The nodes whose run was not stored, with why."""
        return tuple(o for o in self.outcomes if o.error)

    def to_json(self) -> dict[str, Any]:
        """One row per node, stored or failed, with its scores."""
        rows = [o.to_json() for o in self.outcomes]
        return {"nodes": rows, "stored": len(rows) - len(self.failed), "failed": len(self.failed)}


def profile_cluster(
    backend: CliBackend,
    store: Store,
    request: ProfileRequest,
    *,
    progress: Progress | None = None,
) -> Profiled:
    """Profile the selected nodes in parallel and store every run that succeeded, in one go."""
    partitions, nodes = backend.partitions(), backend.nodes()
    targets = select_targets(partitions, nodes, request)
    if not targets:
        raise InputError("no nodes selected", hint="check --partition and --nodelist")
    token = secrets.token_hex(3)
    outcomes: list[NodeOutcome] = []
    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        futures = [pool.submit(profile_node, backend, t, request, token) for t in targets]
        for future in as_completed(futures):
            outcomes.append(future.result())
            if progress:
                progress(len(outcomes), len(targets))
    stored = [o for o in outcomes if o.run is not None]
    with store.write():
        save_cluster(store, partitions, nodes)
        run_ids, classes = record_runs(store, [o.run for o in stored if o.run is not None])
    ids = {o.node: run_id for o, run_id in zip(stored, run_ids, strict=True)}
    order = {t.node: index for index, t in enumerate(targets)}
    return Profiled(
        tuple(
            sorted(
                (
                    replace(o, run_id=ids.get(o.node), node_class=classes.get(o.node))
                    for o in outcomes
                ),
                key=lambda o: order[o.node],
            )
        )
    )
