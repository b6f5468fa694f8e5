"""Reduced-clock twins: the same machine run again with its CPU clock lowered.

Lotaru (Sec. 3.3) runs the workflow once more on the training machine with a lower CPU clock;
how much slower each task gets, compared with how much slower a purely CPU-bound task would get,
is the task's CPU weight w.  A twin is stored as a node of its own (e.g. ``wallyRedCpu``) whose
newest run's hardware says ``same_hardware_as`` and both clocks; its scores are the twin's with
the CPU scores scaled by the clock ratio (CPU benchmarks scale with the clock; I/O and memory
scores are kept, as the disks and memory did not change).
"""

from __future__ import annotations

from collections.abc import Mapping

from advisor.lite import NamedTuple
from advisor.store.benchmarks import Measurement
from advisor.store.node_classes import RunInfo

#: Scores that scale with the CPU clock.
CLOCK_SCALED_METRICS = frozenset({"cpu_single_events_s", "cpu_all_events_s", "linpack_kflops"})


class ClockTwin(NamedTuple):
    """A node that is another node's hardware at a different CPU clock."""

    node: str
    same_hardware_as: str
    cpu_clock_ghz: float
    reference_cpu_clock_ghz: float

    @property
    def clock_ratio(self) -> float:
        """Twin clock / reference clock (3.0 / 3.7 = 0.81 for Lotaru's wallyRedCpu)."""
        return self.cpu_clock_ghz / self.reference_cpu_clock_ghz

    @property
    def cpu_bound_slowdown(self) -> float:
        """Relative slowdown of a fully CPU-bound task on the twin: reference/twin clock - 1."""
        return self.reference_cpu_clock_ghz / self.cpu_clock_ghz - 1.0

    def hardware(self) -> dict[str, object]:
        """What is stored in the twin's run as its hardware."""
        return {
            "same_hardware_as": self.same_hardware_as,
            "cpu_clock_ghz": self.cpu_clock_ghz,
            "reference_cpu_clock_ghz": self.reference_cpu_clock_ghz,
            "clock_ratio": self.clock_ratio,
        }


def twin_scores(twin: ClockTwin, base: Mapping[str, Measurement]) -> dict[str, Measurement]:
    """The base node's scores as the twin would score: CPU scores times the clock ratio."""
    ratio = twin.clock_ratio
    return {
        metric: (
            Measurement(m.value * ratio, None if m.spread is None else m.spread * ratio, m.unit)
            if metric in CLOCK_SCALED_METRICS
            else m
        )
        for metric, m in base.items()
    }


def clock_twins(runs: Mapping[str, RunInfo]) -> dict[str, ClockTwin]:
    """The twins among the nodes' newest runs (see advisor.store.node_classes.latest_runs)."""
    twins = {}
    for node, run in runs.items():
        hw = run.hardware
        if (
            hw.get("same_hardware_as")
            and hw.get("cpu_clock_ghz")
            and hw.get("reference_cpu_clock_ghz")
        ):
            twins[node] = ClockTwin(
                node=node,
                same_hardware_as=str(hw["same_hardware_as"]),
                cpu_clock_ghz=float(hw["cpu_clock_ghz"]),
                reference_cpu_clock_ghz=float(hw["reference_cpu_clock_ghz"]),
            )
    return twins
