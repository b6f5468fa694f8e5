"""Node classes: nodes with equal hardware and features form one class.

A partition usually holds one or a few classes; runtimes are learnt and limits advised per
class, so one profiled node speaks for all its class-mates.  Two nodes are in the same class
when Slurm reports the same CPUs, memory and features and the benchmark saw the same CPU model.
Class names are readable and stable: they are derived from the hardware, not from member names.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from advisor.slurm.records import Node
from advisor.store.cluster import load_nodes
from advisor.store.connection import Store
from advisor.store.node_classes import RunInfo, latest_runs, save_node_classes

#: Words that say nothing about which CPU it is.
_NOISE = re.compile(r"\((?:r|tm)\)|\bcpu\b|\bprocessor\b|@", re.IGNORECASE)


@dataclass(frozen=True)
class NodeHardware:
    """What decides a node's class."""

    name: str
    cpus: int
    memory_mb: int
    features: tuple[str, ...]
    cpu_model: str | None

    def key(self) -> tuple[int, int, tuple[str, ...], str | None]:
        """Equal keys, equal class."""
        return (self.cpus, self.memory_mb, tuple(sorted(self.features)), self.cpu_model)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")[:40]


def class_name(node: NodeHardware) -> str:
    """``<features>-<cpus>c-<memory>m[-<cpu model>]``, e.g. ``cpu+intel-2c-4000m-amd-epyc``."""
    features = "+".join(_slug(f) for f in sorted(node.features)) or "plain"
    name = f"{features}-{node.cpus}c-{node.memory_mb}m"
    return f"{name}-{_slug(_NOISE.sub(' ', node.cpu_model))}" if node.cpu_model else name


def assign_classes(nodes: Iterable[NodeHardware]) -> dict[str, str]:
    """Each node's class; distinct hardware that slugs to one name gets a short hash appended."""
    members = list(nodes)
    keys_by_name: dict[str, set[tuple[object, ...]]] = {}
    for node in members:
        keys_by_name.setdefault(class_name(node), set()).add(node.key())
    classes = {}
    for node in members:
        name = class_name(node)
        if len(keys_by_name[name]) > 1:
            name += "-" + hashlib.sha256(repr(node.key()).encode()).hexdigest()[:6]
        classes[node.name] = name
    return classes


def node_hardware(nodes: Iterable[Node], runs: Mapping[str, RunInfo]) -> list[NodeHardware]:
    """Slurm's view of each node joined with the CPU model its newest benchmark saw."""
    return [
        NodeHardware(
            name=node.name,
            cpus=node.cpus,
            memory_mb=node.memory_mb,
            features=node.features,
            cpu_model=runs[node.name].hardware.get("cpu_model") if node.name in runs else None,
        )
        for node in nodes
    ]


def refresh_node_classes(store: Store) -> dict[str, str]:
    """Classify the cache's cluster nodes and store the classes; the mapping."""
    classes = assign_classes(node_hardware(load_nodes(store), latest_runs(store)))
    save_node_classes(store, classes)
    return classes
