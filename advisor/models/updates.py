"""One run learnt by a task's models: the pure step behind ``advisor learn`` and accounting.

A run of the task on its reference class by nobody in particular (the administrator's
imports, calibration runs) joins the reference evidence; on another class, that class's shared
record; a user's run joins that user's own record on the class, whose prior is the shared
forecast (advisor.models.task_model).  Each is first predicted, then learnt.  A censored run
goes through advisor.models.censoring on the model its user sees, and joins it where the rule
says.
"""

from __future__ import annotations

import math

from advisor.lite import NamedTuple
from advisor.models.censoring import imputed_runtime
from advisor.models.distributions import Predictive
from advisor.models.predict import TaskModels, transfer, user_effect, view
from advisor.models.task_model import ClassRecord, predictive_of


class Learnt(NamedTuple):
    """The models after a run, and what changed: 'reference', 'class' or 'user'."""

    models: TaskModels
    changed: str


def learn_run(
    models: TaskModels,
    node_class: str,
    size: float | None,
    runtime_s: float,
    *,
    factor: float | None,
    user: bool = False,
) -> Learnt:
    """The task's models after one exact run (runtime_s > 0) on node_class.

    user: the run is one user's own (models carries that user's records).
    """
    reference = models.reference
    if reference is None:
        raise LookupError(f"no model for task {models.task!r}")
    site = models.site
    if user:
        seen = view(models, node_class, size, factor)
        record = models.user_runs.get(node_class, ClassRecord())
        record = record.observe(
            size, runtime_s, site, base=seen.shared, log_factor=0.0,
            effect=user_effect(site), noise2=reference.noise2(site),
        )  # fmt: skip
        return Learnt(models._replace(user_runs={**models.user_runs, node_class: record}), "user")
    if node_class == reference.reference:
        evidence = reference.evidence.observe(size, runtime_s, site_scale=site.scale)
        return Learnt(models._replace(reference=reference._replace(evidence=evidence)), "reference")
    base = reference.forecast(size, site)
    if base is None:  # pragma: no cover - a reference has at least one run
        raise LookupError(f"no runs behind the model of task {models.task!r}")
    log_factor, effect, noise2 = transfer(models, reference, node_class, factor)
    record = models.classes.get(node_class, ClassRecord()).observe(
        size, runtime_s, site, base=base, log_factor=log_factor, effect=effect, noise2=noise2,
        load=reference.load(size),
    )  # fmt: skip
    return Learnt(models._replace(classes={**models.classes, node_class: record}), "class")


def learn_censored(
    models: TaskModels,
    node_class: str,
    size: float | None,
    limit_s: float,
    *,
    factor: float | None,
    user: bool = False,
) -> tuple[Learnt, float] | None:
    """The models after a run killed at limit_s, and the runtime imputed; None if it teaches nothing."""
    if not limit_s > 0 or not math.isfinite(limit_s):
        return None
    before = predictive_of(view(models, node_class, size, factor).forecast, models.site)

    def learnt(runtime_s: float) -> Learnt:
        return learn_run(models, node_class, size, runtime_s, factor=factor, user=user)

    def after(runtime_s: float) -> Predictive:
        found = view(learnt(runtime_s).models, node_class, size, factor).forecast
        return predictive_of(found, models.site)

    imputed = imputed_runtime(before, after, limit_s)
    if imputed is None:
        return None
    return learnt(imputed), imputed
