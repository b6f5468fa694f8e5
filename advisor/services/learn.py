"""``advisor learn``: (re)fit every task's models from the observations in the cache.

Per task: the reference node class is the one with the most runs (a reduced-clock twin only if
nothing else ran the task); the advisor's model (advisor.models.averaging) and Lotaru exactly as
published ('paper') are fitted there, the CPU weight comes from the twin's paired runs, the
paper's baselines are fitted on the same runs, and every other class that ran the task gets an
online model: the transferred prior updated with that class's runs.

Only runs the administrator imported (no user, not from accounting) shape these shared
models.  Runs of a user's jobs (ingested from accounting) become that user's own statistics per task and
class (``UserRuns``), which refine that user's predictions alone: a user cannot move another
user's limits by running jobs of the same name.  A job from accounting without a user is kept
for the reports and learned by no model.

Everything but the reference fit is a replay of the runs in the order they were stored, as
accounting learnt them online: an exact run joins its class model (shared, or its user's own
statistics); a run killed at its limit (censored, a lower bound) goes through the same rule as
online accounting (advisor.models.censoring) on the model its user sees at that point, and
where it raises the upper quantile its imputed runtime joins that model's runs.  So a refit
arrives at the model that online learning built from the same runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from advisor.models.baselines import METHODS as BASELINES
from advisor.models.baselines import fit_baseline
from advisor.models.censoring import imputed_runtime
from advisor.models.class_model import TAU, ClassModel, UserRuns
from advisor.models.fitting import fit_models
from advisor.models.loading import NodeContext, load_node_context
from advisor.models.memory_book import learn_memory
from advisor.models.predict import PAPER, factor_to, transferred_model
from advisor.models.reference import ReferenceModel
from advisor.store.connection import Store
from advisor.store.memory_models import replace_memory
from advisor.store.observations import Observation, load_observations
from advisor.store.task_models import TaskModelRow, UserModelRow, replace_task_models

Run = tuple[float, float, int | None]


@dataclass(frozen=True)
class TaskSummary:
    """What was learned for one task."""

    task: str
    reference: str
    kind: str
    linear_weight: float
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
) -> tuple[list[TaskModelRow], ReferenceModel]:
    """The machine-independent rows of one task ('*': the models, the baselines)."""
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
        TaskModelRow(task, "*", "lotaru", model.to_params(), model.n_train),
        TaskModelRow(task, "*", PAPER, paper.to_params(PAPER), paper.n_train),
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
            rows.append(TaskModelRow(task, "*", method, baseline.to_params(), len(xs)))
    return rows, model


def _shared(obs: Observation) -> bool:
    return not obs.user and not obs.from_accounting


class _Replay:
    """The class models and users' statistics as the runs are replayed in stored order."""

    def __init__(
        self, references: dict[str, ReferenceModel], context: NodeContext, tau: float
    ) -> None:
        self.references, self.context, self.tau = references, context, tau
        self.classes: dict[tuple[str, str], ClassModel] = {}
        self.users: dict[tuple[str, str, str], UserRuns] = {}
        self.censored = self.used = 0

    def shared(self, task: str, node_class: str) -> ClassModel:
        """The class's shared model so far (the transferred prior before its first run)."""
        found = self.classes.get((task, node_class))
        if found is not None:
            return found
        model = self.references[task]
        factor = factor_to(model, node_class, self.context.scores)
        return transferred_model(model, node_class, factor, tau=self.tau)

    def mine(self, user: str, task: str, node_class: str) -> UserRuns:
        return self.users.get((user, task, node_class), UserRuns.empty("size"))

    def add(self, obs: Observation, node_class: str, run: Run) -> None:
        if obs.user:
            key = (obs.user, obs.task, node_class)
            mine = self.mine(*key)
            if mine.feature_set != self.shared(obs.task, node_class).feature_set:
                mine = UserRuns.empty(self.shared(obs.task, node_class).feature_set)
            self.users[key] = mine.with_runs([run])
        else:
            self.classes[(obs.task, node_class)] = self.shared(obs.task, node_class).with_runs(
                [run]
            )

    def replay(self, obs: Observation, node_class: str, size: float) -> None:
        if not obs.censored:
            self.add(obs, node_class, (size, obs.runtime_s, obs.cores))
            return
        self.censored += 1
        view = self.shared(obs.task, node_class)
        if obs.user:
            view = view.with_user(self.mine(obs.user, obs.task, node_class))
        imputed = imputed_runtime(view, size, obs.runtime_s, obs.cores)
        if imputed is not None:
            self.add(obs, node_class, (size, imputed, obs.cores))
            self.used += 1


def learn_models(
    observations: Sequence[Observation],
    context: NodeContext,
    *,
    reference: str | None = None,
    seed: int = 0,
    tau: float = TAU,
) -> tuple[list[TaskModelRow], list[UserModelRow], list[TaskSummary], CensoredSummary]:
    """Every row and summary from the observations, in their order (pure: no cache involved)."""
    grouped: dict[str, dict[str, list[Observation]]] = {}
    for obs in observations:
        if _shared(obs) and not obs.censored and obs.runtime_s >= 0:
            grouped.setdefault(obs.task, {}).setdefault(_class_of(obs, context), []).append(obs)
    rows: list[TaskModelRow] = []
    references: dict[str, ReferenceModel] = {}
    for task in sorted(grouped):
        task_rows, model = learn_task(
            task, grouped[task], context, preferred_reference=reference, seed=seed
        )
        rows.extend(task_rows)
        references[task] = model
    replay = _Replay(references, context, tau)
    for obs in observations:
        found = references.get(obs.task)
        if found is None or obs.runtime_s < 0 or (obs.from_accounting and not obs.user):
            continue  # a job from accounting without a user teaches no model
        node_class = _class_of(obs, context)
        if _shared(obs) and not obs.censored and node_class == found.reference:
            continue  # in the reference fit
        if _shared(obs) and obs.input_bytes is None:
            continue  # an imported run without a size teaches no class model
        # a user's job without a recorded size ran at the size its limit assumed (accounting)
        size = float(obs.input_bytes) if obs.input_bytes is not None else found.x_max_bytes
        replay.replay(obs, node_class, size)
    for (task, node_class), online in sorted(replay.classes.items()):
        rows.append(TaskModelRow(task, node_class, "online", online.to_params(), online.stats.n))
    user_rows = [
        UserModelRow(user, task, node_class, mine.to_params(), mine.stats.n)
        for (user, task, node_class), mine in sorted(replay.users.items())
    ]
    summaries = [
        TaskSummary(
            task,
            model.reference,
            model.kind,
            model.weight(),
            model.pearson_r,
            model.cpu_weight,
            model.cpu_weight_source,
            model.n_train,
            tuple(c for t, c in sorted(replay.classes) if t == task and c != model.reference),
        )
        for task, model in references.items()
    ]
    return rows, user_rows, summaries, CensoredSummary(replay.censored, replay.used)


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
    rows, user_rows, summaries, censored = learn_models(
        observations, context, reference=reference, seed=seed
    )
    stored = replace_task_models(store, rows, user_rows)
    keys, pools = learn_memory(observations)
    replace_memory(store, keys, pools)
    return Learned(
        observations=len(observations),
        models=stored,
        user_models=len(user_rows),
        users=len({row.user for row in user_rows}),
        censored=censored,
        task_models=tuple(summaries),
        memory=MemoryLearned(
            tasks=sum(1 for key in keys if not key.user),
            user_keys=sum(1 for key in keys if key.user),
            margins={pool: state.margins for pool, state in pools.items()},
            residuals={pool: len(state.residuals) for pool, state in pools.items()},
        ),
    )
