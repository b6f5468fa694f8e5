"""services.report: every report is one Report, whose JSON follows its schema, with its notes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from advisor.reports.document import JobCounts, Report
from advisor.reports.loading import Selection
from advisor.reports.shaping import Shape
from advisor.services.report import ReportRequest, report
from advisor.store import Store
from advisor.store.reports import JobFilter
from advisor.validate import validate
from tests.helpers.report_cache import ADVISED, fill_cache

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
REPORTS = ("accuracy", "limits", "memory", "nodes", "models")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    path = fill_cache(tmp_path_factory.mktemp("report") / "cache.db")
    with Store.open(path, readonly=True) as opened:
        yield opened


@pytest.mark.parametrize("name", REPORTS)
def test_every_report_has_the_one_shape_and_its_schema(store: Store, name: str) -> None:
    done = report(store, ReportRequest(name), now=NOW)  # type: ignore[arg-type]
    assert isinstance(done, Report) and done.report == name
    data = done.to_json()
    validate(data, f"report-{name}", source=name)
    assert data["generated_at"] == "2026-12-01T12:00:00+00:00"
    assert data["groups"] == done.groups and data["rows"] == [dict(r) for r in done.rows]
    assert ("reference" in data) == (name == "nodes")
    assert ("by" in data) == ("total" in data) == (name in ("accuracy", "limits", "memory"))
    assert ("methods" in data) == ("jobs" in data) == (name == "accuracy")
    assert "notes" not in data


def test_accuracy_counts_the_advised_jobs_and_warns_of_a_short_p95(store: Store) -> None:
    done = report(store, ReportRequest("accuracy"), now=NOW)
    assert isinstance(done.jobs, JobCounts)
    assert done.jobs.advised == len(ADVISED)
    assert done.to_json()["jobs"] == done.jobs.to_json()
    flagged = [row for row in done.rows if row["check"] not in ("ok", "few jobs")]
    assert flagged and len([n for n in done.notes if n.startswith("warning:")]) == len(flagged)
    assert list(done.to_json())[-3:] == ["total", "methods", "jobs"]


def test_a_selection_without_advised_jobs_says_how_jobs_get_advised(store: Store) -> None:
    nobody = Selection(JobFilter(user="nobody"))
    done = report(store, ReportRequest("accuracy", nobody), now=NOW)
    assert done.jobs is not None and done.jobs.scored == 0
    assert any("no advised job" in note for note in done.notes)


def test_top_cuts_the_rows_but_not_the_groups(store: Store) -> None:
    whole = report(store, ReportRequest("limits", by=("user",)), now=NOW)
    cut = report(store, ReportRequest("limits", by=("user",), shape=Shape(top=1)), now=NOW)
    assert whole.groups > 1 and (cut.groups, len(cut.rows)) == (whole.groups, 1)
    assert cut.has_total_row and cut.total == whole.total


def test_the_plots_are_drawn_and_noted(store: Store, tmp_path: Path) -> None:
    for name, note in (("accuracy", "error CDF"), ("limits", "limit vs runtime")):
        path = tmp_path / f"{name}.png"
        done = report(store, ReportRequest(name, plot=str(path)), now=NOW)  # type: ignore[arg-type]
        assert path.read_bytes().startswith(b"\x89PNG") and f"{note}: {path}" in done.notes
