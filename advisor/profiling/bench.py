"""Every microbenchmark on this machine, as one report (Lotaru Sec. 3.2).

``advisor bench`` runs it here, ``advisor profile`` on every node through Slurm.

Each figure is the median of several repetitions and carries its range; the default run stays
under 30 s and ``quick`` under 5 s, so profiling a whole cluster takes about a minute.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.errors import InputError
from advisor.profiling.hardware import collect_hardware, node_name
from advisor.profiling.io_bench import IoPlan, check_writable, io_figures, probe_direct
from advisor.profiling.kernels import cpu_all, cpu_single, memory_copy
from advisor.profiling.stats import Figure
from advisor.profiling.tools import TOOLS, ToolRunner, require_tool
from advisor.store.benchmarks import BenchRun, Measurement
from advisor.store.clock import utc_now


@dataclass(frozen=True)
class BenchPlan:
    """Repetitions and sizes of one benchmark run."""

    cpu_reps: int
    cpu_rep_s: float
    cpu_all_reps: int
    memory_mib: int
    memory_reps: int
    memory_rep_s: float
    io: IoPlan
    sysbench_events: int


# Many short CPU repetitions: a VM's speed drifts over seconds, and the median of many short
# samples drifts less than a few long ones (measured: medians of 15 x 0.05 s within 4 %).
QUICK = BenchPlan(
    cpu_reps=15,
    cpu_rep_s=0.05,
    cpu_all_reps=9,
    memory_mib=64,
    memory_reps=5,
    memory_rep_s=0.05,
    io=IoPlan(file_mib=16, reps=3, rand_rep_s=0.1, rand_max_ops=2000),
    sysbench_events=200,
)
FULL = BenchPlan(
    cpu_reps=31,
    cpu_rep_s=0.2,
    cpu_all_reps=15,
    memory_mib=256,
    memory_reps=7,
    memory_rep_s=0.3,
    io=IoPlan(file_mib=128, reps=5, rand_rep_s=0.5, rand_max_ops=20000),
    sysbench_events=2000,
)


@dataclass(frozen=True)
class BenchReport:
    """One run of the microbenchmarks on one node."""

    node: str
    measured_at: str
    tool: str
    quick: bool
    directory: str
    io_cache_bypass: str
    duration_s: float
    hardware: Mapping[str, Any]
    figures: Mapping[str, Figure] = field(default_factory=dict)

    def to_json(self, run_id: int | None = None) -> dict[str, Any]:
        """The schemas/bench-output.json document."""
        return {
            "node": self.node,
            "measured_at": self.measured_at,
            "tool": self.tool,
            "quick": self.quick,
            "dir": self.directory,
            "io_cache_bypass": self.io_cache_bypass,
            "duration_s": round(self.duration_s, 3),
            "hardware": dict(self.hardware),
            "results": {
                metric: {
                    "value": f.value,
                    "spread": f.spread,
                    "unit": f.unit,
                    "samples": list(f.samples),
                }
                for metric, f in self.figures.items()
            },
            "run_id": run_id,
        }

    def to_run(self, source: str) -> BenchRun:
        """The report as a run to store."""
        return run_from_bench_output(self.to_json(), source)


def run_from_bench_output(doc: Mapping[str, Any], source: str) -> BenchRun:
    """A validated bench-output document as a run to store (e.g. collected by ``profile``)."""
    hardware = {
        **doc["hardware"],
        "dir": doc["dir"],
        "quick": doc["quick"],
        "io_cache_bypass": doc["io_cache_bypass"],
    }
    return BenchRun(
        node=doc["node"],
        tool=doc["tool"],
        source=source,
        results={
            metric: Measurement(value=r["value"], spread=r.get("spread"), unit=r["unit"])
            for metric, r in doc["results"].items()
        },
        hardware=hardware,
        measured_at=doc["measured_at"],
    )


def default_bench_dir(env: Mapping[str, str], cwd: Path) -> Path:
    """Inside a job its working directory (what the job's I/O hits), else $TMPDIR, else /tmp."""
    return cwd if env.get("SLURM_JOB_ID") else Path(tempfile.gettempdir())


def _tool_label(tools: Sequence[str]) -> str:
    chosen = sorted(set(tools) - {"builtin"})
    return "+".join(chosen) if chosen else "builtin"


def run_bench(
    directory: Path,
    *,
    quick: bool = False,
    tools: Sequence[str] = ("builtin",),
    env: Mapping[str, str],
    runner: ToolRunner | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> BenchReport:
    """Run every benchmark; bad input (missing tool, unwritable directory) fails before any work."""
    unknown = set(tools) - set(TOOLS)
    if unknown:
        raise InputError(f"--tool: unknown tool {sorted(unknown)[0]!r}; choose from {TOOLS}")
    for tool in set(tools) - {"builtin"}:
        require_tool(tool)
    plan = QUICK if quick else FULL
    check_writable(directory, plan.io.file_mib)
    runner = runner or ToolRunner()
    hardware = collect_hardware(env)
    cores = int(hardware["allowed_cpus"])
    measured_at = utc_now()
    start = clock()
    figures: dict[str, Figure] = {}
    if "sysbench" in tools:
        events = plan.sysbench_events
        reps = max(3, plan.cpu_reps // 5)  # one sysbench run already averages many events
        figures["cpu_single_events_s"] = runner.sysbench_cpu(1, events, reps)
        figures["cpu_all_events_s"] = runner.sysbench_cpu(cores, cores * events, reps)
        figures["memory_mib_s"] = runner.sysbench_memory(plan.memory_mib * 16, plan.memory_reps)
    else:
        figures["cpu_single_events_s"], batch = cpu_single(plan.cpu_reps, plan.cpu_rep_s)
        figures["cpu_all_events_s"] = cpu_all(cores, plan.cpu_all_reps, batch)
        figures["memory_mib_s"] = memory_copy(plan.memory_mib, plan.memory_reps, plan.memory_rep_s)
    if "fio" in tools:
        direct = probe_direct(directory)
        write, read, rand = runner.fio(directory, plan.io, direct=direct)
        bypass = "O_DIRECT" if direct else "fadvise"
    else:
        io = io_figures(directory, plan.io)
        write, read, rand, bypass = io.seq_write, io.seq_read, io.rand_read, io.cache_bypass
    figures.update(seq_write_mib_s=write, seq_read_mib_s=read, rand_read_iops=rand)
    return BenchReport(
        node=node_name(hardware),
        measured_at=measured_at,
        tool=_tool_label(tools),
        quick=quick,
        directory=str(directory),
        io_cache_bypass=bypass,
        duration_s=clock() - start,
        hardware=hardware,
        figures=figures,
    )
