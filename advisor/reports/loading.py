"""The jobs a report covers: accounting rows joined to advice, as JobViews, filtered by task."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from advisor.reports.jobs import JobView, job_view
from advisor.store.connection import Store
from advisor.store.reports import JobFilter, jobs_with_advice
from advisor.store.task_models import node_classes


@dataclass(frozen=True)
class Selection:
    """The common filters of every report: the job window, user, partition, and task."""

    jobs: JobFilter = field(default_factory=JobFilter)
    task: str | None = None

    def echo(self) -> dict[str, str | None]:
        """The filters as the JSON output repeats them."""
        return {**asdict(self.jobs), "task": self.task}


def load_jobs(store: Store, selection: Selection) -> list[JobView]:
    """Finished jobs in the selection (the task is resolved per job, so it is filtered here)."""
    class_of = node_classes(store)
    views = (job_view(row, class_of) for row in jobs_with_advice(store, selection.jobs))
    return [view for view in views if selection.task is None or view.task == selection.task]
