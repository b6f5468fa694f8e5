"""Speed of the submit path: ``advisor sbatch`` against ``python3 -c pass`` and sbatch itself.

Run: ``.venv/bin/python benchmarks/bench_wrapper.py [--runs 30]``.

Builds a temporary cache (the test cluster's partitions, three node classes, a learned model of
one task) and a regular (not editable) install of this repository in a fresh virtual
environment, as a site would install it (``pip install .``: bytecode compiled at install, no
editable import hook; ``--this-env`` runs this environment's advisor instead), then runs,
interleaved so that machine load hits all alike:

1. ``python3 -c pass`` with the base interpreter (the issue's baseline, "≈ 40 ms": python3 as
   installed, its site-packages included, not through the pyenv shell shim),
2. ``python -c pass`` with the interpreter that runs the advisor (its virtual environment:
   issue 17's baseline),
3. ``advisor sbatch --advisor-dry-run --advisor-input FILE job.sh`` (the console script, the
   full path: argv, #SBATCH lines, the cache read, the prediction, the command line),
4. ``sbatch --test-only job.sh`` when a controller answers (what a submission costs anyway),
5. ``advisor sbatch --test-only --advisor-input FILE job.sh``: the wrapper's real path into sbatch.

Prints the median and the fastest run of each, and the ratios of the medians.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from advisor.services.learn import learn
from advisor.slurm.records import Node, Partition
from advisor.store.cluster import save_cluster
from advisor.store.connection import Store
from advisor.store.node_classes import save_node_classes
from advisor.store.observations import Observation, add_observations

REPO = Path(__file__).resolve().parent.parent

PARTITIONS = [
    Partition("cpu", ("c1", "c2"), 86400, 1800, True, "UP"),
    Partition("long", ("c1", "c2"), 604800, 14400, False, "UP"),
    Partition("fat", ("f1",), 259200, 3600, False, "UP"),
]
NODES = [Node(n, 2, 4000, (), (), "IDLE") for n in ("c1", "c2")] + [
    Node("f1", 8, 64000, (), (), "IDLE")
]


def build_cache(path: Path) -> None:
    with Store.open(path) as store:
        save_cluster(store, PARTITIONS, NODES)
        save_node_classes(store, {"c1": "small", "c2": "small", "f1": "big"})
        runs = [
            Observation("bench", f"{node}{i}", "align", 60 + 250 * (i + 1) * 0.2 / speed, node=node,
                        node_class=cls, input_bytes=(i + 1) * 200_000_000)
            for node, cls, speed in (("c1", "small", 1.0), ("f1", "big", 2.0))
            for i in range(10)
        ]  # fmt: skip
        add_observations(store, runs)
        learn(store)


def regular_install(where: Path) -> Path:
    """A fresh virtual environment with this repository pip-installed (not editable); its python.

    Installed from a copy of the sources (a stale build/ directory would ship modules that no
    longer exist), without dependencies: the submit path needs only the standard library.
    """
    source, venv = where / "source", where / "venv"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".*", "build", "dist", "*.egg-info", "__pycache__", "tests", "docs"))  # fmt: skip
    base_python = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base_python, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = [str(python), "-m", "pip", "install", "-q", "--no-deps", str(source)]
    subprocess.run(install, check=True, stderr=subprocess.DEVNULL)
    return python


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    return time.perf_counter() - start


def answers(argv: list[str]) -> bool:
    """True when the command runs and succeeds (sbatch needs a controller)."""
    try:
        done = subprocess.run(argv, capture_output=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument(
        "--no-bytecode", action="store_true", help="compile every module on every run (no .pyc)"
    )
    parser.add_argument(
        "--this-env", action="store_true",
        help="run this environment's advisor (an editable install's hook included), not a regular install",
    )  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        cache = base / "cache.db"
        build_cache(cache)
        python = Path(sys.executable) if args.this_env else regular_install(base)
        script = base / "job.sh"
        script.write_text(
            "#!/bin/sh\n#SBATCH --job-name=align\n#SBATCH -p cpu,fat\n#SBATCH --output=/dev/null\n"
            "sleep 1\n"
        )
        data = base / "reads.bin"
        data.write_bytes(b"x" * 1_000_000)
        console = python.parent / "advisor"
        advisor = [str(console)] if console.exists() else [str(python), "-m", "advisor"]
        wrapper = [*advisor, "--db", str(cache), "sbatch", "--advisor-input", str(data)]
        base_python = getattr(sys, "_base_executable", sys.executable)
        commands = {
            "python3 -c pass": [base_python, "-c", "pass"],
            # The interpreter that runs the advisor: a pyenv shim on PATH would add ~80 ms of bash.
            "venv python -c pass": [str(python), "-c", "pass"],
            "advisor sbatch --advisor-dry-run": [*wrapper, "--advisor-dry-run", str(script)],
        }
        if shutil.which("sbatch") and answers(["sbatch", "--test-only", str(script)]):
            commands["sbatch --test-only"] = ["sbatch", "--test-only", str(script)]
            commands["advisor sbatch --test-only"] = [*wrapper, "--test-only", str(script)]
        else:
            print("sbatch is missing or no controller answers: the sbatch rows are left out")
        # An installed package has its bytecode compiled (pip does it); a source tree run with
        # PYTHONDONTWRITEBYTECODE=1 compiles every module on every run.  Measure as installed:
        # the regular install's own bytecode, or (--this-env) bytecode in a private prefix,
        # written by the warm-up run.
        skipped = ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")
        env = {k: v for k, v in os.environ.items() if k not in skipped}
        if args.this_env:
            env["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
        if args.no_bytecode:
            env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        for argv in commands.values():  # warm the page cache and the bytecode
            timed(argv, env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                times[name].append(timed(argv, env))
    medians = {name: statistics.median(values) for name, values in times.items()}
    cached = "without bytecode" if args.no_bytecode else "with compiled bytecode"
    print(f"{args.runs} interleaved runs each, {cached}, on {os.cpu_count()} CPUs")
    install = "this environment's" if args.this_env else "a regular (pip install .)"
    print(f"  python3 = {base_python}; venv python = {python} ({install} install)")
    for name, values in times.items():
        print(
            f"  {name:28s} median {medians[name] * 1000:7.1f} ms   fastest {min(values) * 1000:7.1f} ms"
        )
    dry = medians["advisor sbatch --advisor-dry-run"]
    print(
        f"advisor sbatch --advisor-dry-run / python3 -c pass: {dry / medians['python3 -c pass']:.2f}x"
    )
    print(
        f"advisor sbatch --advisor-dry-run / venv python -c pass: {dry / medians['venv python -c pass']:.2f}x "
        "(issue 17's target: within 2x, goal 1.5x)"
    )
    if "sbatch --test-only" in medians:
        plain = medians["sbatch --test-only"]
        print(f"advisor sbatch --advisor-dry-run / sbatch --test-only: {dry / plain:.2f}x")
        real = medians["advisor sbatch --test-only"]
        print(
            f"advisor sbatch --test-only / sbatch --test-only: {real / plain:.2f}x "
            f"({(real - plain) * 1000:.1f} ms added to a submission)"
        )


if __name__ == "__main__":
    main()
