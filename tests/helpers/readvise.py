"""What the readvise tests on the real cluster share: the advisor's JSON, and a name's history."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path

from advisor.accounting.sacct_file import format_sacct_row
from advisor.slurm.parsers import SACCT_FIELDS
from advisor.slurm.records import JobRecord
from advisor.slurm.timefmt import parse_duration
from advisor.store.connection import Store
from tests.helpers.cluster import ADVISOR, sh, show
from tests.helpers.jobs import earned


def advisor(cache: Path, *args: str) -> dict[str, object]:
    """``advisor --db cache --format json ARGS``'s output; it must succeed."""
    done = sh(*ADVISOR, "--db", str(cache), "--format", "json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def learn_history(cache: Path, name: str) -> None:
    """Six runs of name (root's, in cpu) of about 5 minutes end, and update learns them."""
    start = datetime.now() - timedelta(hours=2)
    runs = [
        JobRecord("advisor", str(90000 + i), 90000 + i, name, "root", "research", "cpu", ("c1",),
                  1, 100.0, 300 + i, 1800, None, "COMPLETED", None, 0, 0, start, start,
                  start + timedelta(seconds=300 + i), "")
        for i in range(6)
    ]  # fmt: skip
    dump = cache.parent / f"dump-{name}.txt"
    dump.write_text(
        "|".join(SACCT_FIELDS) + "\n" + "".join(f"{format_sacct_row(j)}\n" for j in runs)
    )
    advisor(cache, "update", "--sacct-file", str(dump))
    with Store.open(str(cache)) as store:
        earned(store, "cpu")


def limit_s(job: int) -> int:
    """The job's time limit now, in seconds."""
    return parse_duration(show(job)["TimeLimit"])


def readvised(cache: Path, jobs: Iterable[int], *args: str) -> list[dict[str, object]]:
    """What one ``advisor readvise`` pass did to jobs (a pass sees every pending job on the
    cluster: a job another module left pending is not this test's to judge)."""
    mine = set(jobs)
    items = advisor(cache, "readvise", *args)["readvised"]
    assert isinstance(items, list)
    return [item for item in items if item["job_id"] in mine]
