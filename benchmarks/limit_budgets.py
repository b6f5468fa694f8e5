"""The history policy's kill budgets on every development log and each half (issue 30).

Run: ``.venv/bin/python benchmarks/limit_budgets.py [--data ../shared/data/traces]``.

Each log (KTH-SP2 and CEA-Curie from the Parallel Workloads Archive, two days of UPPMAX Rackham
accounting), then its first and second half of the jobs in submit order, each replayed from an
empty history, through the history policy at budgets 0.1, 0.5, 1 and 2 %, as ``advisor replay
--budgets 0.1,0.5,1,2`` replays one log.  Each cell: the replay's kill rate over the completed
jobs / the rate accounting would measure / the share of the reserved-but-unused time freed, in
%: the table of docs/limits.md ("How the numbers were chosen").

Not a speed benchmark: it measures the figures docs/limits.md quotes.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from advisor.accounting.swf import read_swf
from advisor.replay.jobs import ReplayJob, replay_jobs
from advisor.replay.site_jobs import dump_jobs
from advisor.services.replay import budget_figures

BUDGETS = (0.001, 0.005, 0.01, 0.02)


def logs(data: Path) -> dict[str, list[ReplayJob]]:
    return {
        "KTH-SP2": replay_jobs(read_swf(str(data / "KTH-SP2-1996-2.1-cln.swf"))),
        "CEA-Curie": replay_jobs(read_swf(str(data / "CEA-Curie-2011-sample30k.swf"))),
        "Rackham (2 days)": dump_jobs(str(data / "rackham-2021-2days.sacct.txt")).jobs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/traces"))
    args = parser.parse_args()
    print("| log | " + " | ".join(f"{100 * b:g} %" for b in BUDGETS) + " |")
    print("| --- |" + " --- |" * len(BUDGETS))
    for name, jobs in logs(args.data).items():
        half = len(jobs) // 2
        for label, part in (("", jobs), (", 1st half", jobs[:half]), (", 2nd half", jobs[half:])):
            renumbered = [dataclasses.replace(job, index=i) for i, job in enumerate(part)]
            cells = [
                f"{b.killed_completed_pct:.2f} / {b.killed_measured_pct:.2f} / {b.freed_pct:.1f}"
                for b in budget_figures(renumbered, BUDGETS)
            ]
            print(f"| {name}{label} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
