"""One Slurm job per planned task: what it asks for, and its sbatch arguments.

The arguments the workflow decides are ``--job-name`` (the task id), ``--partition``, the
pinning to the planned class (``--constraint`` or ``--nodelist``), ``--dependency=afterok:``
on the parents' job ids (sbatch(1): start only after all of them completed successfully) and
``--wrap`` with the task's command line; the wrapper then adds ``--time`` and the ``advisor:``
comment (``job_advice``).  Before the parents are submitted their ids are unknown: a dry run
shows ``<task id>`` in their place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from advisor.planner.cluster.constraints import Pinning


@dataclass(frozen=True)
class JobSpec:
    """A planned task as a job: where, when (planned, seconds from the start), and what runs."""

    task_id: str
    model_task: str
    parents: tuple[str, ...]
    node: str
    node_class: str
    partition: str
    pinning: Pinning
    start_s: float
    finish_s: float
    runtime_source: str
    input_bytes: int | None = None
    command: str | None = None
    limit_s: int | None = None
    limit_reason: str = ""


def placeholder(task_id: str) -> str:
    """What stands for a parent's job id before it exists."""
    return f"<{task_id}>"


def base_argv(spec: JobSpec, parent_jobs: Sequence[str]) -> tuple[str, ...]:
    """The sbatch arguments the workflow decides, with the parents' job ids given."""
    argv = [f"--job-name={spec.task_id}", f"--partition={spec.partition}", *spec.pinning.options()]
    if parent_jobs:
        argv.append("--dependency=afterok:" + ":".join(parent_jobs))
    if spec.command is not None:
        argv.append(f"--wrap={spec.command}")
    return tuple(argv)
