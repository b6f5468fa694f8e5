"""Throughput and memory of ``advisor update --sacct-file`` on a generated 1,000,000-row dump.

Run: ``.venv/bin/python benchmarks/bench_update.py [--sizes 100000,300000,1000000]``.

The dump is drawn from the real logs' distributions (``../shared/data/traces``, else the
excerpts in tests/data/traces): each row copies a random job's runtime, request, outcome and
processor count, with users and job names drawn per log, times advancing like the log's, and
unique job ids.  It is written as ``sacct --parsable2`` prints it (header line, ``|``).

Each measurement runs in a fresh process, whose peak RSS (``VmHWM``) is its own:

1. baseline: reading and parsing the largest dump only (no cache), rows/s;
2. ``update --sacct-file`` of each dump into a fresh cache: rows/s and peak RSS.

Printed: rows/s with its ratio to the baseline, peak RSS per size, and the RSS of the largest
run while it stores.  The file is streamed and stored in batches of 5,000 rows, each its own
transaction, so memory is bounded by what one batch touches: its records and the states of its
history keys (at most 50 runs per key).  While the keys' windows fill up (here, the first
~700,000 rows: the generated users have about 5,000 keys) that state grows a little; after
that the RSS is flat however long the dump is.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from advisor.accounting.sacct_file import format_sacct_row
from advisor.accounting.swf import SwfJob, read_swf
from advisor.slurm.parsers import SACCT_FIELDS
from advisor.slurm.records import JobRecord

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data" / "traces"
LOGS = ("KTH-SP2-1996-2.1-cln.swf", "CEA-Curie-2011-sample30k.swf")
EXCERPTS = ("kth-sp2-excerpt.swf", "cea-curie-excerpt.swf")
PARTITIONS = ("cpu", "long", "fat")


def sample_jobs() -> list[tuple[str, SwfJob]]:
    """(log tag, job) of every job with a known runtime, from the real logs or the excerpts."""
    names = [SHARED / name for name in LOGS]
    if not all(path.exists() for path in names):
        names = [REPO / "tests" / "data" / "traces" / name for name in EXCERPTS]
    return [
        (path.stem[:3].lower(), job)
        for path in names
        for job in read_swf(path)
        if job.run_s is not None
    ]


def generate(path: Path, rows: int, seed: int = 7) -> None:
    """Write a dump of rows jobs, one line at a time."""
    rng = random.Random(seed)
    jobs = sample_jobs()
    clock = datetime(2025, 1, 1)
    with path.open("w", encoding="utf-8") as out:
        out.write("|".join(SACCT_FIELDS) + "\n")
        for number in range(1, rows + 1):
            tag, job = rng.choice(jobs)
            clock += timedelta(seconds=rng.expovariate(1 / 30))
            start = clock + timedelta(seconds=job.wait_s or 0)
            runtime = job.run_s or 0
            user = f"{tag}{job.user if job.user is not None else 0}"
            record = JobRecord(
                cluster="bench", job_id=str(number), job_id_raw=number,
                name=f"app{rng.randrange(8)}", user=user, account="research",
                partition=str(job.partition) if job.partition is not None else rng.choice(PARTITIONS),
                nodes=(f"n{rng.randrange(512)}",), cpus=job.procs or 1, req_mem_mb=1000.0,
                elapsed_s=runtime, timelimit_s=(job.request_s // 60 + 1) * 60 if job.request_s else None,
                timelimit_kind=None, state=job.state, state_by_uid=None, exit_code=0, exit_signal=0,
                submit=clock, start=start, end=start + timedelta(seconds=runtime), comment="",
            )  # fmt: skip
            out.write(format_sacct_row(record) + "\n")


CHILD = """
import json, sys, time
from pathlib import Path
mode, dump, db = sys.argv[1], Path(sys.argv[2]), sys.argv[3]

def status(field):
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith(field))
    return int(line.split()[1]) / 1024

trace = []
def sample(done, total):
    # the second pass reports total + rows read: sample RSS every tenth of it
    if total and done > total // 2 and (done - total // 2) % max(1, total // 20) < 1000:
        trace.append((done - total // 2, status("VmRSS:")))

start = time.perf_counter()
if mode == "parse":
    from advisor.accounting.sacct_file import read_sacct_dump
    rows = sum(1 for _ in read_sacct_dump(dump))
else:
    from advisor.accounting.update import update_from_file
    from advisor.store import Store
    with Store.open(db) as store:
        rows = update_from_file(store, dump, kind="sacct", progress=sample)["records"]
seconds = time.perf_counter() - start
# VmHWM: this process image's own peak RSS (ru_maxrss would include the parent's at fork)
print(json.dumps({"rows": rows, "seconds": seconds, "peak_mb": status("VmHWM:"), "trace": trace}))
"""


def measure(mode: str, dump: Path, db: Path) -> dict[str, Any]:
    """One fresh process: parse or ingest the dump; rows, seconds and peak RSS."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "ADVISOR_PROGRESS": "0"}
    done = subprocess.run([sys.executable, "-c", CHILD, mode, str(dump), str(db)],
                          capture_output=True, text=True, check=True, env=env)  # fmt: skip
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="dump sizes in rows")
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        started = time.perf_counter()
        dumps = {size: work / f"dump-{size}.txt" for size in sizes}
        for size, dump in dumps.items():
            generate(dump, size)
        largest = dumps[sizes[-1]]
        print(
            f"generated {', '.join(f'{size:,}' for size in sizes)} rows in "
            f"{time.perf_counter() - started:.0f} s (largest {largest.stat().st_size / 2**20:.0f} MiB)"
        )
        parse = measure("parse", largest, work / "unused.db")
        base_rate = parse["rows"] / parse["seconds"]
        rows = [("parse only (baseline)", parse)]
        rows += [
            (f"update --sacct-file {size:,}", measure("ingest", dump, work / f"{size}.db"))
            for size, dump in dumps.items()
        ]
        print(
            f"{'measurement':34s} {'rows':>10s} {'s':>8s} {'rows/s':>9s} {'× parse':>8s} {'peak MiB':>9s}"
        )
        for label, row in rows:
            rate = row["rows"] / row["seconds"]
            print(
                f"{label:34s} {row['rows']:>10,.0f} {row['seconds']:>8.1f} {rate:>9,.0f} "
                f"{rate / base_rate:>8.2f} {row['peak_mb']:>9.1f}"
            )
        if len(sizes) >= 2:
            last, before = rows[-1][1], rows[-2][1]
            print(
                f"peak memory {sizes[-1]:,} rows / {sizes[-2]:,} rows: "
                f"{last['peak_mb'] / before['peak_mb']:.2f}"
            )
        trace = rows[-1][1]["trace"]
        print(f"RSS while storing {sizes[-1]:,} rows (rows stored: MiB):")
        print("  " + ", ".join(f"{done:,.0f}: {mib:.1f}" for done, mib in trace))


if __name__ == "__main__":
    main()
