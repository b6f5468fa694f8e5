"""Partitions' memory defaults and limits: ``scontrol show config`` and ``show partition -o``.

The recordings are the test cluster's on both Slurm versions (tests/data/slurm/22.05 and 24.11:
DefMemPerCPU=500 in slurm.conf, no partition of its own); a partition that sets its own values is written as slurmctld prints
one (Key=Value, ``DefMemPerCPU`` or ``DefMemPerNode``, ``MaxMemPerCPU`` or ``MaxMemPerNode``).
"""

from __future__ import annotations

import pytest

from advisor.errors import InputError
from advisor.slurm.parsers import parse_config_memory, parse_partition_memory
from advisor.slurm.records import MemoryLimits
from tests.helpers.captures import capture

SITE = MemoryLimits(def_per_cpu_mb=500)


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_the_test_clusters_config_and_partitions(version: str) -> None:
    site = parse_config_memory(capture(f"{version}/scontrol_show_config.txt").body)
    assert site == SITE  # DefMemPerCPU = 500, MaxMemPerNode = UNLIMITED
    limits = parse_partition_memory(capture(f"{version}/scontrol_show_partition.txt").body, site)
    assert limits == {"cpu": SITE, "long": SITE, "fat": SITE}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("DefMemPerCPU            = 8000\nMaxMemPerCPU            = 8000\n",
         MemoryLimits(def_per_cpu_mb=8000, max_per_cpu_mb=8000)),
        ("DefMemPerNode           = UNLIMITED\nMaxMemPerNode           = UNLIMITED\n", MemoryLimits()),
        ("DefMemPerNode           = 4000 MB\nMaxMemPerNode           = 64000 MB\n",
         MemoryLimits(def_per_node_mb=4000, max_per_node_mb=64000)),
        ("DefMemPerCPU = 0\n", MemoryLimits()),
    ],
)  # fmt: skip
def test_config_lines_as_scontrol_versions_print_them(text: str, expected: MemoryLimits) -> None:
    assert parse_config_memory(text) == expected


def test_a_partitions_own_values_replace_the_sites_of_either_kind() -> None:
    line = ("PartitionName=big Nodes=f1 State=UP DefMemPerNode=16000 MaxMemPerCPU=4000 "
            "TRES=cpu=8,mem=62.50G")  # fmt: skip
    (limits,) = parse_partition_memory(line, MemoryLimits(500, None, None, 32000)).values()
    assert limits == MemoryLimits(def_per_node_mb=16000, max_per_cpu_mb=4000)
    assert limits.default_mb(4, 64000) == 16000 and limits.most_mb(4) == 16000


def test_defaults_and_bounds_as_slurmctld_applies_them() -> None:
    assert SITE.default_mb(cpus_per_node=3, node_memory_mb=4000) == 1500
    assert MemoryLimits().default_mb(3, 4000) == 4000  # no default: the node's whole memory
    assert MemoryLimits().most_mb(3) is None


def test_a_value_that_is_no_size_names_its_field() -> None:
    with pytest.raises(InputError, match="partition x: MaxMemPerNode: not a memory size"):
        parse_partition_memory("PartitionName=x MaxMemPerNode=lots", SITE)
    with pytest.raises(InputError, match="DefMemPerCPU: not a memory size"):
        parse_config_memory("DefMemPerCPU = many\n")
