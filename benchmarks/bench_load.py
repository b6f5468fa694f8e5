"""Load: concurrent ``advisor sbatch`` submissions while ``advisor update`` ingests a history.

Run (root, on the test cluster): ``.venv/bin/python benchmarks/bench_load.py [--submitters 8]
[--per-submitter 500] [--swf PATH]``.

A fresh cache gets the live cluster's partitions and a trained model of one task (a random name,
also the job name, so the jobs are found by ``squeue --name`` and nobody else's are touched).
Then, at the same time:

* ``advisor update --swf`` ingests the KTH SP2 log (28,489 jobs; ../shared/data/traces) into the
  same cache, again and again under a new log name each time (so every run stores everything),
  until the submitters are done;
* N submitter threads each run ``advisor sbatch -H -J TASK --wrap true`` M times, one real
  process after the other.  The jobs are submitted **held** (``-H``): they never run, so the
  cluster (shared with other developers) is not flooded, and all of them are cancelled at the end.

Counted: submissions that failed, that printed "database is locked" or any advisor warning,
jobs lost (a job id printed but not in ``squeue``) or unexpected (in ``squeue`` but never
printed), jobs without exactly one advice row (joined on the job id), and update runs that
failed.  Printed: wrapper latency p50/p99 under load, against the same wrapper and plain
``sbatch -H`` on the idle cache just before (measured in the same run), and the update's rate.

The integration test tests/integration/test_load.py runs the same harness scaled down.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from advisor.services.cluster import fetch_cluster
from advisor.services.learn import learn
from advisor.slurm.backend import CliBackend
from advisor.slurm.timefmt import parse_duration
from advisor.store.cluster import save_cluster
from advisor.store.connection import Store
from advisor.store.node_classes import save_node_classes
from advisor.store.observations import Observation, add_observations

REPO = Path(__file__).resolve().parent.parent
KTH = REPO.parent / "shared" / "data" / "traces" / "KTH-SP2-1996-2.1-cln.swf"
ADVISOR = (sys.executable, "-m", "advisor")
TIMEOUT_S = 300.0


def train_cache(path: Path, task: str, *, base_s: float = 60.0) -> Path:
    """The live cluster's partitions and nodes, two node classes and a learned model of task.

    The n-th of 12 runs on class small takes about n × base_s, twice as fast on class big.
    """
    partitions, nodes = fetch_cluster(CliBackend())
    classes = {node.name: ("big" if node.cpus >= 8 else "small") for node in nodes}
    with Store.open(path) as store:
        save_cluster(store, partitions, nodes)
        save_node_classes(store, classes)
        runs = [
            Observation("load", f"{cls}{i}", task, (30 + base_s * (i + 1)) / speed,
                        node_class=cls, input_bytes=(i + 1) * 100_000_000)
            for cls, speed, count in (("small", 1.0, 12), ("big", 2.0, 6))
            for i in range(count)
        ]  # fmt: skip
        add_observations(store, runs)
        learn(store)
    return path


def run(argv: Sequence[str], timeout_s: float = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """A command's result, never raising on its exit code."""
    return subprocess.run(
        list(argv), capture_output=True, text=True, timeout=timeout_s, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def job_id_of(stdout: str) -> int | None:
    """The id in sbatch's 'Submitted batch job N'."""
    words = stdout.split()
    return (
        int(words[-1]) if words[:3] == ["Submitted", "batch", "job"] and len(words) == 4 else None
    )


@dataclass(frozen=True)
class Submission:
    """One ``advisor sbatch`` process."""

    seconds: float
    returncode: int
    job_id: int | None
    stderr: str


@dataclass(frozen=True)
class UpdateRun:
    """One ``advisor update`` process."""

    seconds: float
    returncode: int
    stored: int
    stderr: str


@dataclass
class LoadResult:
    """Everything a load run did, and what Slurm and the cache hold afterwards."""

    submissions: list[Submission] = field(default_factory=list)
    updates: list[UpdateRun] = field(default_factory=list)
    in_squeue: dict[int, int] = field(default_factory=dict)  # job id -> time limit (s)
    # job id -> its advice rows, each (outcome, limit_s)
    advice: dict[int, list[tuple[str, int | None]]] = field(default_factory=dict)
    overlap: int = 0  # submissions that ended while an update process was running
    seconds: float = 0.0

    @property
    def submitted(self) -> set[int]:
        """Job ids the wrapper printed."""
        return {s.job_id for s in self.submissions if s.job_id is not None}

    def counts(self) -> dict[str, int]:
        """The figures that must be zero (and the ones that must not)."""
        ok = [s for s in self.submissions if s.returncode == 0 and s.job_id is not None]
        return {
            "submissions": len(self.submissions),
            "submitted": len(ok),
            "failed": len(self.submissions) - len(ok),
            "locked": sum("locked" in s.stderr for s in self.submissions),
            "warnings": sum("advisor: warning" in s.stderr for s in self.submissions),
            "lost": len(self.submitted - set(self.in_squeue)),
            "unexpected": len(set(self.in_squeue) - self.submitted),
            "without_advice": sum(len(self.advice.get(job, ())) != 1 for job in self.submitted),
            "not_advised": sum(  # the job's limit is not the one its advice row records
                [("submitted", limit)] != self.advice.get(job)
                for job, limit in self.in_squeue.items()
            ),
            "updates": len(self.updates),
            "updates_failed": sum(u.returncode != 0 for u in self.updates),
            "updates_locked": sum("locked" in u.stderr for u in self.updates),
            "history_stored": sum(u.stored for u in self.updates),
            "overlap": self.overlap,
        }


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (nearest rank) of values."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def submit_argv(cache: Path, task: str, name: str) -> list[str]:
    """A held one-line job of task through the wrapper, named name (to find it in squeue)."""
    return [*ADVISOR, "--db", str(cache), "sbatch", "--advisor-task", task, "-H", "-J", name,
            "--output=/dev/null", "--wrap", "true"]  # fmt: skip


def timed_submission(argv: Sequence[str]) -> Submission:
    """Run one submission process and time it."""
    start = time.perf_counter()
    done = run(argv)
    return Submission(time.perf_counter() - start, done.returncode, job_id_of(done.stdout),
                      done.stderr)  # fmt: skip


class _Updater(threading.Thread):
    """Runs ``advisor update --swf`` over fresh copies of the log until told to stop."""

    def __init__(self, cache: Path, swf: Path, folder: Path) -> None:
        super().__init__(daemon=True)
        self.cache, self.swf, self.folder = cache, swf, folder
        self.stop = threading.Event()
        self.started_once = threading.Event()
        self.busy = threading.Event()
        self.runs: list[UpdateRun] = []

    def run(self) -> None:
        number = 0
        while not self.stop.is_set():
            number += 1
            copy = self.folder / f"load-{number}.swf"  # a new log name: every job is new
            shutil.copyfile(self.swf, copy)
            argv = [*ADVISOR, "--db", str(self.cache), "--format", "json", "update",
                    "--swf", str(copy)]  # fmt: skip
            self.busy.set()
            self.started_once.set()
            start = time.perf_counter()
            done = run(argv)
            seconds = time.perf_counter() - start
            self.busy.clear()
            copy.unlink()
            stored = json.loads(done.stdout)["stored"] if done.returncode == 0 else 0
            self.runs.append(UpdateRun(seconds, done.returncode, stored, done.stderr))


def run_load(
    cache: Path,
    task: str,
    *,
    name: str,
    submitters: int,
    per_submitter: int,
    swf: Path,
    folder: Path,
) -> LoadResult:
    """Submit held jobs from concurrent threads while updates run; count; cancel the jobs."""
    result = LoadResult()
    updater = _Updater(cache, swf, folder)
    lock = threading.Lock()

    def submitter() -> None:
        for _ in range(per_submitter):
            done = timed_submission(submit_argv(cache, task, name))
            with lock:
                result.submissions.append(done)
                result.overlap += updater.busy.is_set()

    start = time.perf_counter()
    try:
        updater.start()
        updater.started_once.wait(timeout=60)
        time.sleep(1.0)  # into the update's writing, past its first (read-only) pass
        threads = [threading.Thread(target=submitter) for _ in range(submitters)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        result.seconds = time.perf_counter() - start
        updater.stop.set()
        updater.join(timeout=TIMEOUT_S)
        result.updates = updater.runs
        listed = run(["squeue", "-h", "--states=all", f"--name={name}", "-o", "%i %l"])
        for line in listed.stdout.splitlines():
            job, limit = line.split()
            result.in_squeue[int(job)] = parse_duration(limit)
    finally:
        updater.stop.set()
        cancel(name)
    with Store.open(cache, readonly=True) as store:
        rows = store.query("SELECT job_id, outcome, limit_s FROM advice WHERE task = ?", (task,))
    for row in rows:
        result.advice.setdefault(row["job_id"], []).append((row["outcome"], row["limit_s"]))
    return result


def cancel(name: str) -> None:
    """Cancel every job of this name (ours: the name is random)."""
    run(["scancel", f"--name={name}"], timeout_s=120)


def idle_latencies(cache: Path, task: str, name: str, runs: int) -> tuple[list[float], list[float]]:
    """The wrapper and plain ``sbatch -H`` on the idle cache, interleaved (the baselines)."""
    wrapper, plain = [], []
    try:
        for _ in range(runs):
            wrapper.append(timed_submission(submit_argv(cache, task, name)).seconds)
            start = time.perf_counter()
            run(["sbatch", "-H", "-J", name, "--output=/dev/null", "--wrap", "true"])
            plain.append(time.perf_counter() - start)
    finally:
        cancel(name)
    return wrapper, plain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submitters", type=int, default=8)
    parser.add_argument("--per-submitter", type=int, default=500)
    parser.add_argument("--idle-runs", type=int, default=30)
    parser.add_argument("--swf", type=Path, default=KTH)
    args = parser.parse_args()
    task = f"load-{secrets.token_hex(4)}"
    env_note = f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cache = train_cache(folder / "cache.db", task)
        idle_wrapper, idle_plain = idle_latencies(cache, task, f"{task}-idle", args.idle_runs)
        start = time.perf_counter()
        alone = run([*ADVISOR, "--db", str(folder / "alone.db"), "--format", "json", "update",
                     "--swf", str(args.swf)])  # fmt: skip
        alone_s = time.perf_counter() - start
        result = run_load(cache, task, name=f"{task}-load", submitters=args.submitters,
                          per_submitter=args.per_submitter, swf=args.swf, folder=folder)  # fmt: skip
    counts = result.counts()
    loaded = [s.seconds for s in result.submissions]
    print(f"task {task}; {env_note}")
    print(f"{args.submitters} submitters x {args.per_submitter} held jobs in "
          f"{result.seconds:.0f} s, while {counts['updates']} 'advisor update --swf' runs stored "
          f"{counts['history_stored']} jobs; {counts['overlap']} submissions ended during an update")  # fmt: skip
    for name in ("submitted", "failed", "locked", "warnings", "lost", "unexpected",
                 "without_advice", "not_advised", "updates_failed", "updates_locked"):  # fmt: skip
        print(f"  {name:16s} {counts[name]}")
    p50, p99 = percentile(loaded, 0.5), percentile(loaded, 0.99)
    idle = statistics.median(idle_wrapper)
    plain = statistics.median(idle_plain)
    print(f"wrapper latency under load: p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, "
          f"max {max(loaded) * 1000:.0f} ms")  # fmt: skip
    print(f"idle baselines ({args.idle_runs} runs): wrapper p50 {idle * 1000:.0f} ms, "
          f"plain sbatch -H p50 {plain * 1000:.0f} ms")  # fmt: skip
    print(f"ratios: loaded p50 / idle wrapper p50 {p50 / idle:.2f}x, loaded p99 / idle {p99 / idle:.2f}x, "
          f"idle wrapper / plain sbatch {idle / plain:.2f}x")  # fmt: skip
    updates = [u.seconds for u in result.updates if u.returncode == 0]
    if updates:
        print(f"update under load: median {statistics.median(updates):.1f} s per "
              f"{result.updates[0].stored} jobs")  # fmt: skip
    print(f"update alone (idle cache, before): {alone_s:.1f} s, exit {alone.returncode}")


if __name__ == "__main__":
    main()
