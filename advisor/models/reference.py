"""The reference model of a task: what is learnt on the training machine, as plain numbers.

Stored in ``task_models`` (node_class '*'; method 'lotaru' for the advisor's model, 'paper' for
Lotaru exactly as published); schemas/task-model.json describes the params.  Loading and
predicting need only the standard library.

The advisor's model averages two explanations of the runs (advisor.models.averaging): the
runtime follows the input size (``linear``: a Bayesian linear regression) or it does not
(``constant``: the median and its spread), weighted by how probable each is given the runs
(``linear_weight``).  The paper's model is one of the two, chosen by Pearson's r >= 0.8.
``mean``/``cov``/``noise_var_s2``/``dof`` are always the model on the reference class itself
(the mixture's moments), which is what readers of older rows see.

``discrepancy`` is the relative standard deviation by which a later run strays from the model
beyond what the training runs' scatter shows (advisor.models.discrepancy): it is added to every
prediction as independent noise of that size relative to the predicted runtime.
"""

from __future__ import annotations

from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.models.bayes import LinearModel
from advisor.models.distributions import Predictive, widened
from advisor.models.features import size_features
from advisor.models.linalg import Matrix, Vector, add, matrix, outer, scale, vector

if TYPE_CHECKING:
    from typing import Any

#: Lotaru's CPU weight when no reduced-clock twin ran the task: the midpoint (Lotaru-G's choice).
DEFAULT_CPU_WEIGHT = 0.5


class Component(NamedTuple):
    """One explanation of the reference runs: coefficients over features.size and a noise."""

    mean: Vector
    cov: Matrix
    noise_var_s2: float
    dof: float

    def to_json(self) -> dict[str, Any]:
        """Plain numbers for the params JSON."""
        return {
            "mean": list(self.mean),
            "cov": [list(row) for row in self.cov],
            "noise_var_s2": self.noise_var_s2,
            "dof": self.dof,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Component:
        """Inverse of to_json."""
        return cls(
            vector(doc["mean"]), matrix(doc["cov"]), float(doc["noise_var_s2"]), float(doc["dof"])
        )


def mixture(
    parts: list[tuple[float, Component]],
) -> Component:
    """The moments of a weighted mixture of components (weights summing to 1).

    mean = Σ p m, cov = Σ p (Σ + m mᵀ) − mean meanᵀ, noise = Σ p σ², dof = Σ p ν: the
    between-component spread of the coefficients becomes their uncertainty.
    """
    used = [(p, c) for p, c in parts if p > 0.0]
    if len(used) == 1:
        return used[0][1]
    k = len(used[0][1].mean)
    mean = tuple(sum(p * c.mean[i] for p, c in used) for i in range(k))
    second = used[0][1].cov
    second = scale(add(second, outer(used[0][1].mean, used[0][1].mean)), used[0][0])
    for p, c in used[1:]:
        second = add(second, scale(add(c.cov, outer(c.mean, c.mean)), p))
    cov = add(second, scale(outer(mean, mean), -1.0))
    return Component(
        mean,
        cov,
        sum(p * c.noise_var_s2 for p, c in used),
        sum(p * c.dof for p, c in used),
    )


class ReferenceModel(NamedTuple):
    """Runtime on the reference node class as a function of input size (features.size)."""

    kind: str  # 'regression' or 'median': the more probable of the two components
    mean: Vector
    cov: Matrix
    noise_var_s2: float
    dof: float
    n_train: int
    pearson_r: float | None
    x_max_bytes: float
    reference: str
    cpu_weight: float = DEFAULT_CPU_WEIGHT
    cpu_weight_source: str = "default"
    cpu_weight_pairs: int = 0
    #: Probability that the runtime follows the input size (1: regression only, 0: median only).
    linear_weight: float | None = None
    linear: Component | None = None
    constant: Component | None = None
    discrepancy: float = 0.0

    def weight(self) -> float:
        """The linear component's weight (older rows: 1 for a regression, 0 for the median)."""
        if self.linear_weight is not None:
            return self.linear_weight
        return 1.0 if self.kind == "regression" else 0.0

    def parts(self) -> tuple[Component | None, Component | None]:
        """(linear, constant) components; older rows are the one their kind names."""
        own = Component(self.mean, self.cov, self.noise_var_s2, self.dof)
        if self.linear_weight is None:
            return (own, None) if self.kind == "regression" else (None, own)
        return self.linear, self.constant

    def linear_model(self) -> LinearModel:
        """The posterior on the reference class as a linear model over features.size."""
        return LinearModel(self.mean, self.cov, self.noise_var_s2, self.dof)

    def predict(self, input_bytes: float) -> Predictive:
        """Predictive runtime on the reference node class, its discrepancy included."""
        found = self.linear_model().predict(size_features(input_bytes))
        return widened(found, self.discrepancy)

    def to_params(self, model: str = "lotaru") -> dict[str, Any]:
        """Plain numbers for the params JSON (schemas/task-model.json, 'lotaru' or 'paper')."""
        doc: dict[str, Any] = {
            "model": model,
            "kind": self.kind,
            "features": "size",
            "mean": list(self.mean),
            "cov": [list(row) for row in self.cov],
            "noise_var_s2": self.noise_var_s2,
            "dof": self.dof,
            "n_train": self.n_train,
            "pearson_r": self.pearson_r,
            "x_max_bytes": self.x_max_bytes,
            "reference": self.reference,
            "cpu_weight": self.cpu_weight,
            "cpu_weight_source": self.cpu_weight_source,
            "cpu_weight_pairs": self.cpu_weight_pairs,
            "discrepancy": self.discrepancy,
        }
        if self.linear_weight is not None:
            doc["linear_weight"] = self.linear_weight
            doc["linear"] = None if self.linear is None else self.linear.to_json()
            doc["constant"] = None if self.constant is None else self.constant.to_json()
        return doc

    @classmethod
    def from_params(cls, doc: dict[str, Any]) -> ReferenceModel:
        """Inverse of to_params."""
        weight = doc.get("linear_weight")
        linear, constant = doc.get("linear"), doc.get("constant")
        return cls(
            kind=str(doc["kind"]),
            mean=vector(doc["mean"]),
            cov=matrix(doc["cov"]),
            noise_var_s2=float(doc["noise_var_s2"]),
            dof=float(doc["dof"]),
            n_train=int(doc["n_train"]),
            pearson_r=None if doc.get("pearson_r") is None else float(doc["pearson_r"]),
            x_max_bytes=float(doc["x_max_bytes"]),
            reference=str(doc["reference"]),
            cpu_weight=float(doc.get("cpu_weight", DEFAULT_CPU_WEIGHT)),
            cpu_weight_source=str(doc.get("cpu_weight_source", "default")),
            cpu_weight_pairs=int(doc.get("cpu_weight_pairs", 0)),
            linear_weight=None if weight is None else float(weight),
            linear=None if linear is None else Component.from_json(linear),
            constant=None if constant is None else Component.from_json(constant),
            discrepancy=float(doc.get("discrepancy", 0.0)),
        )
