"""``--mem`` at submit: the task's memory P95 for a job that asks for none, within what Slurm accepts.

Slurm cannot raise a running job's memory, so there is no guard for it: the advice is made
once, conservatively.  What the advisor does depends on the site's memory mode
(``advisor cluster --save --memory-mode``; advisor.store.memory_models):

* ``advise`` (the default, until the site has seen what it would set): nothing changes; the
  job's advice says what ``--mem`` it would have set, and the wrapper prints it in one line;
* ``fill``: a job that asks for no memory (no ``--mem``, ``--mem-per-cpu`` or ``--mem-per-gpu``
  from any origin: command line, ``SBATCH_MEM_PER_*``, ``#SBATCH``) gets ``--mem`` per node;
* ``lower``: also a user's own ``--mem`` is lowered to it (never raised): the site's opt-in.

The value is the task's memory P95 (advisor.models.memory: the user's own jobs of the task,
else its shared model; the pool's margin and the partition's kill budget for OUT_OF_MEMORY),
in whole MB.  A job asking for none would get the partition's default (DefMemPerCPU × its CPUs
per node, else DefMemPerNode, else its nodes' whole memory): the explanation says which.  The
advice is left out where Slurm would not run it: above a candidate partition's MaxMemPerNode
(or MaxMemPerCPU × CPUs) or above the memory of its largest node.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.sbatch.request import JobRequest
from advisor.slurm.records import MemoryLimits
from advisor.store.connection import Store
from advisor.store.memory_models import (
    DEFAULT_MEMORY_MODE,
    MemoryKey,
    load_key_runs,
    load_margins,
    load_memory_budgets,
    load_memory_limits,
    load_memory_mode,
    node_memory,
)

if TYPE_CHECKING:  # the model loads only for a task whose peaks the cache knows
    from advisor.models.memory import Margins, MemoryForecast, MemRun

#: What ``--mem`` takes: a number and an optional unit (K, M, G, T; M when none).
_UNITS = {"": 1.0, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2}


class MemoryView(NamedTuple):
    """What the cache says of memory for one submission (read in the snapshot's transaction)."""

    mode: str
    limits: Mapping[str, MemoryLimits]
    node_memory_mb: Mapping[str, int]
    margins: Mapping[str, Margins]
    #: Per partition, its kill budget's correction (log scale).
    corrections: Mapping[str, float]
    #: Per task: the user's own runs and the shared model's, oldest first.
    runs: Mapping[str, tuple[tuple[MemRun, ...], tuple[MemRun, ...]]]


#: No memory known (a cache without memory, a caller that asked for none).
NO_VIEW = MemoryView(
    mode=DEFAULT_MEMORY_MODE, limits={}, node_memory_mb={}, margins={}, corrections={}, runs={}
)


def load_memory_view(store: Store, tasks: Sequence[str], user: str | None) -> MemoryView:
    """The view for jobs of these tasks by this user (the caller holds the read transaction)."""
    runs: dict[str, tuple[tuple[MemRun, ...], tuple[MemRun, ...]]] = {}
    for task in tasks:
        mine = load_key_runs(store, MemoryKey(user, task)) if user else None
        shared = load_key_runs(store, MemoryKey("", task))
        if not (mine and mine.runs) and not (shared and shared.runs):
            runs[task] = ((), ())
            continue
        from advisor.models.memory import MemRun

        runs[task] = (
            tuple(MemRun(*run) for run in mine.runs) if mine else (),
            tuple(MemRun(*run) for run in shared.runs) if shared else (),
        )
    if not any(mine or shared for mine, shared in runs.values()):
        return NO_VIEW._replace(mode=load_memory_mode(store), runs=runs)
    return MemoryView(
        mode=load_memory_mode(store),
        limits=load_memory_limits(store),
        node_memory_mb=node_memory(store),
        margins=load_margins(store),
        corrections={name: row[1] for name, row in load_memory_budgets(store).items()},
        runs=runs,
    )


class MemoryDecision(NamedTuple):
    """What the advisor does with the job's memory, and why.

    action: 'set' (--mem added), 'lowered' (the user's own --mem lowered), 'advise' (would
    have set it), 'kept' (the user's own request stands) or 'none' (nothing to say).
    """

    action: str
    mem_mb: int | None
    reason: str
    forecast: MemoryForecast | None = None
    #: What Slurm gives the job per node without --mem (its first candidate partition's).
    default_mb: int | None = None


NO_MEMORY = MemoryDecision("none", None, "")


def parse_mem(text: str) -> int | None:
    """MB per node of a ``--mem`` value (``4000``, ``4G``, ``512M``); None: not a size."""
    value = text.strip().upper().removesuffix("B")
    unit = value[-1:] if value[-1:] in _UNITS and value[-1:] else ""
    number = value[: len(value) - len(unit)]
    try:
        megabytes = float(number) * _UNITS[unit] if number.replace(".", "", 1).isdigit() else None
    except ValueError:
        return None
    return None if megabytes is None else math.ceil(megabytes)


def _whole(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().isdigit() else None


def cpus_per_node(request: JobRequest) -> int:
    """The CPUs the job asks per node: --cpus-per-task × tasks per node (1 when it says nothing)."""
    per_task = _whole(request.cpus_per_task.value if request.cpus_per_task else None) or 1
    tasks = _whole(request.ntasks_per_node.value if request.ntasks_per_node else None)
    if tasks is None:
        total = _whole(request.ntasks.value if request.ntasks else None) or 1
        nodes = _whole((request.nodes.value.split("-")[0]) if request.nodes else None) or 1
        tasks = math.ceil(total / max(1, nodes))
    return per_task * max(1, tasks)


def _mb(value: float) -> str:
    return f"{value / 1024:.1f} GB" if value >= 1024 else f"{value:.0f} MB"


def decide_memory(
    view: MemoryView,
    request: JobRequest,
    task: str | None,
    input_bytes: float | None,
    partitions: Sequence[str],
    partition_nodes: Mapping[str, Sequence[str]],
) -> MemoryDecision:
    """The decision for a job (module docstring)."""
    mine, shared = view.runs.get(task or "", ((), ()))
    if task is None or not (mine or shared):
        return NO_MEMORY
    from advisor.models.memory import TASK, USER, forecast_from

    correction = max((view.corrections.get(p, 0.0) for p in partitions), default=0.0)
    forecast = forecast_from(
        task, ((USER, mine), (TASK, shared)), view.margins, input_bytes, correction
    )
    if forecast is None:
        return NO_MEMORY
    value = max(1, math.ceil(forecast.p95_mb))
    cpus = cpus_per_node(request)
    whose = "your own jobs" if forecast.basis == USER else "the task's runs"
    basis = f"P95 of {forecast.runs} runs of {whose} {task!r}: {_mb(forecast.p95_mb)}"
    for name in partitions:
        largest = max((view.node_memory_mb.get(n, 0) for n in partition_nodes.get(name, ())),
                      default=0)  # fmt: skip
        most = view.limits.get(name, MemoryLimits()).most_mb(cpus)
        caps = [cap for cap in (largest, most) if cap]
        if caps and value > min(caps):
            reason = f"needs --mem={value}M ({basis}), more than partition {name} allows ({min(caps)} MB)"
            return MemoryDecision(action="none", mem_mb=None, reason=reason, forecast=forecast)
    default = _default_mb(view, partitions, partition_nodes, cpus)
    without = f"; without it Slurm gives {default} MB per node" if default else ""
    own = request.asks_memory
    asked = parse_mem(own.value) if own is not None and own is request.mem else None
    if own is None and view.mode == "advise":
        action, reason = (
            "advise",
            f"would set --mem={value}M ({basis}{without}); the site advises only",
        )
    elif own is None:
        action, reason = "set", f"--mem={value}M ({basis}{without})"
    elif view.mode == "lower" and asked and value < asked:
        action, reason = "lowered", f"--mem={value}M lowers your {asked} MB ({basis})"
    else:
        action, reason = "kept", f"your own memory request stands ({basis})"
    return MemoryDecision(
        action=action, mem_mb=value, reason=reason, forecast=forecast, default_mb=default
    )


def _default_mb(
    view: MemoryView,
    partitions: Sequence[str],
    partition_nodes: Mapping[str, Sequence[str]],
    cpus: int,
) -> int | None:
    """What the job's first candidate partition gives a job without --mem (None: not known)."""
    if not partitions:
        return None
    name = partitions[0]
    limits = view.limits.get(name)
    if limits is None:
        return None
    nodes = [view.node_memory_mb.get(n, 0) for n in partition_nodes.get(name, ())]
    return limits.default_mb(cpus, min(nodes, default=0)) or None
