"""What a node is: CPU model, cores, memory and clock from /proc, and its Slurm node name.

Node classes group nodes by this (with Slurm's CPUs, memory and features), and a benchmark
result is only comparable with another when the hardware it ran on is known.
"""

from __future__ import annotations

import os
import platform
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: ``/proc/cpuinfo`` keys naming the CPU, by architecture (x86, some ARM, POWER).
_MODEL_KEYS = ("model name", "Model Name", "Processor", "cpu model", "cpu")


def _fields(text: str) -> list[tuple[str, str]]:
    pairs = []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            pairs.append((key.strip(), value.strip()))
    return pairs


def parse_cpuinfo(text: str) -> tuple[str | None, float | None]:
    """The CPU model and the highest current clock (MHz) in ``/proc/cpuinfo``."""
    pairs = _fields(text)
    model = None
    for wanted in _MODEL_KEYS:
        model = next((value for key, value in pairs if key == wanted and value), None)
        if model:
            break
    clocks = []
    for key, value in pairs:
        if key == "cpu MHz":
            try:
                clocks.append(float(value))
            except ValueError:
                continue
    return model, max(clocks) if clocks else None


def parse_meminfo(text: str) -> int | None:
    """MemTotal of ``/proc/meminfo`` in MiB."""
    for key, value in _fields(text):
        if key == "MemTotal":
            number, _, unit = value.partition(" ")
            if number.isdigit() and unit.strip() == "kB":
                return int(number) // 1024
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def allowed_cpus() -> int:
    """CPUs this process may run on: the job's allocation inside Slurm, not the whole node."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def collect_hardware(env: Mapping[str, str], root: Path = Path("/")) -> dict[str, Any]:
    """The hardware facts recorded with every benchmark run."""
    model, mhz = parse_cpuinfo(_read(root / "proc/cpuinfo"))
    max_khz = _read(root / "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").strip()
    return {
        "cpu_model": model,
        "logical_cpus": os.cpu_count() or 1,
        "allowed_cpus": allowed_cpus(),
        "memory_mib": parse_meminfo(_read(root / "proc/meminfo")),
        "cpu_mhz": mhz,
        "cpu_max_mhz": int(max_khz) / 1000 if max_khz.isdigit() else None,
        "machine": platform.machine(),
        "hostname": socket.gethostname().split(".")[0],
        "slurm_node": env.get("SLURMD_NODENAME") or None,
        "slurm_job_id": env.get("SLURM_JOB_ID") or None,
    }


def node_name(hardware: Mapping[str, Any]) -> str:
    """The Slurm node name inside a job, else the short host name."""
    return str(hardware.get("slurm_node") or hardware["hostname"])
