"""The memory model on the Lotaru protocol: small runs of the reference, every full-size test run.

advisor.models.evaluation has the runtime side.

Per workflow and training label ``train-e``: each task's model is fitted on the reference
machine's train-e runs (their peak_rss against their uncompressed input); every machine's
``test`` runs of the task (the reduced-clock twin excepted, as for runtimes) are predicted at
their input size.  A test run is covered when its peak is at most the advised P95; the advised
P95 is also set against what the pipeline requested for the task (``memory``), the share of
the request it would have asked for.

Variants, side by side on the same test runs (``VARIANTS``):

* ``advisor``: the model of advisor.models.memory with its margins as the advisor keeps them
  (``key_margins``): each task's own prefix residuals drawn toward the pool of every task of
  every workflow of the same label, by their number;
* ``advisor, pool from the other workflows``: the same, the pool of each workflow taken from
  the other workflows' tasks only (what a site with workflows of its own would have measured:
  the cross-validated figure);
* ``advisor, pooled margin alone`` and ``..., from the other workflows``: every task the
  pool's margin, without its own residuals (what the advisor did before ``key_margins``);
* ``advisor, no margin``: the Student-t interval alone;
* ``advisor, margin per task``: each task's margin from its own prefix residuals alone;
* ``plain distribution + margin``: the slope fixed at 0 (the task's log peaks, input ignored),
  with the pooled margin;
* ``largest training peak`` (what a workflow manager's "maximum of the previous runs" does),
  and the same ``+ margin`` measured on its own prefix residuals.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from advisor.imports.lotaru import LotaruRun
from advisor.models.memory import (
    SIZED,
    Margins,
    MemRun,
    Residual,
    distance_margins,
    fit_memory,
    margin_at,
    prefix_residuals,
    shrunk_margins,
)

if TYPE_CHECKING:
    from advisor.models.memory import Predicts

ADVISOR = "advisor"
ADVISOR_CV = "advisor, pool from the other workflows"
POOLED = "advisor, pooled margin alone"
POOLED_CV = "advisor, pooled margin alone, from the other workflows"
NO_MARGIN = "advisor, no margin"
PLAIN = "plain distribution + margin"
LARGEST = "largest training peak"
LARGEST_MARGIN = "largest training peak + margin"
PER_TASK = "advisor, margin per task"


class _Largest(NamedTuple):
    """The largest peak of the runs seen, whatever the input: P50 and P95 alike."""

    log_mb: float

    def log_quantiles(self, input_bytes: float | None) -> tuple[float, float]:
        return self.log_mb, self.log_mb


def _largest(runs: Sequence[MemRun]) -> Predicts | None:
    return _Largest(math.log(max(run.value_mb for run in runs))) if runs else None


def _plain(runs: Sequence[MemRun]) -> Predicts | None:
    return fit_memory([run._replace(input_bytes=None) for run in runs])


class Variant(NamedTuple):
    """A way to advise: the model, and where its margin comes from.

    margin: 'key' (the task's own residuals drawn toward every task's: key_margins), 'key from
    others' (the same with the other workflows' tasks), 'all' (every task's residuals),
    'others' (the other workflows' tasks), 'task' (the task's own), None (no margin).
    """

    name: str
    fit: Callable[[Sequence[MemRun]], Predicts | None]
    margin: str | None


VARIANTS = (
    Variant(ADVISOR, fit_memory, "key"),
    Variant(ADVISOR_CV, fit_memory, "key from others"),
    Variant(POOLED, fit_memory, "all"),
    Variant(POOLED_CV, fit_memory, "others"),
    Variant(NO_MARGIN, fit_memory, None),
    Variant(PER_TASK, fit_memory, "task"),
    Variant(PLAIN, _plain, "all"),
    Variant(LARGEST, _largest, None),
    Variant(LARGEST_MARGIN, _largest, "all"),
)


@dataclass(frozen=True)
class MemoryScored:
    """One test run predicted by one variant."""

    workflow: str
    label: str
    task: str
    target: str
    method: str
    p95_mb: float
    peak_mb: float
    requested_mb: float | None

    @property
    def covered(self) -> bool:
        """The run's peak within the advised P95."""
        return self.peak_mb <= self.p95_mb


@dataclass(frozen=True)
class MemorySummary:
    """A variant's figures over a set of test runs."""

    runs: int
    coverage: float
    #: Median of P95 / the pipeline's request (None: no request recorded).
    request_share: float | None
    #: Median of P95 / the run's peak (how much it reserves over what the run used).
    overshoot: float

    def to_json(self) -> dict[str, Any]:
        """As in schemas/evaluate-output.json's memory rows."""
        return {"runs": self.runs, "coverage": self.coverage,
                "request_share": self.request_share, "overshoot": self.overshoot}  # fmt: skip


def summarise(rows: Sequence[MemoryScored]) -> MemorySummary:
    """Coverage and the medians of a set of scored runs (at least one)."""
    shares = [r.p95_mb / r.requested_mb for r in rows if r.requested_mb]
    return MemorySummary(
        len(rows),
        sum(r.covered for r in rows) / len(rows),
        statistics.median(shares) if shares else None,
        statistics.median(r.p95_mb / r.peak_mb for r in rows),
    )


def _mem_runs(runs: Sequence[LotaruRun]) -> list[MemRun]:
    return [
        MemRun(r.observation.peak_mem_mb, r.observation.input_bytes)
        for r in runs
        if r.observation.peak_mem_mb
    ]


def _grouped(runs: Sequence[LotaruRun], label: str) -> dict[str, list[LotaruRun]]:
    out: dict[str, list[LotaruRun]] = {}
    for run in runs:
        if run.observation.label == label and run.observation.peak_mem_mb:
            out.setdefault(run.observation.task, []).append(run)
    return out


def score_memory(
    runs: Mapping[tuple[str, str], Sequence[LotaruRun]],
    *,
    reference: str,
    twin: str | None,
    shared_inputs: bool = True,
    variants: Sequence[Variant] = VARIANTS,
) -> list[MemoryScored]:
    """Every test run with a measured peak, predicted by every variant (module docstring)."""
    workflows = sorted({w for _, w in runs})
    labels = sorted(
        {r.observation.label or "" for (m, _), rs in runs.items() if m == reference for r in rs}
    )
    out: list[MemoryScored] = []
    for label in (lab for lab in labels if lab.startswith("train")):
        training = {
            (w, task): _mem_runs(task_runs)
            for w in workflows
            for task, task_runs in _grouped(runs.get((reference, w), []), label).items()
        }
        for variant in variants:
            pooled = {key: prefix_residuals(train, variant.fit) for key, train in training.items()}
            for (workflow, task), train in sorted(training.items()):
                model = variant.fit(train)
                if model is None:
                    continue
                margins = _margins(variant.margin, pooled, workflow, task)
                sized = pooled[(workflow, task)][0] == SIZED
                largest = max(math.log(max(run.input_bytes or 1, 1)) for run in train)
                for target, test in _tests(runs, workflow, task, reference, twin, shared_inputs):
                    size = test.observation.input_bytes
                    reach = max(0.0, math.log(max(size or 1, 1)) - largest) if sized else 0.0
                    margin = margin_at(margins, reach)
                    p95 = math.exp(model.log_quantiles(size)[1] + margin)
                    out.append(
                        MemoryScored(
                            workflow=workflow,
                            label=label,
                            task=task,
                            target=target,
                            method=variant.name,
                            p95_mb=p95,
                            peak_mb=float(test.observation.peak_mem_mb or 0.0),
                            requested_mb=test.requested_mem_mb,
                        )
                    )
    return out


def _margins(
    mode: str | None,
    pooled: Mapping[tuple[str, str], tuple[str, Sequence[Residual]]],
    workflow: str,
    task: str,
) -> Margins:
    """The margins of one task of one workflow (Variant.margin says from which residuals).

    As ``advisor learn`` keeps them: the residuals of the task's own pool (sized or not).
    """
    if mode is None:
        return ()
    pool, own = pooled[(workflow, task)]
    same = {key: rs for key, (p, rs) in pooled.items() if p == pool}
    if mode == "task":
        return distance_margins(own)
    if mode in ("others", "key from others"):
        whole = distance_margins(r for (w, _), rs in same.items() if w != workflow for r in rs)
    else:
        whole = distance_margins(r for rs in same.values() for r in rs)
    return whole if mode in ("all", "others") else shrunk_margins(own, whole)


def _tests(
    runs: Mapping[tuple[str, str], Sequence[LotaruRun]],
    workflow: str,
    task: str,
    reference: str,
    twin: str | None,
    shared_inputs: bool,
) -> list[tuple[str, LotaruRun]]:
    shared = {
        r.workflow_input_bytes for r in runs.get((reference, workflow), [])
        if r.observation.label == "test"
    }  # fmt: skip
    return [
        (machine, run)
        for (machine, w), machine_runs in sorted(runs.items())
        if w == workflow and machine != twin
        for run in machine_runs
        if run.observation.label == "test" and run.observation.task == task
        and run.observation.peak_mem_mb and run.observation.input_bytes is not None
        and (not shared_inputs or run.workflow_input_bytes in shared)
    ]  # fmt: skip


@dataclass(frozen=True)
class MemoryRow:
    """One variant's summary over one scope: a target machine, a workflow, or all ('pooled')."""

    scope: str
    method: str
    summary: MemorySummary

    def to_json(self) -> dict[str, Any]:
        """One row of schemas/evaluate-output.json's memory."""
        return {"scope": self.scope, "method": self.method, **self.summary.to_json()}


def memory_rows(scored: Sequence[MemoryScored]) -> list[MemoryRow]:
    """Per variant: pooled, per workflow, per target machine (in VARIANTS order)."""
    order = {variant.name: index for index, variant in enumerate(VARIANTS)}
    groups: dict[tuple[str, str], list[MemoryScored]] = {}
    for row in scored:
        for scope in ("pooled", f"workflow {row.workflow}", row.target):
            groups.setdefault((row.method, scope), []).append(row)
    return [
        MemoryRow(scope, method, summarise(rows))
        for (method, scope), rows in sorted(
            groups.items(),
            key=lambda item: (
                order.get(item[0][0], len(order)),
                item[0][1] != "pooled",
                not item[0][1].startswith("workflow"),
                item[0][1],
            ),
        )
    ]
