"""sacct faked at the process boundary: a Runner that answers window queries from records.

The rows are formatted as sacct prints them (format_sacct_row) in the fields and delimiter the
query asks for: the adapter's real parsing runs on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from advisor.accounting.sacct_file import format_sacct_row
from advisor.slurm.records import JobRecord
from advisor.slurm.runner import CommandResult


def active(records: Sequence[JobRecord], start: datetime, end: datetime) -> list[JobRecord]:
    """What sacct -S start -E end returns: jobs active at some moment of the window."""
    return [
        job for job in records
        if (job.start or job.submit or start) < end and (job.end is None or job.end >= start)
    ]  # fmt: skip


class FakeSacct:
    """A Runner answering sacct windows from records; scripted failures per call number.

    Calls are the allocation queries (``--allocations``); the steps query each window makes
    after its allocation query is counted in ``step_calls``.
    """

    def __init__(
        self, records: Sequence[JobRecord], failures: dict[int, str] | None = None
    ) -> None:
        self.records = list(records)
        self.failures = failures or {}
        self.calls: list[tuple[datetime, datetime]] = []
        self.step_calls: list[tuple[datetime, datetime]] = []

    def __call__(self, argv: Sequence[str], timeout_s: float, stdin: str | None) -> CommandResult:
        options = dict(arg.split("=", 1) for arg in argv if arg.startswith("--") and "=" in arg)
        start = datetime.fromisoformat(options["--starttime"])
        end = datetime.fromisoformat(options["--endtime"])
        if "--allocations" not in argv:
            self.step_calls.append((start, end))
            fields = options["--format"].split(",")
            rows = [format_sacct_row(job, fields, delimiter=options["--delimiter"])
                    for job in active(self.records, start, end)]  # fmt: skip
            return CommandResult(tuple(argv), 0, "".join(f"{row}\n" for row in rows), "")
        self.calls.append((start, end))
        failure = self.failures.get(len(self.calls))
        if failure is not None:
            return CommandResult(tuple(argv), 1, "", failure)
        fields = options["--format"].split(",")
        rows = [
            format_sacct_row(job, fields, delimiter=options["--delimiter"])
            for job in active(self.records, start, end)
        ]
        return CommandResult(tuple(argv), 0, "".join(f"{row}\n" for row in rows), "")
