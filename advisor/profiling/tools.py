"""sysbench and fio, where installed, so figures are comparable with published ones (Lotaru Table 2).

The programs are run through the Slurm adapter's argv runner (no shell, with a time-out); the
parsers are pure and tested on captured output (tests/data/profiling/).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError, InputError
from advisor.profiling.io_bench import IoPlan, test_file_path
from advisor.profiling.kernels import MAX_PRIME
from advisor.profiling.stats import Figure, summarize
from advisor.slurm.runner import CommandResult, run_subprocess

TOOLS = ("builtin", "sysbench", "fio")
_EVENTS = re.compile(r"events per second:\s*([0-9.]+)")
_MEMORY = re.compile(r"MiB transferred \(([0-9.]+) MiB/sec\)")
_TIMEOUT_S = 120.0

Run = Callable[[Sequence[str], float, str | None], CommandResult]


def require_tool(name: str, which: Callable[[str], str | None] = shutil.which) -> None:
    """InputError (exit 2) when the program is not on PATH."""
    if which(name) is None:
        raise InputError(
            f"--tool {name}: {name} is not installed",
            hint=f"install it (Debian: apt-get install {name}) or use --tool builtin",
        )


def _number(pattern: re.Pattern[str], text: str, what: str) -> float:
    match = pattern.search(text)
    if not match:
        raise AdvisorError(f"{what}: no figure in the output", hint="run it by hand to see why")
    value = float(match.group(1))
    if value <= 0:
        raise AdvisorError(f"{what}: figure is {value}, not positive")
    return value


def parse_sysbench_cpu(text: str) -> float:
    """Events/s in ``sysbench cpu ... run`` output."""
    return _number(_EVENTS, text, "sysbench cpu")


def parse_sysbench_memory(text: str) -> float:
    """MiB/s in ``sysbench memory ... run`` output."""
    return _number(_MEMORY, text, "sysbench memory")


def _fio_job(text: str) -> dict[str, Any]:
    """The single job of ``fio --output-format=json`` (lines before the JSON, e.g. notes, skipped)."""
    start = text.find("{")
    try:
        doc = json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError as error:
        raise AdvisorError(f"fio: output is not JSON: {error.msg}") from None
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(jobs, list) or len(jobs) != 1 or not isinstance(jobs[0], dict):
        raise AdvisorError("fio: expected one job in the JSON output")
    job: dict[str, Any] = jobs[0]
    if job.get("error"):
        raise AdvisorError(f"fio: job failed with error {job['error']}")
    return job


def parse_fio(text: str, direction: str, field: str) -> float:
    """One figure of a fio JSON job: ``bw`` (KiB/s, returned as MiB/s) or ``iops``."""
    value = _fio_job(text).get(direction, {}).get(field)
    if not isinstance(value, int | float) or value <= 0:
        raise AdvisorError(f"fio: no positive {direction}.{field} in the output")
    return float(value) / 1024 if field == "bw" else float(value)


@dataclass(frozen=True)
class ToolRunner:
    """Runs sysbench and fio repeatedly and summarizes their figures."""

    run: Run = run_subprocess
    timeout_s: float = _TIMEOUT_S

    def _output(self, argv: Sequence[str]) -> str:
        result = self.run(argv, self.timeout_s, None)
        if result.returncode != 0:
            detail = (result.stderr.strip() or result.stdout.strip()).splitlines()
            raise AdvisorError(
                f"{argv[0]} exited with {result.returncode}" + (f": {detail[-1]}" if detail else "")
            )
        return result.stdout

    def sysbench_cpu(self, threads: int, events: int, reps: int) -> Figure:
        """events/s of ``sysbench cpu`` (at most 1 s per repetition)."""
        argv = [
            "sysbench",
            "cpu",
            f"--cpu-max-prime={MAX_PRIME}",
            f"--threads={threads}",
            "--time=1",
            f"--events={events}",
            "run",
        ]
        return summarize([parse_sysbench_cpu(self._output(argv)) for _ in range(reps)], "events/s")

    def sysbench_memory(self, size_mib: int, reps: int) -> Figure:
        """MiB/s of ``sysbench memory`` (1 MiB blocks, writes)."""
        argv = [
            "sysbench",
            "memory",
            "--memory-block-size=1M",
            f"--memory-total-size={size_mib}M",
            "--memory-oper=write",
            "--threads=1",
            "--time=0",
            "run",
        ]
        return summarize([parse_sysbench_memory(self._output(argv)) for _ in range(reps)], "MiB/s")

    def fio(self, directory: Path, plan: IoPlan, *, direct: bool) -> tuple[Figure, Figure, Figure]:
        """Sequential write and read (MiB/s) and random 4 KiB reads (IOPS) with fio."""
        path = test_file_path(directory)
        common = [
            f"--filename={path}",
            f"--size={plan.file_mib}M",
            f"--direct={int(direct)}",
            "--ioengine=psync",
            "--output-format=json",
        ]
        rand_ms = max(1, round(plan.rand_rep_s * 1000))
        try:
            writes = [
                parse_fio(
                    self._output(
                        [
                            "fio",
                            "--name=advisor-seq",
                            "--rw=write",
                            "--bs=1M",
                            "--end_fsync=1",
                            *common,
                        ]
                    ),
                    "write",
                    "bw",
                )
                for _ in range(plan.reps)
            ]
            reads = [
                parse_fio(
                    self._output(["fio", "--name=advisor-seq", "--rw=read", "--bs=1M", *common]),
                    "read",
                    "bw",
                )
                for _ in range(plan.reps)
            ]
            rands = [
                parse_fio(
                    self._output(
                        [
                            "fio",
                            "--name=advisor-rand",
                            "--rw=randread",
                            "--bs=4k",
                            f"--runtime={rand_ms}ms",
                            "--time_based",
                            *common,
                        ]
                    ),
                    "read",
                    "iops",
                )
                for _ in range(plan.reps)
            ]
        finally:
            path.unlink(missing_ok=True)
        return summarize(writes, "MiB/s"), summarize(reads, "MiB/s"), summarize(rands, "IOPS")
