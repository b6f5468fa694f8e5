"""``advisor learn``: (re)fit every task's models from the observations in the cache.

Per task: the reference node class is the one with the most runs (a reduced-clock twin only if
nothing else ran the task); the advisor's evidence (advisor.models.evidence) and Lotaru exactly
as published ('paper') are learnt there, the CPU weight comes from the twin's paired runs, the
paper's baselines are fitted on the same runs.  Then what the site's runs say across tasks:
its typical spread, and per class the node factor learnt from every task's runs there
(advisor.models.pooling, stored in class_effects).  Then every other run is replayed in the
order it was stored, as accounting learnt it online (advisor.models.updates): an exact run
joins its class's record (shared, or its user's own); a run killed at its limit (censored, a
lower bound) goes through the same rule as online accounting (advisor.models.censoring) on the
model its user sees at that point.  Last, the site's conformal multipliers from every record's
out-of-sample errors (advisor.models.conformal, stored in site_model).

Only runs the administrator imported (no user, not from accounting) shape the shared models.
Runs of a user's jobs (ingested from accounting) become that user's own records per task and
class, which refine that user's predictions alone: a user cannot move another user's limits by
running jobs of the same name.  A job from accounting without a user is kept for the reports and
learned by no model.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

from advisor.models.baselines import METHODS as BASELINES
from advisor.models.baselines import fit_baseline
from advisor.models.conformal import Site, site_from
from advisor.models.fitting import fit_models, positive
from advisor.models.loading import NodeContext, load_node_context
from advisor.models.memory_book import learn_memory
from advisor.models.pooling import ClassEffect, Offsets, class_effect
from advisor.models.predict import PAPER, TaskModels, factor_to
from advisor.models.task_model import ClassRecord, Reference
from advisor.models.updates import learn_censored, learn_run
from advisor.store.connection import Store
from advisor.store.memory_models import replace_memory
from advisor.store.observations import Observation, load_observations
from advisor.store.site_models import ClassEffectRow, write_site_models
from advisor.store.task_models import TaskModelRow, UserModelRow, replace_task_models

Run = tuple[float, float, int | None]


@dataclass(frozen=True)
class TaskSummary:
    """What was learned for one task."""

    task: str
    reference: str
    #: the explanation its predictions lean on (median, line, power)
    kind: str
    pearson_r: float | None
    cpu_weight: float
    cpu_weight_source: str
    n_train: int
    classes: tuple[str, ...]


@dataclass(frozen=True)
class CensoredSummary:
    """What the runs killed at their limit taught."""

    runs: int
    used: int


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
) -> tuple[list[TaskModelRow], Reference]:
    """The machine-independent rows of one task ('*': Lotaru's and the baselines) and its evidence.

    The evidence's row is written after the replay (runs on the reference class join it).
    """
    ref = choose_reference(
        {c: len(r) for c, r in by_class.items()}, context.twins, preferred_reference
    )
    runs = by_class[ref]
    twins = [
        (name, by_class[name], twin.clock_ratio)
        for name, twin in sorted(context.twins.items())
        if twin.reference == ref and name in by_class
    ]
    model, paper = fit_models(runs, twins, reference=ref)
    rows = [
        TaskModelRow(
            task=task,
            node_class="*",
            method=PAPER,
            params=paper.to_params(PAPER),
            n_obs=paper.n_train,
        )
    ]
    sized = [
        (float(o.input_bytes), o.runtime_s)
        for o in runs
        if o.input_bytes is not None and o.input_bytes > 0
    ]
    if sized:
        xs, ys = [x for x, _ in sized], [y for _, y in sized]
        for method in BASELINES:
            baseline = fit_baseline(method, xs, ys, task=task, seed=seed)
            rows.append(
                TaskModelRow(
                    task=task,
                    node_class="*",
                    method=method,
                    params=baseline.to_params(),
                    n_obs=len(xs),
                )
            )
    return rows, model


def _shared(obs: Observation) -> bool:
    return not obs.user and not obs.from_accounting


def _size(obs: Observation) -> float | None:
    return None if obs.input_bytes is None else float(obs.input_bytes)


def class_effects(
    references: dict[str, Reference],
    runs: Sequence[tuple[Observation, str]],
    context: NodeContext,
    site: Site,
) -> dict[tuple[str, str], ClassEffect]:
    """Per (reference class, class): the effect pooled from the shared runs of every task there."""
    offsets: dict[tuple[str, str], dict[str, Offsets]] = {}
    scored: dict[tuple[str, str], bool] = {}
    for obs, node_class in runs:
        reference = references[obs.task]
        base = reference.forecast(_size(obs), site)
        if base is None:
            continue
        factor = factor_to(reference, node_class, context.scores)
        key = (reference.reference, node_class)
        scored[key] = factor is not None
        d = math.log(positive(obs.runtime_s)) - base.loc - math.log(factor or 1.0)
        tasks = offsets.setdefault(key, {})
        tasks[obs.task] = tasks.get(obs.task, Offsets()).add(d)
    return {
        key: class_effect(
            [(found, references[task].noise2(site)) for task, found in tasks.items()],
            scored=scored[key],
        )
        for key, tasks in sorted(offsets.items())
    }


class _Replay:
    """Every task's models as the runs are replayed in stored order (advisor.models.updates)."""

    def __init__(self, models: dict[str, TaskModels], context: NodeContext) -> None:
        self.models, self.context = models, context
        self.users: dict[tuple[str, str], dict[str, ClassRecord]] = {}
        self.censored = self.used = 0

    def replay(self, obs: Observation, node_class: str, size: float | None) -> None:
        shared = self.models[obs.task]
        reference = shared.reference
        if reference is None:  # pragma: no cover - every replayed task has one
            return
        factor = factor_to(reference, node_class, self.context.scores)
        user = bool(obs.user)
        models = shared
        if user:
            models = shared._replace(user_runs=self.users.get((str(obs.user), obs.task), {}))
        if obs.censored:
            self.censored += 1
            found = learn_censored(
                models, node_class, size, obs.runtime_s, factor=factor, user=user
            )
            if found is None:
                return
            self.used += 1
            learnt = found[0]
        else:
            learnt = learn_run(
                models, node_class, size, positive(obs.runtime_s), factor=factor, user=user
            )
        if user:
            self.users[(str(obs.user), obs.task)] = dict(learnt.models.user_runs)
        else:
            self.models[obs.task] = learnt.models


def learn_models(
    observations: Sequence[Observation],
    context: NodeContext,
    *,
    reference: str | None = None,
    seed: int = 0,
) -> Learnt:
    """Every row and summary from the observations, in their order (pure: no cache involved)."""
    grouped: dict[str, dict[str, list[Observation]]] = {}
    for obs in observations:
        if _shared(obs) and not obs.censored and obs.runtime_s >= 0:
            grouped.setdefault(obs.task, {}).setdefault(_class_of(obs, context), []).append(obs)
    rows: list[TaskModelRow] = []
    references: dict[str, Reference] = {}
    for task in sorted(grouped):
        task_rows, model = learn_task(
            task, grouped[task], context, preferred_reference=reference, seed=seed
        )
        rows.extend(task_rows)
        references[task] = model
    site = site_from((r.evidence.spread() or 0.0 for r in references.values()), (), ())
    replayed: list[tuple[Observation, str]] = []
    for obs in observations:
        found = references.get(obs.task)
        if found is None or obs.runtime_s < 0 or (obs.from_accounting and not obs.user):
            continue  # a job from accounting without a user teaches no model
        node_class = _class_of(obs, context)
        if _shared(obs) and not obs.censored and node_class == found.reference:
            continue  # in the reference fit
        replayed.append((obs, node_class))
    effects = class_effects(
        references,
        [(o, c) for o, c in replayed if _shared(o) and not o.censored],
        context,
        site,
    )
    replay = _Replay(
        {
            task: TaskModels(task, model, site=site, effects=effects)
            for task, model in references.items()
        },
        context,
    )
    for obs, node_class in replayed:
        # a user's job without a recorded size ran at the size its limit assumed (accounting)
        size = _size(obs)
        if size is None and obs.user:
            size = references[obs.task].x_max_bytes or None
        replay.replay(obs, node_class, size)
    site = _site(replay, site)
    for task, models in sorted(replay.models.items()):
        learnt = models.reference
        if learnt is None:  # pragma: no cover
            continue
        rows.append(
            TaskModelRow(
                task=task,
                node_class="*",
                method="lotaru",
                params=learnt.to_params(),
                n_obs=learnt.n_train,
            )
        )
        for node_class, record in sorted(models.classes.items()):
            rows.append(
                TaskModelRow(
                    task=task,
                    node_class=node_class,
                    method="online",
                    params=record.to_params(),
                    n_obs=record.n,
                )
            )
    user_rows = [
        UserModelRow(
            user=user,
            task=task,
            node_class=node_class,
            params=record.to_params("user"),
            n_obs=record.n,
        )
        for (user, task), records in sorted(replay.users.items())
        for node_class, record in sorted(records.items())
    ]
    summaries = [
        TaskSummary(
            task=task,
            reference=models.reference.reference,
            kind=models.reference.kind,
            pearson_r=models.reference.pearson_r,
            cpu_weight=models.reference.cpu_weight,
            cpu_weight_source=models.reference.cpu_weight_source,
            n_train=models.reference.n_train,
            classes=tuple(sorted(models.classes)),
        )
        for task, models in sorted(replay.models.items())
        if models.reference is not None
    ]
    effect_rows = [
        ClassEffectRow(
            reference=ref,
            node_class=node_class,
            params=effect.to_json(),
            tasks=effect.tasks,
            runs=effect.runs,
        )
        for (ref, node_class), effect in sorted(effects.items())
    ]
    return Learnt(
        rows=rows, user_rows=user_rows, summaries=summaries, censored=CensoredSummary(replay.censored, replay.used), site=site,
        effects=tuple(effect_rows),
    )  # fmt: skip


def _site(replay: _Replay, site: Site) -> Site:
    """The site with its conformal multipliers: every record's out-of-sample errors."""
    own: list[float] = []
    transferred: list[float] = []
    records = [
        record for models in replay.models.values() for record in models.classes.values()
    ] + [record for records in replay.users.values() for record in records.values()]
    for models in replay.models.values():
        if models.reference is not None:
            own.extend(models.reference.evidence.calibration)
    for record in records:
        own.extend(record.evidence.calibration)
        transferred.extend(record.evidence.transfer_calibration)
    found = site_from((), own, transferred)
    return found._replace(scale=site.scale)


class Learnt(NamedTuple):
    """What learn_models makes: rows to store, summaries, and the site's figures."""

    rows: list[TaskModelRow]
    user_rows: list[UserModelRow]
    summaries: list[TaskSummary]
    censored: CensoredSummary
    site: Site
    effects: tuple[ClassEffectRow, ...]


@dataclass(frozen=True)
class MemoryLearned:
    """What the peaks taught (advisor.models.memory_book): keys, and each pool's margin."""

    tasks: int  # shared models
    user_keys: int  # users' own keys
    margins: dict[str, tuple[tuple[float, float], ...]]  # (distance, margin), log scale
    residuals: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        """As in schemas/learn-output.json's memory."""
        return {
            "tasks": self.tasks,
            "user_keys": self.user_keys,
            "pools": {
                pool: {
                    "residuals": self.residuals[pool],
                    "margins": [{"distance": d, "margin": m} for d, m in margins],
                }
                for pool, margins in sorted(self.margins.items())
            },
        }


@dataclass(frozen=True)
class Learned:
    """What ``advisor learn`` did (schemas/learn-output.json)."""

    observations: int
    models: int
    user_models: int
    users: int
    censored: CensoredSummary
    task_models: tuple[TaskSummary, ...]
    memory: MemoryLearned = MemoryLearned(0, 0, {}, {})

    def to_json(self) -> dict[str, Any]:
        """The summary the command prints."""
        return {
            "observations": self.observations,
            "tasks": len(self.task_models),
            "models": self.models,
            "user_models": self.user_models,
            "users": self.users,
            "censored": {"runs": self.censored.runs, "used": self.censored.used},
            "task_models": [{**asdict(s), "classes": list(s.classes)} for s in self.task_models],
            "memory": self.memory.to_json(),
        }


def learn(store: Store, *, reference: str | None = None, seed: int = 0) -> Learned:
    """Refit everything and replace the stored models."""
    observations = load_observations(store)
    context = load_node_context(store)
    found = learn_models(observations, context, reference=reference, seed=seed)
    keys, pools = learn_memory(observations)
    with store.write():
        stored = replace_task_models(store, found.rows, found.user_rows)
        write_site_models(store, found.site.to_json(), found.effects, replace=True)
        replace_memory(store, keys, pools)
    return Learned(
        observations=len(observations),
        models=stored,
        user_models=len(found.user_rows),
        users=len({row.user for row in found.user_rows}),
        censored=found.censored,
        task_models=tuple(found.summaries),
        memory=MemoryLearned(
            tasks=sum(1 for key in keys if not key.user),
            user_keys=sum(1 for key in keys if key.user),
            margins={pool: state.margins for pool, state in pools.items()},
            residuals={pool: len(state.residuals) for pool, state in pools.items()},
        ),
    )
