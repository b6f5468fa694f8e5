"""The memory model's choices on the Lotaru development traces, and the memory replay (issue 33).

Run: ``.venv/bin/python benchmarks/memory_choices.py [--traces ../shared/data/lotaru]``.

1. ``advisor evaluate``'s memory protocol (advisor.models.memory_evaluation): trained on the
   local machine's train-e runs, every machine's full-size test runs predicted, each variant
   side by side (the advisor, its margin cross-validated across workflows, without margin,
   per-task margins, the plain distribution, the largest training peak), for both the shared
   and all test rows, with the minimum MIN_RUNS changed (3, 4, 5).
2. The memory replay (advisor.replay.memory) of the same traces written as a site's sacct
   dump: one user per machine, a job per run (ReqMem the pipeline's request, MaxRSS the peak,
   Elapsed the runtime), submitted in the order the machine ran them (its train-1 runs, its
   train-2 runs, then the full-size ones, each job after the one before ended), so that every
   policy meets the full-size runs having seen only small ones; the users' request, the
   maximum of the previous runs and the advisor.

Not a speed benchmark: it measures the figures docs/memory.md quotes.
"""

from __future__ import annotations

import argparse
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

import advisor.models.memory as memory
from advisor.accounting.sacct_file import format_sacct_row
from advisor.models.evaluation import load_traces, setting_for
from advisor.models.memory_evaluation import VARIANTS, score_memory, summarise
from advisor.replay.memory import replay_memory
from advisor.slurm.records import JobRecord

FIELDS = ("JobIDRaw", "JobID", "JobName", "User", "Partition", "NodeList", "AllocCPUS", "ReqMem",
          "Elapsed", "State", "Submit", "Start", "End", "MaxRSS", "Cluster")  # fmt: skip


def evaluation_table(traces: Path) -> None:
    setting, runs = setting_for(traces, None, calibrate=False, seed=0)
    print(f"{'min runs':>8}  {'rows':6}  {'variant':54}  {'cover':>6}  {'lowest':>6}  "
          f"{'req %':>6}  {'P95/peak':>8}")  # fmt: skip
    for min_runs in (3, 4, 5):
        memory.MIN_RUNS = min_runs
        for shared in (True, False):
            scored = score_memory(runs, reference=setting.reference, twin=setting.twin,
                                  shared_inputs=shared)  # fmt: skip
            for variant in VARIANTS:
                rows = [r for r in scored if r.method == variant.name]
                pooled = summarise(rows)
                lowest = min(summarise([r for r in rows if r.target == t]).coverage
                             for t in {r.target for r in rows})  # fmt: skip
                share = pooled.request_share or 0.0
                print(f"{min_runs:>8}  {'shared' if shared else 'all':6}  {variant.name:54}  "
                      f"{100 * pooled.coverage:6.1f}  {100 * lowest:6.1f}  {100 * share:6.1f}  "
                      f"{pooled.overshoot:8.2f}")  # fmt: skip
    memory.MIN_RUNS = 3


def site_records(traces: Path) -> list[JobRecord]:
    """The traces as one sacct history: a user per machine, runs one after the other."""
    runs, _, _ = load_traces(traces)
    order = {"train-1": 0, "train-2": 1, "test": 2}
    records: list[JobRecord] = []
    clock = datetime(2024, 1, 1)
    number = 0
    for (machine, workflow), machine_runs in sorted(runs.items()):
        ordered = sorted(
            (r for r in machine_runs if r.observation.peak_mem_mb and r.requested_mem_mb),
            key=lambda r: (order.get(r.observation.label or "", 3), r.observation.input_bytes or 0),
        )
        for run in ordered:
            number += 1
            elapsed = max(1, round(run.observation.runtime_s))
            start = clock
            clock += timedelta(seconds=elapsed + 1)
            records.append(JobRecord(
                "lotaru", str(number), number, run.observation.task, machine, "", workflow,
                (machine,), run.observation.cores or 1, run.requested_mem_mb, elapsed, None, None,
                "COMPLETED", None, 0, 0, start, start, start + timedelta(seconds=elapsed), "",
                "node", run.observation.peak_mem_mb,
            ))  # fmt: skip
    return records


def replay_table(traces: Path) -> None:
    records = site_records(traces)
    with tempfile.TemporaryDirectory() as folder:
        dump = Path(folder) / "lotaru.sacct"
        dump.write_text("|".join(FIELDS) + "\n" + "".join(
            format_sacct_row(job, FIELDS) + "\n" for job in records))  # fmt: skip
        print(f"\nthe traces as a sacct dump: {len(records)} jobs ({dump.stat().st_size} bytes)")
    replayed = replay_memory(records)
    if replayed is None:
        raise SystemExit("no job with a request and a peak in the traces")
    print(f"users' unused GB-hours: {replayed.unused_gb_h:.1f}")
    print(f"{'policy':18}  {'jobs':>5}  {'advised':>7}  {'kills':>5}  {'kill %':>6}  "
          f"{'held GB-h':>9}  {'freed GB-h':>10}  {'freed %':>7}")  # fmt: skip
    for name, figures in replayed.policies.items():
        print(f"{name:18}  {figures.jobs:5d}  {figures.advised:7d}  {figures.kills:5d}  "
              f"{100 * (figures.kill_rate or 0):6.2f}  {figures.held_gb_h:9.1f}  "
              f"{figures.freed_gb_h:10.1f}  {100 * (figures.freed_share or 0):7.1f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=Path("../shared/data/lotaru"))
    args = parser.parse_args()
    evaluation_table(args.traces)
    replay_table(args.traces)


if __name__ == "__main__":
    main()
