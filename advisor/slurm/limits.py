"""The time limits Slurm enforces beside a partition's MaxTime: QoS, associations, reservations.

Read with ``sacctmgr --noheader --parsable2`` (explicit fields, so a site's SACCTMGR_FORMAT
or a version's column order changes nothing) and ``scontrol show reservation -o``.  sacctmgr
prints an association's limits with those inherited from its parent accounts filled in (its
default; ``WOPLimits`` would leave them out), so the row of a user's association already holds
the MaxWall that slurmctld applies to it.  Slurm 22.05 and 24.11 print the same columns for
these fields; an empty field is "no limit".  Every failure is an InputError naming the line.
"""

from __future__ import annotations

from collections.abc import Iterator

from advisor.errors import InputError
from advisor.slurm.hostlist import expand_hostlist
from advisor.slurm.records import Association, Qos, Reservation
from advisor.slurm.timefmt import parse_timelimit

#: The fields asked of ``sacctmgr show qos``, in this order.
QOS_FIELDS = ("Name", "MaxWall", "Flags")
#: The fields asked of ``sacctmgr show assoc``, in this order.
ASSOC_FIELDS = ("Cluster", "Account", "User", "Partition", "MaxWall", "QOS", "DefaultQOS")
#: The fields asked of ``sacctmgr show user``, in this order.
USER_FIELDS = ("User", "DefaultAccount")


def _rows(text: str, fields: tuple[str, ...], what: str) -> Iterator[tuple[int, list[str]]]:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = line.split("|")
        if len(cells) != len(fields):
            raise InputError(
                f"sacctmgr show {what}: line {number}: {len(cells)} fields, expected "
                f"{len(fields)} ({','.join(fields)})"
            )
        yield number, cells


def _wall_s(text: str, where: str) -> int | None:
    """A MaxWall cell in seconds; empty or UNLIMITED is no limit."""
    if not text.strip():
        return None
    limit = parse_timelimit(text, field=f"{where}: MaxWall")
    return limit if isinstance(limit, int) else None


def _names(text: str) -> tuple[str, ...]:
    return tuple(sorted({name for name in text.split(",") if name}))


def parse_qos(text: str) -> list[Qos]:
    """QoS records from ``sacctmgr -nP show qos format=Name,MaxWall,Flags``."""
    found = []
    for number, (name, wall, flags) in _rows(text, QOS_FIELDS, "qos"):
        if not name:
            raise InputError(f"sacctmgr show qos: line {number}: a QoS without a name")
        where = f"sacctmgr show qos: line {number} (QoS {name})"
        over = "overpartqos" in {flag.strip().lower() for flag in flags.split(",")}
        found.append(Qos(name, _wall_s(wall, where), over))
    return found


def parse_associations(text: str) -> list[Association]:
    """The users' associations from ``sacctmgr -nP show assoc format=...`` (ASSOC_FIELDS).

    Account rows (no user) are left out: their limits reach the users' rows through
    inheritance, which sacctmgr has already applied.
    """
    found = []
    for number, cells in _rows(text, ASSOC_FIELDS, "assoc"):
        cluster, account, user, partition, wall, qos, default_qos = cells
        if not user:
            continue
        where = f"sacctmgr show assoc: line {number} (user {user}, account {account})"
        found.append(
            Association(
                cluster, account, user, partition, _wall_s(wall, where), _names(qos), default_qos
            )
        )
    return found


def parse_default_accounts(text: str) -> dict[str, str]:
    """Each user's default account from ``sacctmgr -nP show user format=User,DefaultAccount``."""
    return {user: account for _, (user, account) in _rows(text, USER_FIELDS, "user") if user}


def parse_reservations(text: str) -> list[Reservation]:
    """Reservations from ``scontrol show reservation -o`` (none: "No reservations in the system")."""
    from advisor.slurm.parsers import parse_key_values
    from advisor.slurm.timestamps import parse_timestamp

    found = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("No reservations"):
            continue
        pairs = parse_key_values(line)
        name = pairs.get("ReservationName")
        if not name:
            raise InputError("scontrol show reservation: a record has no ReservationName")
        where = f"reservation {name}"
        start = parse_timestamp(pairs.get("StartTime", ""), field=f"{where}: StartTime")
        end = parse_timestamp(pairs.get("EndTime", ""), field=f"{where}: EndTime")
        if start is None or end is None:
            raise InputError(f"scontrol show reservation: {where}: no StartTime or EndTime")
        nodes = pairs.get("Nodes", "")
        found.append(
            Reservation(
                name,
                int(start.timestamp()),
                int(end.timestamp()),
                expand_hostlist(nodes) if nodes and nodes != "(null)" else (),
                _names(pairs.get("Flags", "")),
            )
        )
    return found


__all__ = [
    "ASSOC_FIELDS",
    "QOS_FIELDS",
    "USER_FIELDS",
    "Association",
    "Qos",
    "Reservation",
    "parse_associations",
    "parse_default_accounts",
    "parse_qos",
    "parse_reservations",
]
