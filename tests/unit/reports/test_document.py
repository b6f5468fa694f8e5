"""reports.document.Report: one shape, each report's keys in its schema's order."""

from __future__ import annotations

from datetime import UTC, datetime

from advisor.reports.document import JobCounts, Report, generated_at

HEAD = {"generated_at": "2026-12-01T12:00:00+00:00", "filters": {"task": None}}


def test_each_report_has_only_its_own_keys_in_order() -> None:
    models = Report("models", groups=0, rows=(), **HEAD)  # type: ignore[arg-type]
    assert list(models.to_json()) == ["report", "generated_at", "filters", "groups", "rows"]
    nodes = Report("nodes", groups=0, rows=(), **HEAD)  # type: ignore[arg-type]
    assert list(nodes.to_json()) == [
        "report",
        "generated_at",
        "filters",
        "reference",
        "groups",
        "rows",
    ]
    assert nodes.to_json()["reference"] is None  # before any benchmark: there, and null
    limits = Report("limits", groups=1, rows=({"user": "a", "jobs": 1},), by=("user",),
                    total={"jobs": 1}, **HEAD)  # type: ignore[arg-type]  # fmt: skip
    assert list(limits.to_json()) == [
        "report",
        "generated_at",
        "filters",
        "by",
        "groups",
        "rows",
        "total",
    ]
    counts = JobCounts(finished=3, advised=2, scored=1, without_model=0)
    accuracy = Report("accuracy", groups=0, rows=(), by=("task",), total={}, methods=(),
                      jobs=counts, notes=("a note",), **HEAD)  # type: ignore[arg-type]  # fmt: skip
    data = accuracy.to_json()
    assert list(data)[-3:] == ["total", "methods", "jobs"] and "notes" not in data
    assert data["jobs"] == {"finished": 3, "advised": 2, "scored": 1, "without_model": 0}


def test_the_total_row_shows_under_several_groups_or_cut_rows() -> None:
    def rows(n: int, groups: int) -> Report:
        return Report("limits", groups=groups, rows=tuple({"user": str(i)} for i in range(n)),
                      by=("user",), total={}, **HEAD)  # type: ignore[arg-type]  # fmt: skip

    assert not rows(1, 1).has_total_row and not rows(0, 0).has_total_row
    assert rows(2, 2).has_total_row and rows(1, 5).has_total_row


def test_generated_at_is_to_the_second() -> None:
    assert (
        generated_at(datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=UTC)) == "2026-01-02T03:04:05+00:00"
    )
