"""From a step file to the in situ report: steady stage times, σ̄*, idle, scenario, E, makespan.

What ``advisor insitu`` reports (advisor.services.insitu reads the file); the model itself is in ``advisor.insitu.model``.  Steady
stage times are *means* over the steady steps (the paper averages over the steady steps, Sect. 6):
the makespan is a sum, so an occasional slow step is part of what the run costs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.errors import InputError
from advisor.insitu.model import Pipeline, SteadyState, makespan_s, period_s, steady_state
from advisor.insitu.steps import StepTable
from advisor.insitu.warmup import MIN_STEADY_STEPS, SteadyWindow, detect_steady

PAPER_STAGES = ("S", "W", "R", "A")

#: How σ'* is defined here; shown with the report.
SIGMA_PRIME_NOTE = (
    "makespan = m·σ̄* + σ'*: σ̄* is the steady period (max cycle mean of the step graph), "
    "σ'* = makespan - m·σ̄* is the pipeline's fill-and-drain time from the exact model "
    "(= min(S*+W*, R*+A*) for the paper's workflow with k = 1); warm-up steps are counted "
    "at steady cost, as in the paper (their observed excess is warmup_excess_s)."
)


@dataclass(frozen=True)
class MeasuredIdle:
    """Idle times recorded in the step file (all components had an idle column)."""

    sigma_bar_s: float
    idle_s: float
    efficiency: float

    def to_json(self) -> dict[str, float]:
        """The ``measured`` object of schemas/insitu-report.json."""
        return {
            "sigma_bar_s": self.sigma_bar_s,
            "idle_s": self.idle_s,
            "efficiency": self.efficiency,
        }


@dataclass(frozen=True)
class ComponentFigures:
    """One component in the steady state, per step."""

    name: str
    stages: tuple[str, ...]
    busy_s: float
    idle_s: float
    #: its idle column's steady mean, when the step file recorded one
    idle_measured_s: float | None
    utilisation: float

    def to_json(self) -> dict[str, Any]:
        """One entry of schemas/insitu-report.json's components."""
        return {
            "name": self.name,
            "stages": list(self.stages),
            "busy_s": self.busy_s,
            "idle_s": self.idle_s,
            "idle_measured_s": self.idle_measured_s,
            "utilisation": self.utilisation,
        }


@dataclass(frozen=True)
class InSituReport:
    """The analysis of one step file."""

    source: str
    pipeline: Pipeline
    steps_in_file: int
    window: SteadyWindow
    stages_s: Mapping[str, float]
    idle_measured_s: Mapping[str, float]
    steady: SteadyState
    makespan_steps: int
    makespan_s: float
    warmup_excess_s: float
    measured: MeasuredIdle | None
    balance_tolerance: float

    @property
    def sigma_prime_s(self) -> float:
        """σ'* = makespan - m σ̄* (the fill-and-drain part, see the model's docstring)."""
        return self.makespan_s - self.makespan_steps * self.steady.period_s

    @property
    def components(self) -> tuple[ComponentFigures, ...]:
        """Every component's busy and idle time per steady step, and its utilisation."""
        steady, period = self.steady, self.steady.period_s
        return tuple(
            ComponentFigures(
                name=c.name,
                stages=tuple(c.stages),
                busy_s=busy,
                idle_s=idle,
                idle_measured_s=self.idle_measured_s.get(c.name),
                utilisation=1.0 if period == 0 else min(1.0, busy / period),
            )
            for c, busy, idle in zip(
                self.pipeline.components, steady.busy_s, steady.idle_s, strict=True
            )
        )

    @property
    def paper_stages(self) -> bool:
        """True for the paper's workflow: the stages S, W, R, A."""
        return self.pipeline.stages == PAPER_STAGES

    @property
    def model(self) -> str:
        """'paper' for the paper's workflow with a one-frame buffer, else 'pipeline'."""
        return "paper" if self.paper_stages and self.pipeline.buffer_frames == (1,) else "pipeline"

    def to_json(self) -> dict[str, Any]:
        """The JSON form (schemas/insitu-report.json)."""
        steady = self.steady
        data: dict[str, Any] = {
            "source": self.source,
            "model": self.model,
            "buffer_frames": list(self.pipeline.buffer_frames),
            "components": [c.to_json() for c in self.components],
            "steps_in_file": self.steps_in_file,
            "steps_used": self.window.total_steps,
            "warmup_steps": self.window.warmup_steps,
            "wrapup_steps": self.window.wrapup_steps,
            "steady_steps": self.window.steady_steps,
            "stages_s": dict(self.stages_s),
        }
        if self.paper_stages:
            data.update({stage: self.stages_s[stage] for stage in PAPER_STAGES})
        data.update(
            {
                "sigma_bar_s": steady.period_s,
                "sigma_prime_s": self.sigma_prime_s,
                "sigma_s": steady.period_s + self.sigma_prime_s,
                "idle_s": steady.total_idle_s,
                "scenario": steady.scenario,
                "bottleneck": steady.bottleneck,
                "efficiency": steady.efficiency,
                "balance_tolerance": self.balance_tolerance,
                "makespan_steps": self.makespan_steps,
                "makespan_s": self.makespan_s,
                "warmup_excess_s": self.warmup_excess_s,
                "measured": None if self.measured is None else self.measured.to_json(),
            }
        )
        return data


def _measured(
    pipeline: Pipeline, busy: tuple[float, ...], idle: Mapping[str, float]
) -> MeasuredIdle | None:
    if len(idle) != len(pipeline.components):
        return None
    per_component = [idle[c.name] for c in pipeline.components]
    sigma_bar = float(np.mean([b + i for b, i in zip(busy, per_component, strict=True)]))
    total = sum(per_component)
    n = len(busy)
    efficiency = 1.0 if sigma_bar == 0 else 1.0 - total / ((n - 1) * sigma_bar)
    return MeasuredIdle(sigma_bar, total, efficiency)


def _warmup_excess_s(table: StepTable, window: SteadyWindow, period: float) -> float:
    """What the warm-up steps cost beyond steady steps: Σ max(0, σ̄_i - σ̄*), a first-order guess."""
    steps = table.step_dicts()[: window.warmup_steps]
    return sum(max(0.0, period_s(table.pipeline, step) - period) for step in steps)


def analyse_steps(
    table: StepTable,
    *,
    steps: int | None = None,
    first_steps: int | None = None,
    balance_tolerance: float = 0.05,
) -> InSituReport:
    """The report for a step table; ``steps`` (default: all steps in the file) is the m to predict.

    ``first_steps`` keeps only the first steps of the file, to predict a run from its beginning.
    """
    if steps is not None and steps < 0:
        raise InputError(f"--steps must be >= 0, got {steps}")
    if not 0 <= balance_tolerance < 1:
        raise InputError(f"--balance-tolerance must be in [0, 1), got {balance_tolerance}")
    if first_steps is not None and first_steps < 1:
        raise InputError(f"--first must be >= 1, got {first_steps}")
    used = table if first_steps is None else table.head(first_steps)
    window = detect_steady(used.stage_times())
    if window.steady_steps < MIN_STEADY_STEPS:
        raise InputError(
            f"only {window.steady_steps} steady steps among the {len(used)} steps used "
            f"({window.warmup_steps} warm-up, {window.wrapup_steps} wrap-up; steps "
            f"{used.first_step}..{used.first_step + len(used) - 1}); need at least "
            f"{MIN_STEADY_STEPS}",
            source=table.source,
            hint="record more steps, or check that the stage times settle",
        )
    means = {name: float(used.column(name)[window.steady].mean()) for name in used.columns}
    pipeline = used.pipeline
    stages = {stage: means[stage] for stage in pipeline.stages}
    idle = {c.name: means[c.idle] for c in pipeline.components if c.idle}
    state = steady_state(pipeline, stages, balance_tolerance=balance_tolerance)
    m = len(table) if steps is None else steps
    return InSituReport(
        source=table.source,
        pipeline=pipeline,
        steps_in_file=len(table),
        window=window,
        stages_s=stages,
        idle_measured_s=idle,
        steady=state,
        makespan_steps=m,
        makespan_s=makespan_s(pipeline, stages, m),
        warmup_excess_s=_warmup_excess_s(used, window, state.period_s),
        measured=_measured(pipeline, state.busy_s, idle),
        balance_tolerance=balance_tolerance,
    )


def insitu_time_limit_s(report: InSituReport, steps: int, margin: float) -> int:
    """A Slurm time limit in whole seconds for a run of ``steps`` steps of this workflow.

    The model's makespan for ``steps`` steps plus the warm-up excess seen in the step file, times
    ``1 + margin``, rounded up; at least one second.  Pure: for the sbatch wrapper.
    """
    if steps < 0:
        raise ValueError(f"negative number of steps {steps}")
    if not math.isfinite(margin) or margin < 0:
        raise ValueError(f"margin must be a finite number >= 0, got {margin}")
    expected = makespan_s(report.pipeline, report.stages_s, steps) + report.warmup_excess_s
    return max(1, math.ceil(expected * (1.0 + margin)))
