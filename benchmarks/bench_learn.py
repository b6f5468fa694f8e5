"""Speed of ``advisor learn`` on 100,000 observations over 1,000 tasks, and of one prediction.

Run: ``.venv/bin/python benchmarks/bench_learn.py [--tasks 1000] [--runs-per-task 100]``.

Builds a cache of synthetic runs (per task: 60 on the reference class, 20 on its reduced-clock
twin, 20 spread over four other classes, all with benchmark scores), then times, each as a fresh
process like a user would run it:

1. ``python -c pass`` — the baseline: interpreter start-up on this machine, right now;
2. ``advisor learn`` over the whole cache;
3. ``advisor predict --task T --input-bytes N --node C`` from the warm cache (median of 7);
4. in-process, the submit-time path alone: read one task's rows and predict (median of 200).

Times are printed with their ratio to the baseline, so runs on different machines compare.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from advisor.models.features import X_UNIT_BYTES
from advisor.models.predict import predict_on, task_models_from_rows
from advisor.store import Store
from advisor.store.benchmarks import BenchRun, Measurement, save_bench_run
from advisor.store.observations import Observation, add_observations
from advisor.store.task_models import load_task_models

CLASSES = {"ref": 1.0, "a": 1.8, "b": 1.1, "c": 0.9, "d": 0.8}


def build_cache(path: Path, tasks: int, per_task: int, seed: int = 1) -> None:
    """Benchmark scores for every class and the synthetic runs."""
    rng = random.Random(seed)
    with Store.open(path) as store:
        for name, slowness in CLASSES.items():
            scores = {
                "cpu_single_events_s": Measurement(400 / slowness),
                "io_score": Measurement(400 / slowness),
            }
            save_bench_run(store, BenchRun(name, "synthetic", "bench", scores))
        twin_hw = {"same_hardware_as": "ref", "cpu_clock_ghz": 3.0, "reference_cpu_clock_ghz": 3.7}
        save_bench_run(store, BenchRun("twin", "synthetic", "bench", {}, hardware=twin_hw))
        runs = []
        for t in range(tasks):
            overhead, per_gb, w = rng.uniform(1, 60), rng.uniform(0.5, 50), rng.random()
            n_ref, n_twin = int(per_task * 0.6), int(per_task * 0.2)
            sizes = [rng.uniform(0.01, 20) * X_UNIT_BYTES for _ in range(n_ref)]
            for i in range(per_task):
                if i < n_ref:
                    node, x, factor = "ref", sizes[i], 1.0
                elif i < n_ref + n_twin:
                    node, x, factor = "twin", sizes[i - n_ref], 1 + w * (3.7 / 3.0 - 1)
                else:
                    node = rng.choice(["a", "b", "c", "d"])
                    x, factor = rng.uniform(0.01, 40) * X_UNIT_BYTES, CLASSES[node]
                runtime = (overhead + per_gb * x / X_UNIT_BYTES) * factor * rng.uniform(0.95, 1.05)
                runs.append(
                    Observation(
                        "bench",
                        f"{t}-{i}",
                        f"task-{t:04d}",
                        runtime,
                        node=node,
                        node_class=node,
                        workflow="wf",
                        label=f"p{i % n_ref}",
                        input_bytes=int(x),
                    )
                )
        add_observations(store, runs)


def timed(argv: list[str], repeat: int) -> float:
    """Median wall time of running argv as a process."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--runs-per-task", type=int, default=100)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "cache.db"
        start = time.perf_counter()
        build_cache(db, args.tasks, args.runs_per_task)
        print(
            f"built {args.tasks * args.runs_per_task:,} observations in {time.perf_counter() - start:.1f} s"
        )
        baseline = timed([py, "-c", "pass"], 7)
        learn = timed([py, "-m", "advisor", "--db", str(db), "learn", "--format", "json"], 1)
        predict_argv = [
            py,
            "-m",
            "advisor",
            "--db",
            str(db),
            "predict",
            "--task",
            "task-0042",
            "--input-bytes",
            str(int(7.5 * X_UNIT_BYTES)),
            "--node",
            "a",
        ]
        predict = timed(predict_argv, 7)
        with Store.open(db, readonly=True) as store:
            samples = []
            for _ in range(200):
                begin = time.perf_counter()
                rows = load_task_models(store, "task-0042")
                models = task_models_from_rows(
                    "task-0042", ((r.node_class, r.method, r.params) for r in rows)
                )
                predict_on(models, "a", 7.5 * X_UNIT_BYTES, factor=None)
                samples.append(time.perf_counter() - begin)
        hot = statistics.median(samples)
    print(f"{'baseline: python -c pass':44s} {baseline * 1000:9.1f} ms   1.0x")
    print(f"{'advisor learn (whole cache)':44s} {learn * 1000:9.1f} ms   {learn / baseline:.1f}x")
    print(
        f"{'advisor predict (one task, warm cache)':44s} {predict * 1000:9.1f} ms   {predict / baseline:.1f}x"
    )
    print(f"{'in-process: read rows + predict':44s} {hot * 1000:9.3f} ms   {hot / baseline:.3f}x")


if __name__ == "__main__":
    main()
