"""How long ``advisor replay --schedule`` takes on a full log, against the plain replay.

Run: ``.venv/bin/python benchmarks/bench_replay.py [--advisor PATH] [--repeat 3]``, best with
the ``advisor`` of a regular install (``python3 -m venv /tmp/v && /tmp/v/bin/pip install .``).

For each development log (``../shared/data/traces``; the excerpts in tests/data/traces when
they are absent), in fresh processes, as a user runs it:

1. baseline: ``advisor replay LOG --format json`` (read, replay six policies);
2. ``advisor replay LOG --schedule --scheduler easy --format json`` (the same, then one EASY
   simulation of the log's machine per policy);
3. ``advisor replay LOG --schedule --format json`` (the same with Slurm's main and backfill
   schedulers, the default).

Printed: the median wall time of each over the repeats, and the ratios of 2 and 3 to 1.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from bench_learn import timed  # benchmarks/ is on the path of a script run from it

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data" / "traces"
LOGS = ("KTH-SP2-1996-2.1-cln.swf", "CEA-Curie-2011-sample30k.swf")
EXCERPTS = ("kth-sp2-excerpt.swf", "cea-curie-excerpt.swf")


def main() -> None:
    """Time both commands on both logs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--advisor", default=shutil.which("advisor") or "advisor")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    logs = [SHARED / name for name in LOGS]
    if not all(path.exists() for path in logs):
        logs = [REPO / "tests" / "data" / "traces" / name for name in EXCERPTS]
    print(f"advisor: {args.advisor}; median of {args.repeat}")
    print(
        f"{'log':34s} {'replay s':>9s} {'easy s':>7s} {'ratio':>6s} {'slurm s':>8s} {'ratio':>6s}"
    )
    for log in logs:
        replay = [args.advisor, "replay", str(log), "--format", "json"]
        plain = timed(replay, args.repeat)
        easy = timed([*replay, "--schedule", "--scheduler", "easy"], args.repeat)
        slurm = timed([*replay, "--schedule"], args.repeat)
        print(
            f"{log.name:34s} {plain:9.2f} {easy:7.2f} {easy / plain:6.2f} "
            f"{slurm:8.2f} {slurm / plain:6.2f}"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
