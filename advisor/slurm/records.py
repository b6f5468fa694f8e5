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

    @property
    def is_final(self) -> bool:
        """True once slurmdbd has the whole record (final state and a partition)."""
        return self.state in FINAL_STATES and bool(self.partition) and self.end is not None


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


class Reservation(NamedTuple):
    """An advance reservation: its nodes and when it holds them (epoch seconds)."""

    name: str
    start_epoch: int
    end_epoch: int
    nodes: tuple[str, ...]
    flags: tuple[str, ...]


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


class StartEstimate(NamedTuple):
    """What ``sbatch --test-only`` expects."""

    job_id: int
    start: datetime
    processors: int
    nodes: tuple[str, ...]
    partition: str
