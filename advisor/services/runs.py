"""``advisor runs import``: task executions (observations) read from files, stored together.

Every file is parsed before anything is stored, and all of them are stored in one transaction,
so a malformed file leaves the cache as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.imports.json_files import read_task_runs
from advisor.imports.lotaru import read_lotaru_csv
from advisor.imports.nextflow import read_trace
from advisor.store.connection import Store
from advisor.store.observations import Observation, add_observations

#: The run file formats: Lotaru's execution-report CSV, a Nextflow trace, schemas/task-runs.json.
FORMATS = ("lotaru", "nextflow", "json")


@dataclass(frozen=True)
class RunsImport:
    """Which files, in which format; Lotaru labels and Nextflow defaults."""

    files: tuple[str, ...]
    runs_format: str
    labels: tuple[str, ...] = ()
    node_class: str | None = None
    workflow: str | None = None


@dataclass(frozen=True)
class FileRuns:
    """One file's runs."""

    path: str
    runs: tuple[Observation, ...]

    def to_json(self) -> dict[str, Any]:
        """The file's row: its path, runs and tasks."""
        return {"path": str(Path(self.path)), "runs": len(self.runs),
                "tasks": len({r.task for r in self.runs})}  # fmt: skip


@dataclass(frozen=True)
class RunsImported:
    """What was stored (schemas/runs-import-output.json)."""

    runs_format: str
    files: tuple[FileRuns, ...]

    @property
    def imported(self) -> int:
        """Runs stored, over all files."""
        return sum(len(file.runs) for file in self.files)

    @property
    def tasks(self) -> int:
        """Distinct tasks over all files."""
        return len({run.task for file in self.files for run in file.runs})

    def to_json(self) -> dict[str, Any]:
        """The summary the command prints."""
        return {
            "format": self.runs_format,
            "imported": self.imported,
            "tasks": self.tasks,
            "files": [f.to_json() for f in self.files],
        }


def read_runs(request: RunsImport) -> tuple[FileRuns, ...]:
    """Every file parsed before anything is stored."""
    out = []
    for name in request.files:
        if request.runs_format == "lotaru":
            runs = [r.observation for r in read_lotaru_csv(name, labels=list(request.labels))]
        elif request.runs_format == "nextflow":
            runs = read_trace(name, node_class=request.node_class, workflow=request.workflow)
        else:
            runs = read_task_runs(name)
        out.append(FileRuns(name, tuple(runs)))
    return tuple(out)


def import_runs(store: Store, parsed: tuple[FileRuns, ...], request: RunsImport) -> RunsImported:
    """Store all runs in one transaction."""
    add_observations(store, [run for file in parsed for run in file.runs])
    return RunsImported(request.runs_format, parsed)
