"""The one shape of every ``advisor report``: rows per group, what they add up to, and notes.

The four reports (accuracy, limits, nodes, models) share a head (which report, when, the
filters) and a list of rows (one per group: task, node class, user...; their columns are each
report's own, as its schema in schemas/report-*.json has them).  The grouped reports add the
keys they grouped by and the total over all groups; accuracy also the errors per method and
how many jobs were scored; nodes the reference node the ratios are against.  ``notes`` are for
the reader of a table (warnings, what was drawn) and are not part of the JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

#: The reports there are.
ReportName = Literal["accuracy", "limits", "nodes", "models", "memory"]


@dataclass(frozen=True)
class JobCounts:
    """The accuracy report's jobs: finished, advised, scored, and scored without a model."""

    finished: int
    advised: int
    scored: int
    without_model: int

    def to_json(self) -> dict[str, int]:
        """The ``jobs`` object of schemas/report-accuracy.json."""
        return {
            "finished": self.finished,
            "advised": self.advised,
            "scored": self.scored,
            "without_model": self.without_model,
        }


@dataclass(frozen=True)
class Report:
    """One report's document (schemas/report-<report>.json), and notes for its reader."""

    report: ReportName
    generated_at: str
    filters: Mapping[str, str | None]
    #: how many groups there are (before --top cut the rows)
    groups: int
    rows: tuple[Mapping[str, Any], ...]
    #: accuracy, limits: the keys the rows are grouped by, and the figures over every group
    by: tuple[str, ...] | None = None
    total: Mapping[str, Any] | None = None
    #: nodes: the node whose scores the ratios are against (None before any benchmark)
    reference: str | None = None
    #: accuracy: per method, the errors over the completed jobs; and how many jobs were scored
    methods: tuple[Mapping[str, Any], ...] | None = None
    jobs: JobCounts | None = None
    #: limits: per partition, the history policy's kill budget and what its limits did
    budgets: tuple[Mapping[str, Any], ...] | None = None
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The JSON document, keys in the schema's order; without the notes."""
        out: dict[str, Any] = {
            "report": self.report,
            "generated_at": self.generated_at,
            "filters": dict(self.filters),
        }
        if self.report == "nodes":
            out["reference"] = self.reference
        if self.by is not None:
            out["by"] = list(self.by)
        out["groups"] = self.groups
        out["rows"] = [dict(row) for row in self.rows]
        if self.total is not None:
            out["total"] = dict(self.total)
        if self.methods is not None:
            out["methods"] = [dict(row) for row in self.methods]
        if self.jobs is not None:
            out["jobs"] = self.jobs.to_json()
        if self.budgets is not None:
            out["budgets"] = [dict(row) for row in self.budgets]
        return out

    @property
    def has_total_row(self) -> bool:
        """Whether a table shows the total under the rows: more than one group, or rows cut."""
        return len(self.rows) > 1 or self.groups > len(self.rows)


def generated_at(now: datetime) -> str:
    """When a report was made, to the second."""
    return now.replace(microsecond=0).isoformat()
