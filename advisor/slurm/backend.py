"""The interface the rest of the advisor uses to reach Slurm.

``SlurmBackend`` is what a pyslurm backend would implement where a pyslurm matching the
installed Slurm exists; ``CliBackend`` implements it with the command-line tools.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from advisor.slurm.parsers import (
    SACCT_FIELDS,
    parse_job_id,
    parse_nodes,
    parse_partitions,
    parse_sacct,
    parse_test_only,
)
from advisor.slurm.records import JobRecord, Node, Partition, StartEstimate
from advisor.slurm.runner import SlurmCommands

#: ASCII unit separator: job names and comments are user text and may contain ``|``.
SACCT_DELIMITER = "\x1f"


class SlurmBackend(Protocol):
    """Everything the advisor asks of Slurm."""

    def partitions(self) -> list[Partition]:
        """Partitions with their limits."""
        ...

    def nodes(self) -> list[Node]:
        """Nodes with CPUs, memory and features."""
        ...

    def submit(self, sbatch_args: Sequence[str]) -> int:
        """Submit with these sbatch arguments; the job id."""
        ...

    def test_only(self, sbatch_args: Sequence[str]) -> StartEstimate:
        """When and where the job would start."""
        ...

    def accounting(
        self, start: datetime, end: datetime, *, job_ids: Sequence[int] = ()
    ) -> list[JobRecord]:
        """Allocation records of all users that were active between start and end."""
        ...


def _sacct_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


class CliBackend:
    """SlurmBackend over sbatch, sacct and scontrol."""

    def __init__(self, commands: SlurmCommands | None = None) -> None:
        self.commands = commands or SlurmCommands()

    def partitions(self) -> list[Partition]:
        """Partitions from ``scontrol show partition -o``."""
        return parse_partitions(self.commands.run(["scontrol", "show", "partition", "-o"]).stdout)

    def nodes(self) -> list[Node]:
        """Nodes from ``scontrol show node -o``."""
        return parse_nodes(self.commands.run(["scontrol", "show", "node", "-o"]).stdout)

    def submit(self, sbatch_args: Sequence[str]) -> int:
        """``sbatch --parsable``; the job id it printed."""
        return parse_job_id(self.commands.run(["sbatch", "--parsable", *sbatch_args]).stdout)

    def test_only(self, sbatch_args: Sequence[str]) -> StartEstimate:
        """``sbatch --test-only``, which answers on stderr."""
        result = self.commands.run(["sbatch", "--test-only", *sbatch_args])
        return parse_test_only(result.stderr + result.stdout)

    def accounting(
        self, start: datetime, end: datetime, *, job_ids: Sequence[int] = ()
    ) -> list[JobRecord]:
        """One sacct query for the window: allocations only, all users, explicit fields."""
        argv = [
            "sacct",
            "--allusers",
            "--allocations",
            "--parsable2",
            "--noheader",
            f"--delimiter={SACCT_DELIMITER}",
            f"--format={','.join(SACCT_FIELDS)}",
            f"--starttime={_sacct_time(start)}",
            f"--endtime={_sacct_time(end)}",
        ]
        if job_ids:
            argv.append(f"--jobs={','.join(str(job) for job in job_ids)}")
        text = self.commands.run(argv).stdout
        return parse_sacct(text, SACCT_FIELDS, delimiter=SACCT_DELIMITER, source="sacct")
