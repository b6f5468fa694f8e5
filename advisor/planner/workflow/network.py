"""The network between nodes: one bandwidth for every link, optionally free within a class.

A transfer of ``bytes`` from a node to another costs ``bytes / bandwidth`` (nothing on one
node).  Nodes of one class usually sit on one shared file system, where a consumer reads what
its producer wrote without a copy: with ``shared_fs`` such links are free (infinite bandwidth)
and only transfers between classes pay.  Without a bandwidth, every transfer is free (the
recorded or predicted runtimes already contain their staging).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from advisor.errors import InputError
from advisor.planner.scheduling.problem import FloatArray, Node

#: The rates are an n x n matrix: 4096 nodes take 128 MiB (and HEFT's transfer costs grow alike).
MAX_NETWORK_NODES = 4096


def bandwidth_matrix(
    nodes: Sequence[Node], bandwidth_bytes_s: float | None, *, shared_fs: bool = False
) -> FloatArray | None:
    """Bytes per second between every two nodes (inf: free); None when transfers are free."""
    if bandwidth_bytes_s is None:
        return None
    if not bandwidth_bytes_s > 0:
        raise InputError("--bandwidth must be positive")
    if len(nodes) > MAX_NETWORK_NODES:  # --nodes 56504 --bandwidth 1 asked for 25 GB
        raise InputError(
            f"--bandwidth: a network of {len(nodes)} nodes, more than {MAX_NETWORK_NODES}",
            hint="plan without --bandwidth, or on fewer nodes",
        )
    matrix = np.full((len(nodes), len(nodes)), float(bandwidth_bytes_s))
    if shared_fs:
        classes = np.array([node.node_class or node.name for node in nodes], dtype=object)
        matrix[classes[:, None] == classes[None, :]] = np.inf
    return matrix
