"""The in situ step model (Do et al., ICCS 2020, Sect. 4), generalised to k-frame buffers and chains.

The paper models two components with a one-frame buffer; its conclusion proposes buffering k
frames and more components.  The model here does both.  Components ``c = 0..n-1`` form a chain
(component 0 is the simulation, each other one analyses what the previous one wrote).  Each
component runs its stages in order, once per step, and step ``i+1`` of a component starts when
its step ``i`` is done.  Between components ``c`` and
``c+1`` sits a buffer of ``k_c`` frames.  The *write* stage is the last stage of ``c`` and the
*read* stage the first of ``c+1``; the paper's constraints become, for every step i:

* ``W_{c,i} -> R_{c+1,i}``: a frame is read after it was written (paper Eq. 1);
* ``R_{c+1,i} -> W_{c,i+k_c}``: a write needs a free slot, freed when the read of the frame that
  held it completes (paper Eq. 2 for ``k = 1``; the relaxation of Sect. 4.1 and 7 for ``k > 1``).

The paper's workflow is ``[simulation: S, W] -> [analysis: R, A]`` with ``k = 1``.

What the model computes, with constant (steady) stage times:

* ``σ̄*`` (``period_s``), the non-overlapped step: the steady-state period, i.e. the maximum
  cycle mean of the precedence graph.  For two components it is
  ``max(S+W, R+A, (W+R)/k)``: the paper's ``max(S*+W*, R*+A*)`` (Sect. 4.3) unless the
  write/read hand-over itself is the bottleneck (then both components idle: ``buffer_bound``).
* idle time per component ``σ̄* - busy_c`` and ``I* = Σ_c (σ̄* - busy_c)``; for two components
  and no buffer bottleneck this is the paper's ``|S*+W* - (R*+A*)|`` (Eq. 5).
* efficiency ``E = 1 - I* / ((n-1) σ̄*)``; for ``n = 2`` this is the paper's Eq. 7,
  ``1 - I*/σ̄*``.  For more components, when one of them is the bottleneck, it is the mean
  utilisation of the others.  It lies in [0, 1]: a simple cycle holds each stage at most once,
  so ``max_c busy_c <= σ̄* <= Σ_c busy_c``.
* the makespan of m steps, exactly: the longest path through the m unrolled steps, computed as
  ``T^m ⊗ 0`` in max-plus algebra (T = one step's transition, see ``_transition``), so m may be
  10^7.  The paper writes it ``m σ̄* + σ'*`` (Eq. 6); here ``σ'*`` is *defined* as
  ``makespan(m) - m σ̄*``: the fill-and-drain time of the pipeline, the part of one in situ step
  that overlaps its neighbours.  For the paper's workflow (k = 1, ``W+R <= σ̄*``) it is exactly
  ``σ'* = min(S*+W*, R*+A*)``, so the in situ step is ``σ* = σ̄* + σ'* = S*+W*+R*+A*``.
  With k > 1 it may depend (boundedly) on m.

Idle stages are not inputs of the model: they follow from the constraints (paper Eq. 4).
Measured idle times, when a step file has them, are reported beside the model's for comparison.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from advisor.insitu.maxplus import NO_EDGE, Matrix, max_cycle_mean, mp_power_apply

#: Above this many state entries (components plus buffered frames) matrix powers get slow.
MAX_STATE_SIZE = 400
#: The largest buffer accepted from users (schemas/insitu-steps.json says the same).
MAX_BUFFER_FRAMES = 256


@dataclass(frozen=True)
class Component:
    """One component of the pipeline: its stages in execution order, and its idle column if any."""

    name: str
    stages: tuple[str, ...]
    idle: str | None = None

    def __post_init__(self) -> None:
        if not self.stages:
            raise ValueError(f"component {self.name!r} has no stage")


@dataclass(frozen=True)
class Pipeline:
    """Components in data-flow order and the capacity in frames of each buffer between two."""

    components: tuple[Component, ...]
    buffer_frames: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.components) < 2:
            raise ValueError("an in situ pipeline has at least two components")
        if len(self.buffer_frames) != len(self.components) - 1:
            raise ValueError(
                f"{len(self.components)} components need {len(self.components) - 1} buffer sizes, "
                f"got {len(self.buffer_frames)}"
            )
        if any(k < 1 for k in self.buffer_frames):
            raise ValueError(f"buffer sizes must be at least 1 frame, got {self.buffer_frames}")
        names = [*self.stages, *(c.idle for c in self.components if c.idle)]
        if len(set(names)) != len(names):
            raise ValueError(f"stage and idle names must be unique, got {names}")
        if len({c.name for c in self.components}) != len(self.components):
            raise ValueError("component names must be unique")
        if len(self.components) + sum(self.buffer_frames) > MAX_STATE_SIZE:
            raise ValueError(f"components plus buffered frames exceed {MAX_STATE_SIZE}")

    @property
    def stages(self) -> tuple[str, ...]:
        """Every stage name, component by component."""
        return tuple(stage for component in self.components for stage in component.stages)


def paper_pipeline(buffer_frames: int = 1) -> Pipeline:
    """The paper's workflow: simulation (S, then W) feeding an analysis (R, then A)."""
    return Pipeline(
        components=(
            Component("simulation", ("S", "W"), idle="IS"),
            Component("analysis", ("R", "A"), idle="IA"),
        ),
        buffer_frames=(buffer_frames,),
    )


def _busy(pipeline: Pipeline, times_s: Mapping[str, float]) -> list[float]:
    return [sum(times_s[stage] for stage in c.stages) for c in pipeline.components]


def _state_layout(pipeline: Pipeline) -> tuple[list[int], list[list[int]]]:
    """State indices: the last stage of each component, then the k last reads behind each buffer.

    Only these completions of step i are needed by step i+1: a component's next step waits for its
    own last stage, and a write waits for the read of the frame k steps back.
    """
    n = len(pipeline.components)
    last = list(range(n))
    reads: list[list[int]] = []
    nxt = n
    for k in pipeline.buffer_frames:
        reads.append(list(range(nxt, nxt + k)))
        nxt += k
    return last, reads


def _transition(pipeline: Pipeline, times_s: Mapping[str, float]) -> Matrix:
    """T such that the state after step i is ``T ⊗ state(i-1)``; state(-1) = 0 starts the run."""
    last, reads = _state_layout(pipeline)
    size = len(last) + sum(len(r) for r in reads)
    # forms[stage] is a max-plus row: completion of that stage in step i as a function of state(i-1)
    forms: dict[str, Matrix] = {}
    comps = pipeline.components
    for c, component in enumerate(comps):
        for j, stage in enumerate(component.stages):
            deps = np.full(size, NO_EDGE)
            if j == 0:
                deps[last[c]] = 0.0  # the component finished its previous step
                if c > 0:  # the frame was written upstream (Eq. 1)
                    deps = np.maximum(deps, forms[comps[c - 1].stages[-1]])
            else:
                deps = np.maximum(deps, forms[component.stages[j - 1]])
            if j == len(component.stages) - 1 and c < len(comps) - 1:
                deps[reads[c][-1]] = max(deps[reads[c][-1]], 0.0)  # a slot is free (Eq. 2)
            forms[stage] = deps + times_s[stage]
    matrix = np.full((size, size), NO_EDGE)
    for c, component in enumerate(comps):
        matrix[last[c]] = forms[component.stages[-1]]
    for c, lagged in enumerate(reads):
        matrix[lagged[0]] = forms[comps[c + 1].stages[0]]
        for lag in range(1, len(lagged)):
            matrix[lagged[lag], lagged[lag - 1]] = 0.0  # shift the history by one step
    return matrix


def _check_times(pipeline: Pipeline, times_s: Mapping[str, float]) -> None:
    for stage in pipeline.stages:
        value = times_s.get(stage)
        if value is None or not np.isfinite(value) or value < 0:
            raise ValueError(f"stage {stage!r} needs a finite time >= 0, got {value!r}")


def period_s(pipeline: Pipeline, times_s: Mapping[str, float]) -> float:
    """σ̄*: the steady-state time per step (the maximum cycle mean of the step graph)."""
    _check_times(pipeline, times_s)
    return max_cycle_mean(_transition(pipeline, times_s))


def makespan_s(pipeline: Pipeline, times_s: Mapping[str, float], steps: int) -> float:
    """Exact time from the start of S_0 to the end of the last stage of step ``steps - 1``."""
    _check_times(pipeline, times_s)
    if steps < 0:
        raise ValueError(f"negative number of steps {steps}")
    matrix = _transition(pipeline, times_s)
    state = mp_power_apply(matrix, np.zeros(matrix.shape[0]), steps)
    return float(np.max(state[: len(pipeline.components)]))


def replay_makespan_s(pipeline: Pipeline, steps: Sequence[Mapping[str, float]]) -> float:
    """The makespan of a run whose every step has its own stage times (the same constraints).

    A direct longest-path recurrence over the unrolled steps: what a measured run should take if
    the model's constraints are the only reason to wait.
    """
    comps = pipeline.components
    done_last = [0.0] * len(comps)  # last stage of each component, previous step
    read_done: list[list[float]] = [[] for _ in pipeline.buffer_frames]  # reads, oldest first
    for times in steps:
        _check_times(pipeline, times)
        finished: dict[str, float] = {}
        for c, component in enumerate(comps):
            ready = done_last[c]
            for j, stage in enumerate(component.stages):
                if j == 0 and c > 0:
                    ready = max(ready, finished[comps[c - 1].stages[-1]])
                if j == len(component.stages) - 1 and c < len(comps) - 1:
                    k = pipeline.buffer_frames[c]
                    if len(read_done[c]) >= k:
                        ready = max(ready, read_done[c][-k])
                ready += times[stage]
                finished[stage] = ready
            done_last[c] = ready
        for c in range(len(comps) - 1):
            read_done[c].append(finished[comps[c + 1].stages[0]])
    return max(done_last)


@dataclass(frozen=True)
class SteadyState:
    """What the model says about a pipeline with constant stage times."""

    period_s: float
    busy_s: tuple[float, ...]
    idle_s: tuple[float, ...]
    total_idle_s: float
    efficiency: float
    scenario: str
    bottleneck: str


#: The scenario names of the report (paper Sect. 4.1 and Fig. 2, plus the buffer bottleneck).
SCENARIOS = ("idle_simulation", "idle_analyzer", "balanced", "buffer_bound")


def steady_state(
    pipeline: Pipeline, times_s: Mapping[str, float], *, balance_tolerance: float = 0.05
) -> SteadyState:
    """Period, idle times, efficiency and scenario of the steady state.

    Scenarios: ``buffer_bound`` when the period exceeds every component's busy time by more than
    ``balance_tolerance`` (W and R serialise through a too small buffer); ``balanced`` when the
    total idle is at most ``balance_tolerance`` of ``(n-1) σ̄*`` (E >= 1 - tolerance);
    otherwise ``idle_analyzer`` when the simulation (component 0) is the busiest component, so the
    analysis waits for data, and ``idle_simulation`` when a downstream component is, so the
    simulation waits for a free buffer slot.  (Paper Eq. 5: Idle Simulation is I^A = 0, i.e.
    R+A > S+W; the inequalities printed in its Sect. 4.1 are swapped with respect to Eq. 5, the
    prose and Sect. 6, which all agree.)
    """
    period = period_s(pipeline, times_s)
    busy = _busy(pipeline, times_s)
    n = len(busy)
    # Rounding leaves the bottleneck a few 1e-18 s of "idle"; that is zero.
    idle = [gap if gap > 1e-12 * period else 0.0 for gap in (period - b for b in busy)]
    total_idle = sum(idle)
    efficiency = 1.0 if period == 0 else 1.0 - total_idle / ((n - 1) * period)
    busiest = max(range(n), key=lambda c: busy[c])
    if period > busy[busiest] * (1 + balance_tolerance):
        scenario, bottleneck = "buffer_bound", "buffer"
    else:
        bottleneck = pipeline.components[busiest].name
        if efficiency >= 1 - balance_tolerance:
            scenario = "balanced"
        elif busiest == 0:
            scenario = "idle_analyzer"
        else:
            scenario = "idle_simulation"
    return SteadyState(
        period_s=period,
        busy_s=tuple(busy),
        idle_s=tuple(idle),
        total_idle_s=total_idle,
        efficiency=max(0.0, min(1.0, efficiency)),
        scenario=scenario,
        bottleneck=bottleneck,
    )
