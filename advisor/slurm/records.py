"""What the Slurm layer returns: immutable records with units in their field names.

Slurm's own spellings (JobID, Timelimit, MaxTime) stay inside the parsers.  NamedTuples rather
than dataclasses: the sbatch wrapper loads Partition on every submission, and ``dataclasses``
alone costs it ~7 ms (a third of the interpreter's start).
"""

from __future__ import annotations

from advisor.lite import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from datetime import datetime

    from advisor.slurm.timefmt import NoLimit

#: States after which a job never changes again (sacct(1) "JOB STATE CODES").
FINAL_STATES = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "TIMEOUT",
    }
)


class Partition(NamedTuple):
    """A partition with its limits in seconds (None: no number, see the NoLimit field)."""

    name: str
    nodes: tuple[str, ...]
    max_time_s: int | None
    default_time_s: int | None
    is_default: bool
    state: str
    total_cpus: int | None = None


class Node(NamedTuple):
    """A node as slurmctld describes it."""

    name: str
    cpus: int
    memory_mb: int
    features: tuple[str, ...]
    partitions: tuple[str, ...]
    state: str


class JobRecord(NamedTuple):
    """One allocation row of sacct."""

    cluster: str
    job_id: str
    job_id_raw: int
    name: str
    user: str
    account: str
    partition: str
    nodes: tuple[str, ...]
    cpus: int
    req_mem_mb: float | None
    elapsed_s: int
    timelimit_s: int | None
    timelimit_kind: NoLimit | None
    state: str
    state_by_uid: int | None
    exit_code: int | None
    exit_signal: int | None
    submit: datetime | None
    start: datetime | None
    end: datetime | None
    comment: str
    #: What req_mem_mb is per: 'cpu' or 'node' (sacct before 21.08: ``4000Mc``, ``16Gn``);
    #: None for the job's total, which sacct prints since 21.08.
    req_mem_per: str | None = None
    #: The job's peak memory per node in MB: the largest MaxRSS (TRESUsageInMax ``mem``) of its
    #: steps, which sacct gives on the step rows only (None: not measured, or not in the dump).
    max_rss_mb: float | None = None

    @property
    def is_final(self) -> bool:
        """True once slurmdbd has the whole record (final state and a partition)."""
        return self.state in FINAL_STATES and bool(self.partition) and self.end is not None

    @property
    def req_mem_per_node_mb(self) -> float | None:
        """The memory the job asked for on each of its nodes, in MB (None: not known)."""
        return per_node_mb(self.req_mem_mb, self.req_mem_per, self.cpus, len(self.nodes))


def per_node_mb(
    req_mem_mb: float | None, req_mem_per: str | None, cpus: int, nodes: int
) -> float | None:
    """ReqMem as memory per node, in MB (None: not known).

    ReqMem is per CPU (``Mc``), per node (``Mn``) or, since Slurm 21.08, the job's total over
    its nodes; an allocation whose nodes are not known counts as one node.
    """
    if req_mem_mb is None:
        return None
    nodes = max(1, nodes)
    if req_mem_per == "cpu":
        return req_mem_mb * max(1, cpus) / nodes
    if req_mem_per == "node":
        return req_mem_mb
    return req_mem_mb / nodes


class StartEstimate(NamedTuple):
    """What ``sbatch --test-only`` expects."""

    job_id: int
    start: datetime
    processors: int
    nodes: tuple[str, ...]
    partition: str


class MemoryLimits(NamedTuple):
    """What a partition gives a job that asks for no memory, and the most a job may ask (MB).

    None: no such setting (a default of neither kind gives the job its nodes' whole memory).
    """

    def_per_cpu_mb: int | None = None
    def_per_node_mb: int | None = None
    max_per_cpu_mb: int | None = None
    max_per_node_mb: int | None = None

    def default_mb(self, cpus_per_node: int, node_memory_mb: int) -> int:
        """What a job asking for no memory gets per node (slurm.conf DefMemPerCPU/DefMemPerNode)."""
        if self.def_per_cpu_mb is not None:
            return self.def_per_cpu_mb * max(1, cpus_per_node)
        if self.def_per_node_mb is not None:
            return self.def_per_node_mb
        return node_memory_mb

    def most_mb(self, cpus_per_node: int) -> int | None:
        """The most a job may ask per node (MaxMemPerNode, else MaxMemPerCPU × its CPUs; None: any)."""
        if self.max_per_node_mb is not None:
            return self.max_per_node_mb
        if self.max_per_cpu_mb is not None:
            return self.max_per_cpu_mb * max(1, cpus_per_node)
        return None
