"""What the Slurm layer returns: immutable records with units in their field names.

Slurm's own spellings (JobID, Timelimit, MaxTime) stay inside the parsers.  NamedTuples rather
than dataclasses: the sbatch wrapper loads Partition on every submission, and ``dataclasses``
alone costs it ~7 ms (a third of the interpreter's start).
"""

from __future__ import annotations

from advisor.lite import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Mapping
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
    #: The partition's ``QOS=`` (its limits apply to every job in it), or None.
    qos: str | None = None


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


#: The QoS slurmctld gives a job whose association names no default and several QoS.
DEFAULT_QOS = "normal"


class Qos(NamedTuple):
    """A QoS and its per-job wall-clock limit (None: no limit)."""

    name: str
    max_wall_s: int | None
    #: Flag OverPartQOS: this QoS's limits win over the partition's QoS.
    over_partition_qos: bool = False


class Association(NamedTuple):
    """A user's association (cluster, account, optionally partition) and its limits."""

    cluster: str
    account: str
    user: str
    partition: str
    max_wall_s: int | None
    #: The QoS the association may use, and its default QoS ('' when none is set).
    qos: tuple[str, ...]
    default_qos: str

    def job_qos(self, requested: str | None = None) -> str:
        """A job's QoS: --qos, else the default, else the only one, else normal (slurmctld's)."""
        if requested:
            return requested
        if self.default_qos:
            return self.default_qos
        return self.qos[0] if len(self.qos) == 1 else DEFAULT_QOS


class Reservation(NamedTuple):
    """An advance reservation: its nodes and when it holds them (epoch seconds)."""

    name: str
    start_epoch: int
    end_epoch: int
    nodes: tuple[str, ...]
    flags: tuple[str, ...]


class Bound(NamedTuple):
    """One bound on a job's limit, in seconds, and what it is (for --advisor-explain)."""

    limit_s: int
    source: str


class JobBounds(NamedTuple):
    """Every bound that applies to a job, and why none could be found (problem)."""

    bounds: tuple[Bound, ...]
    #: Set when the job has no association Slurm would accept (it is refused or pends).
    problem: str | None = None

    @property
    def tightest(self) -> Bound | None:
        """The smallest bound (ties: the first named), or None when none applies."""
        return min(self.bounds, key=lambda b: b.limit_s, default=None)

    @property
    def limit_s(self) -> int | None:
        """The smallest bound in seconds, floored to whole minutes (Slurm's unit)."""
        tight = self.tightest
        return None if tight is None else tight.limit_s // 60 * 60


class SiteLimits(NamedTuple):
    """What ``advisor cluster --save`` read of the QoS and associations.

    known is False when they could not be read (no slurmdbd, no accounting): then only MaxTime
    bounds a limit, and the explanation says so.
    """

    qos: Mapping[str, Qos]
    associations: tuple[Association, ...]
    default_accounts: Mapping[str, str]
    known: bool = True
    #: AccountingStorageEnforce's words: with 'associations', a job without one is refused.
    enforce: frozenset[str] = frozenset()

    @classmethod
    def unknown(cls) -> SiteLimits:
        """No QoS or association data."""
        return cls({}, (), {}, False)

    def association_of(
        self, user: str, account: str | None, partition: str | None
    ) -> Association | None:
        """The association slurmctld gives a job: (user, account, partition), else (user, account)."""
        account = account or self.default_accounts.get(user)
        mine = [a for a in self.associations if a.user == user and a.account == account]
        specific = [a for a in mine if partition and a.partition == partition]
        general = [a for a in mine if not a.partition]
        found = specific or general
        return found[0] if found else None

    def job_bounds(
        self,
        *,
        user: str,
        partition: str,
        max_time_s: int | None,
        partition_qos: str | None = None,
        account: str | None = None,
        qos: str | None = None,
    ) -> JobBounds:
        """The longest limit Slurm lets a job have in a partition, bound by bound.

        The smallest of: the partition's MaxTime; the MaxWall of the job's association (user,
        account — --account else the user's default — and the partition where an association
        names one; the parents' limits inherited, as sacctmgr shows them); the MaxWall of its
        QoS (Association.job_qos) and of the partition's QOS=.  Slurm itself lets a QoS MaxWall
        override the association's, and an OverPartQOS QoS the partition's: the smallest of
        all is never more than Slurm allows, and an operator's raise (the guard's) skips
        Slurm's own checks, so the bound must hold by itself.
        """
        bounds = []
        if max_time_s is not None:
            bounds.append(Bound(max_time_s, f"partition {partition} MaxTime"))
        if not self.known:
            return JobBounds(tuple(bounds))
        association = self.association_of(user, account, partition)
        if association is None and "associations" in self.enforce:
            which = account or self.default_accounts.get(user) or "(no default account)"
            return JobBounds(tuple(bounds), f"no association for user {user} in account {which}")
        if association is not None and association.max_wall_s is not None:
            where = f"{association.account}/{association.user}"
            if association.partition:
                where += f"/{association.partition}"
            bounds.append(Bound(association.max_wall_s, f"association {where} MaxWall"))
        job_qos = association.job_qos(qos) if association is not None else qos or DEFAULT_QOS
        for name, what in ((job_qos, "QoS"), (partition_qos, "partition QoS")):
            record = self.qos.get(name) if name else None
            if record is not None and record.max_wall_s is not None:
                bounds.append(Bound(record.max_wall_s, f"{what} {name} MaxWall"))
        return JobBounds(tuple(bounds), None)


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


def peak_mb(*figures: float | None) -> float | None:
    """The largest of the figures that are there; None when none is, or when it is 0.

    A MaxRSS of 0 is no sample, not a peak: Slurm samples every JobAcctGatherFrequency, and on
    22.05 (jobacct_gather/cgroup, cgroup v2) a job that ends before the first sample has 0.
    """
    present = [figure for figure in figures if figure is not None]
    return max(present) if present and max(present) > 0 else None
