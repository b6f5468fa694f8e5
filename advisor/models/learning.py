"""``advisor learn``: (re)fit every task's models from the observations in the cache.

Per task: the reference node class is the one with the most runs (a reduced-clock twin only if
nothing else ran the task); Lotaru's model is fitted there, the CPU weight comes from the twin's
paired runs, the paper's baselines are fitted on the same runs, and every other class that ran
the task gets an online model: the transferred prior updated with that class's runs.
Censored runs (killed at their limit) are lower bounds, not runtimes, and are left out.

Only runs the administrator imported (no user, not from accounting) shape these shared
models.  Runs of a user's jobs (ingested from accounting) become that user's own statistics per
task and class (``UserRuns``), which refine that user's predictions alone: a user cannot move
another user's limits by running jobs of the same name.  A job from accounting without a user
is kept for the reports and learned by no model.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from advisor.models.baselines import METHODS as BASELINES
from advisor.models.baselines import fit_baseline
from advisor.models.class_model import UserRuns
from advisor.models.context import NodeContext, load_node_context
from advisor.models.lotaru import fit_task
from advisor.models.node_factor import class_factor
from advisor.models.predict import transferred_model
from advisor.models.transfer import TAU
from advisor.store.connection import Store
from advisor.store.observations import Observation, load_observations
from advisor.store.task_models import TaskModelRow, UserModelRow, replace_task_models


@dataclass(frozen=True)
class TaskSummary:
    """What was learned for one task."""

    task: str
    reference: str
    kind: str
    pearson_r: float | None
    cpu_weight: float
    cpu_weight_source: str
    n_train: int
    classes: tuple[str, ...]


def _class_of(obs: Observation, context: NodeContext) -> str:
    if obs.node_class:
        return obs.node_class
    return context.class_of(obs.node) if obs.node else "unknown"


def choose_reference(
    counts: dict[str, int], twins: Iterable[str], preferred: str | None = None
) -> str:
    """The preferred class if it ran the task, else the one with most runs (twins last)."""
    if preferred is not None and preferred in counts:
        return preferred
    twin_set = set(twins)
    return min(counts, key=lambda c: (c in twin_set, -counts[c], c))


def learn_task(
    task: str,
    by_class: dict[str, list[Observation]],
    context: NodeContext,
    *,
    preferred_reference: str | None = None,
    seed: int = 0,
    tau: float = TAU,
) -> tuple[list[TaskModelRow], TaskSummary]:
    """The rows for one task from its runs grouped by node class."""
    ref = choose_reference(
        {c: len(r) for c, r in by_class.items()}, context.twins, preferred_reference
    )
    runs = by_class[ref]
    twins = [
        (name, by_class[name], twin.clock_ratio)
        for name, twin in sorted(context.twins.items())
        if twin.reference == ref and name in by_class
    ]
    model = fit_task(runs, twins, reference=ref)
    rows = [TaskModelRow(task, "*", "lotaru", model.to_params(), model.n_train)]
    sized = [
        (float(o.input_bytes), o.runtime_s)
        for o in runs
        if o.input_bytes is not None and o.input_bytes > 0
    ]
    if sized:
        xs, ys = [x for x, _ in sized], [y for _, y in sized]
        for method in BASELINES:
            baseline = fit_baseline(method, xs, ys, task=task, seed=seed)
            rows.append(TaskModelRow(task, "*", method, baseline.to_params(), len(xs)))
    classes = []
    for node_class, observed in sorted(by_class.items()):
        if node_class == ref:
            continue
        factor = class_factor(ref, node_class, context.scores, model.cpu_weight)
        prior = transferred_model(model, node_class, factor, tau=tau)
        used = [
            (float(o.input_bytes), o.runtime_s, o.cores)
            for o in observed
            if o.input_bytes is not None
        ]
        online = prior.with_runs(used)
        rows.append(TaskModelRow(task, node_class, "online", online.to_params(), len(used)))
        classes.append(node_class)
    summary = TaskSummary(
        task,
        ref,
        model.kind,
        model.pearson_r,
        model.cpu_weight,
        model.cpu_weight_source,
        model.n_train,
        tuple(classes),
    )
    return rows, summary


def learn_models(
    observations: Iterable[Observation],
    context: NodeContext,
    *,
    reference: str | None = None,
    seed: int = 0,
    tau: float = TAU,
) -> tuple[list[TaskModelRow], list[TaskSummary]]:
    """All shared rows and summaries from the runs without a user (pure: no cache involved)."""
    grouped: dict[str, dict[str, list[Observation]]] = {}
    for obs in observations:
        if obs.censored or obs.runtime_s < 0 or obs.user or obs.from_accounting:
            continue
        grouped.setdefault(obs.task, {}).setdefault(_class_of(obs, context), []).append(obs)
    rows: list[TaskModelRow] = []
    summaries = []
    for task in sorted(grouped):
        task_rows, summary = learn_task(
            task, grouped[task], context, preferred_reference=reference, seed=seed, tau=tau
        )
        rows.extend(task_rows)
        summaries.append(summary)
    return rows, summaries


def learn_user_runs(
    observations: Iterable[Observation], context: NodeContext, assumed_bytes: dict[str, float]
) -> list[UserModelRow]:
    """Each user's own statistics per task and class, for the tasks with a shared model.

    assumed_bytes: per modelled task, the input size of a run that recorded none (the largest
    training input, as accounting assumes when it learns the run online).
    """
    runs: dict[tuple[str, str, str], list[tuple[float, float, int | None]]] = {}
    for obs in observations:
        if not obs.user or obs.task not in assumed_bytes or obs.censored or obs.runtime_s < 0:
            continue
        size = float(obs.input_bytes) if obs.input_bytes is not None else assumed_bytes[obs.task]
        key = (obs.user, obs.task, _class_of(obs, context))
        runs.setdefault(key, []).append((size, obs.runtime_s, obs.cores))
    rows = []
    for (user, task, node_class), used in sorted(runs.items()):
        mine = UserRuns.empty("size").with_runs(used)  # the features of every class model
        rows.append(UserModelRow(user, task, node_class, mine.to_params(), mine.stats.n))
    return rows


def learn(store: Store, *, reference: str | None = None, seed: int = 0) -> dict[str, Any]:
    """Refit everything and replace the stored models; a summary (schemas/learn-output.json)."""
    observations = load_observations(store)
    context = load_node_context(store)
    rows, summaries = learn_models(observations, context, reference=reference, seed=seed)
    assumed = {
        row.task: float(row.params["x_max_bytes"]) for row in rows if row.method == "lotaru"
    }
    user_rows = learn_user_runs(observations, context, assumed)
    stored = replace_task_models(store, rows, user_rows)
    return {
        "observations": len(observations),
        "tasks": len(summaries),
        "models": stored,
        "user_models": len(user_rows),
        "users": len({row.user for row in user_rows}),
        "task_models": [
            {
                "task": s.task,
                "reference": s.reference,
                "kind": s.kind,
                "pearson_r": s.pearson_r,
                "cpu_weight": s.cpu_weight,
                "cpu_weight_source": s.cpu_weight_source,
                "n_train": s.n_train,
                "classes": list(s.classes),
            }
            for s in summaries
        ],
    }
