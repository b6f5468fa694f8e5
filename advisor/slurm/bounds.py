"""The longest time limit Slurm lets a job have: MaxTime, QoS MaxWall, association MaxWall.

A limit the advisor sets (the wrapper, the plugin from the export, or the guard's raise) never
exceeds the smallest of these bounds:

* the partition's MaxTime;
* the MaxWall of every QoS that may apply to the job: its ``--qos`` (else its association's
  default QoS, else the association's only QoS, else ``normal``, as slurmctld picks it), and
  the partition's ``QOS=``;
* the MaxWall of the job's association (user, account — its ``--account`` else the user's
  default — and the partition where an association names one), with the parents' limits
  already inherited (sacctmgr's display, advisor.slurm.limits).

Slurm itself lets a QoS MaxWall override the association's, and a QoS with ``OverPartQOS``
override the partition QoS; the smallest of all is never more than what Slurm allows, and an
operator's raise (the guard's) skips Slurm's own checks, so the bound must hold by itself.

Standard library only: the sbatch wrapper computes a bound on every submission.
"""

from __future__ import annotations

from collections.abc import Iterable

from advisor.lite import NamedTuple
from advisor.slurm.records import Association, SiteLimits

#: The QoS slurmctld gives a job whose association names no default and several QoS.
DEFAULT_QOS = "normal"


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


def association_of(
    limits: SiteLimits, user: str, account: str | None, partition: str | None
) -> Association | None:
    """The association slurmctld gives the job: (user, account, partition), else (user, account)."""
    account = account or limits.default_accounts.get(user)
    mine = [a for a in limits.associations if a.user == user and a.account == account]
    specific = [a for a in mine if partition and a.partition == partition]
    general = [a for a in mine if not a.partition]
    found = specific or general
    return found[0] if found else None


def job_qos(association: Association | None, requested: str | None) -> str:
    """The QoS of a job: --qos, else the association's default, else its only one, else normal."""
    if requested:
        return requested
    if association is not None:
        if association.default_qos:
            return association.default_qos
        if len(association.qos) == 1:
            return association.qos[0]
    return DEFAULT_QOS


def job_bounds(
    limits: SiteLimits,
    *,
    user: str,
    partition: str,
    max_time_s: int | None,
    partition_qos: str | None = None,
    account: str | None = None,
    qos: str | None = None,
) -> JobBounds:
    """The bounds on one job's limit in one partition (account and qos as the job asks them)."""
    bounds = []
    if max_time_s is not None:
        bounds.append(Bound(max_time_s, f"partition {partition} MaxTime"))
    if not limits.known:
        return JobBounds(tuple(bounds))
    association = association_of(limits, user, account, partition)
    if association is None and "associations" in limits.enforce:
        which = account or limits.default_accounts.get(user) or "(no default account)"
        return JobBounds(tuple(bounds), f"no association for user {user} in account {which}")
    if association is not None and association.max_wall_s is not None:
        where = f"{association.account}/{association.user}"
        if association.partition:
            where += f"/{association.partition}"
        bounds.append(Bound(association.max_wall_s, f"association {where} MaxWall"))
    for name, what in ((job_qos(association, qos), "QoS"), (partition_qos, "partition QoS")):
        record = limits.qos.get(name) if name else None
        if record is not None and record.max_wall_s is not None:
            bounds.append(Bound(record.max_wall_s, f"{what} {name} MaxWall"))
    return JobBounds(tuple(bounds))


def smallest(bounds: Iterable[JobBounds]) -> JobBounds:
    """One job's bounds over several partitions (``-p a,b``: one limit must hold in each)."""
    found: list[Bound] = []
    problem = None
    for each in bounds:
        found.extend(each.bounds)
        problem = problem or each.problem
    return JobBounds(tuple(found), problem)


__all__ = [
    "DEFAULT_QOS",
    "Bound",
    "JobBounds",
    "association_of",
    "job_bounds",
    "job_qos",
    "smallest",
]
