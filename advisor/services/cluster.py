"""``advisor cluster``: the live cluster's partitions and nodes, as data (stored with --save)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.errors import InputError, SlurmError
from advisor.slurm.backend import SlurmBackend
from advisor.slurm.conf import local_cluster_name
from advisor.slurm.records import Node, Partition, SiteLimits
from advisor.slurm.timefmt import format_duration
from advisor.store.cluster import save_cluster, save_site_limits
from advisor.store.connection import Store
from advisor.store.memory_models import save_memory_limits, save_memory_mode


@dataclass(frozen=True)
class PartitionView:
    """A partition with the CPUs, memory and features of its nodes."""

    name: str
    default: bool
    state: str
    max_time_s: int | None
    default_time_s: int | None
    nodes: tuple[str, ...]
    cpus: int
    memory_mb: int
    features: tuple[str, ...]
    qos: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The partition as schemas/cluster.json has it."""
        return {
            "qos": self.qos,
            "name": self.name,
            "default": self.default,
            "state": self.state,
            "max_time_s": self.max_time_s,
            "default_time_s": self.default_time_s,
            "nodes": list(self.nodes),
            "cpus": self.cpus,
            "memory_mb": self.memory_mb,
            "features": list(self.features),
        }


@dataclass(frozen=True)
class ClusterView:
    """Partitions and nodes; the cluster.json shape."""

    partitions: tuple[PartitionView, ...]
    nodes: tuple[Node, ...]
    limits: SiteLimits | None = None
    #: Why the QoS and associations could not be read (None: read, or not asked for).
    limits_problem: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The document the command prints (schemas/cluster.json)."""
        limits = self.limits
        return {
            "partitions": [p.to_json() for p in self.partitions],
            "qos": None
            if limits is None
            else [{"name": q.name, "max_wall_s": q.max_wall_s} for q in limits.qos.values()],
            "limits": None
            if limits is None
            else {
                "known": limits.known,
                "enforce": sorted(limits.enforce),
                "associations": len(limits.associations),
                "problem": self.limits_problem,
            },
            "nodes": [
                {**n._asdict(), "features": list(n.features), "partitions": list(n.partitions)}
                for n in self.nodes
            ],
        }


def cluster_view(partitions: list[Partition], nodes: list[Node]) -> ClusterView:
    """Partitions with their nodes' CPUs, memory and features."""
    by_name = {node.name: node for node in nodes}
    rows = []
    for part in partitions:
        members = [by_name[name] for name in part.nodes if name in by_name]
        rows.append(
            PartitionView(
                name=part.name,
                default=part.is_default,
                state=part.state,
                max_time_s=part.max_time_s,
                default_time_s=part.default_time_s,
                nodes=tuple(part.nodes),
                cpus=sum(node.cpus for node in members),
                memory_mb=sum(node.memory_mb for node in members),
                features=tuple(sorted({f for node in members for f in node.features})),
                qos=part.qos,
            )
        )
    return ClusterView(tuple(rows), tuple(nodes))


def fetch_cluster(backend: SlurmBackend) -> tuple[list[Partition], list[Node]]:
    """Ask Slurm for partitions and nodes."""
    return backend.partitions(), backend.nodes()


def fetch_site_limits(backend: SlurmBackend) -> tuple[SiteLimits, str | None]:
    """The QoS, the local cluster's associations and the default accounts, with enforcement.

    A site without slurmdbd (sacctmgr fails) gets SiteLimits.unknown() and the reason: its
    limits are then bounded by MaxTime only, and --advisor-explain says so.
    """
    try:
        qos = {q.name: q for q in backend.qos()}
        associations = tuple(backend.associations(local_cluster_name()))
        accounts = backend.default_accounts()
        enforce = backend.enforce()
    except (SlurmError, InputError) as error:
        return SiteLimits.unknown(), error.one_line()
    return SiteLimits(qos, associations, accounts, True, enforce), None


def limit_text(seconds: int | None) -> str:
    """A limit for people: Slurm's own notation, or UNLIMITED."""
    return "UNLIMITED" if seconds is None else format_duration(seconds)


def show_cluster(
    backend: SlurmBackend,
    *,
    save: bool = False,
    db: str | None = None,
    memory_mode: str | None = None,
) -> ClusterView:
    """Fetch the cluster; with save store the snapshot in the cache at db (opened only then).

    The snapshot holds the partitions' memory defaults and limits too, and memory_mode (when
    given) the site's choice of what the wrappers do with --mem.
    """
    partitions, nodes = fetch_cluster(backend)
    limits, problem = fetch_site_limits(backend)
    if save:
        memory = backend.memory_limits()
        with Store.open(db) as store, store.write():
            save_cluster(store, partitions, nodes)
            save_memory_limits(store, memory)
            if memory_mode is not None:
                save_memory_mode(store, memory_mode)
            save_site_limits(store, limits)
    view = cluster_view(partitions, nodes)
    return ClusterView(view.partitions, view.nodes, limits, problem)
