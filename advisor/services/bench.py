"""``advisor bench``: the microbenchmarks on this machine, stored in the cache when asked."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.profiling.bench import BenchReport, default_bench_dir, run_bench
from advisor.profiling.recording import record_runs
from advisor.store.connection import Store


@dataclass(frozen=True)
class Benched:
    """One benchmark run and the id it was stored as (None: not stored)."""

    report: BenchReport
    run_id: int | None = None

    @property
    def cpu_model(self) -> str | None:
        """The CPU's model name, where the machine tells."""
        return self.report.hardware.get("cpu_model") or None

    @property
    def allowed_cpus(self) -> int:
        """The CPUs this process may run on (a job's allocation)."""
        return int(self.report.hardware["allowed_cpus"])

    @property
    def logical_cpus(self) -> int:
        """The machine's logical CPUs."""
        return int(self.report.hardware["logical_cpus"])

    @property
    def memory_mib(self) -> int | None:
        """The machine's memory."""
        return self.report.hardware.get("memory_mib")

    def to_json(self) -> dict[str, Any]:
        """The schemas/bench-output.json document."""
        return self.report.to_json(self.run_id)


def bench_here(
    directory: str | None,
    *,
    quick: bool = False,
    tools: Sequence[str] = ("builtin",),
    save: bool = False,
    db: str | None = None,
    env: Mapping[str, str] = os.environ,
) -> Benched:
    """Benchmark (I/O in directory, by default the job's or the temporary one); store when asked.

    The cache is opened only after the benchmarks, so a 20 s run holds no connection.
    """
    where = Path(directory) if directory else default_bench_dir(env, Path.cwd())
    report = run_bench(where, quick=quick, tools=tools, env=env)
    if not save:
        return Benched(report)
    with Store.open(db) as store:
        (run_id,), _ = record_runs(store, [report.to_run("bench")])
    return Benched(report, run_id)
