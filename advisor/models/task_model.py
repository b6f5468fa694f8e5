"""A task's model on every node class: its reference evidence, carried to other classes.

The reference class R is where the task ran most (``advisor learn`` chooses it).  Its runs make
the reference ``Evidence`` (advisor.models.evidence); stored as method 'lotaru', node class '*'
(schemas/task-model.json).  On another class C the task is predicted by the reference's
forecast moved by the benchmark factor and by the offset learnt from runs on C
(advisor.models.pooling): that is the ``prior`` explanation of the class's own record
(``ClassRecord``: its own evidence, raced against the prior, and the offsets of its runs).
A user's own runs are a ``ClassRecord`` too, whose prior is the shared forecast: what the user's
runs teach moves that user's predictions alone, as far as their evidence goes.

Only the standard library: the sbatch wrapper predicts from these records.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.models.conformal import Site
from advisor.models.distributions import Predictive, log_predictive
from advisor.models.evidence import X_UNIT_BYTES, Evidence, Forecast
from advisor.models.pooling import WHOLE, ClassEffect, Load, Offsets, prior_effect, task_offset

if TYPE_CHECKING:
    from typing import Any

#: Lotaru's CPU weight when no reduced-clock twin ran the task: the midpoint (Lotaru-G's choice).
DEFAULT_CPU_WEIGHT = 0.5
#: The params' model name of the records here (older rows are refitted by ``advisor learn``).
MODEL = "evidence"


class Reference(NamedTuple):
    """The task's evidence on its reference class, and its CPU weight (for benchmark factors)."""

    reference: str
    evidence: Evidence
    cpu_weight: float = DEFAULT_CPU_WEIGHT
    cpu_weight_source: str = "default"
    cpu_weight_pairs: int = 0
    #: Pearson's r of size and runtime on the reference runs (informative; None below 3 runs)
    pearson_r: float | None = None

    @property
    def x_max_bytes(self) -> float:
        """The largest input size seen on the reference class."""
        return self.evidence.x_max_bytes

    @property
    def n_train(self) -> int:
        """Runs the evidence was learnt from."""
        return self.evidence.n

    @property
    def kind(self) -> str:
        """The explanation the predictions lean on at the largest input (median, line, power)."""
        at = self.x_max_bytes or None
        return ("median", "line", "power", "prior")[
            self.evidence.leader(self.evidence.locations(at))
        ]

    def forecast(self, size: float | None, site: Site) -> Forecast | None:
        """The forecast on the reference class."""
        return self.evidence.forecast(size, site_scale=site.scale)

    def load(self, size: float | None) -> Load:
        """The shares of the overhead and the per-byte cost in the runtime at size.

        Of the reference line a + b·x (advisor.models.pooling): (a, b·x) / line(x), the line
        never below the smallest runtime seen (its floor, as the line explanation is); (1, 0)
        without a size or without a line (a cost that does not grow with the input).
        """
        found = self.evidence.line.line()
        if size is None or not size > 0 or found is None or found[1] < 0:
            return WHOLE
        a, b = found
        work = b * size / X_UNIT_BYTES
        line = max(a + work, self.evidence.floor)
        if not line > 0 or not math.isfinite(line):
            return WHOLE
        return a / line, work / line

    def noise2(self, site: Site) -> float:
        """The variance (log scale) a run on another class is weighed with.

        A run there is compared with this reference's prediction at its size: its offset
        carries the run's own noise and the reference's error at that size, which is what the
        leader's out-of-sample errors measure (not its in-sample residuals, which know neither
        the fit's own error nor how it extrapolates).  The site's spread before two errors.
        """
        found = self.evidence.spread()
        scale = site.scale if found is None else found
        return scale * scale

    def to_params(self) -> dict[str, Any]:
        """Plain numbers for the params JSON (schemas/task-model.json, 'lotaru')."""
        return {
            "model": MODEL,
            "reference": self.reference,
            "evidence": self.evidence.to_json(),
            "cpu_weight": self.cpu_weight,
            "cpu_weight_source": self.cpu_weight_source,
            "cpu_weight_pairs": self.cpu_weight_pairs,
            "pearson_r": self.pearson_r,
        }

    @classmethod
    def from_params(cls, doc: dict[str, Any]) -> Reference | None:
        """Inverse of to_params; None for a row of an older model (``advisor learn`` refits)."""
        if doc.get("model") != MODEL:
            return None
        r = doc.get("pearson_r")
        return cls(
            str(doc["reference"]),
            Evidence.from_json(doc["evidence"]),
            float(doc.get("cpu_weight", DEFAULT_CPU_WEIGHT)),
            str(doc.get("cpu_weight_source", "default")),
            int(doc.get("cpu_weight_pairs", 0)),
            None if r is None else float(r),
        )


class ClassRecord(NamedTuple):
    """A task's runs on one class (or one user's runs): own evidence and offsets to the prior."""

    evidence: Evidence = Evidence()
    offsets: Offsets = Offsets()

    @property
    def n(self) -> int:
        """Runs learnt."""
        return self.evidence.n

    def prior(
        self,
        base: Forecast,
        log_factor: float,
        effect: ClassEffect,
        noise2: float,
        load: Load = WHOLE,
    ) -> tuple[float, float, float]:
        """The transferred (location, scale, dof): base moved by the factor and the pooled offset.

        load: the task's cost shares at the forecast's size (``Reference.load``).  The offset's
        variance is a known quantity (the prior's and the runs'): the degrees of freedom stay
        the base forecast's.
        """
        mean, variance = task_offset(effect, self.offsets, noise2, load)
        scale = math.sqrt(base.scale * base.scale + variance)
        return base.loc + log_factor + mean, scale, base.dof

    def forecast(
        self, size: float | None, site: Site, prior: tuple[float, float, float]
    ) -> Forecast:
        """The leader's forecast on the class; the prior speaks when nothing beat it."""
        found = self.evidence.forecast(size, site_scale=site.scale, prior=prior)
        if found is None:  # pragma: no cover - the prior always speaks
            return Forecast(prior[0], prior[1], prior[2], "prior", True)
        return found

    def observe(
        self,
        size: float | None,
        value: float,
        site: Site,
        *,
        base: Forecast,
        log_factor: float,
        effect: ClassEffect,
        noise2: float,
        load: Load = WHOLE,
    ) -> ClassRecord:
        """The record after one run: scored against the prior as it stood, then learnt.

        load: the task's cost shares at the run's size (``Reference.load``).
        """
        prior = self.prior(base, log_factor, effect, noise2, load)
        evidence = self.evidence.observe(size, value, site_scale=site.scale, prior=prior)
        offset = math.log(value) - base.loc - log_factor
        return ClassRecord(evidence, self.offsets.add(offset, load))

    def to_params(self, model: str = "online") -> dict[str, Any]:
        """Plain numbers for the params JSON ('online', or 'user')."""
        return {
            "model": model,
            "version": MODEL,
            "evidence": self.evidence.to_json(),
            "offsets": self.offsets.to_json(),
        }

    @classmethod
    def from_params(cls, doc: dict[str, Any]) -> ClassRecord | None:
        """Inverse of to_params; None for a row of an older model."""
        if doc.get("version") != MODEL:
            return None
        return cls(Evidence.from_json(doc["evidence"]), Offsets.from_json(doc["offsets"]))


def predictive_of(forecast: Forecast, site: Site) -> Predictive:
    """The forecast as runtime quantiles, with the site's conformal multipliers where it has them.

    The one place the advisor's predictions leave the models: every figure is exp(·), so no
    prediction is ever zero or negative.
    """
    multipliers = site.transferred if forecast.transferred else site.own
    return log_predictive(forecast.loc, forecast.scale, forecast.dof, multipliers)


def effect_for(
    effects: Mapping[tuple[str, str], ClassEffect] | None,
    reference: str,
    node_class: str,
    scored: bool,
) -> ClassEffect:
    """The stored class effect of node_class relative to reference, else the prior's."""
    found = None if effects is None else effects.get((reference, node_class))
    return found if found is not None else prior_effect(scored)
