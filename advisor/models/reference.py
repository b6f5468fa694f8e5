"""Lotaru as published, as plain numbers: its regression on input size, or the median.

Stored in ``task_models`` (node_class '*', method 'paper'; schemas/task-model.json); loading and
predicting need only the standard library.  ``kind`` is 'regression' (a Bayesian linear
regression over features.size: mean and covariance of the coefficients, a noise variance and
the degrees of freedom behind it) or 'median' (the same numbers with no slope: the median
runtime and its MAD).  The advisor's own model is advisor.models.task_model.
"""

from __future__ import annotations

from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.models.bayes import LinearModel
from advisor.models.distributions import Predictive
from advisor.models.features import size_features
from advisor.models.linalg import Matrix, Vector, matrix, vector

if TYPE_CHECKING:
    from typing import Any

#: Lotaru's CPU weight when no reduced-clock twin ran the task: the midpoint (Lotaru-G's choice).
DEFAULT_CPU_WEIGHT = 0.5


class ReferenceModel(NamedTuple):
    """Runtime on the reference node class as a function of input size (features.size)."""

    kind: str  # 'regression' or 'median'
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

    def linear_model(self) -> LinearModel:
        """The posterior on the reference class as a linear model over features.size."""
        return LinearModel(self.mean, self.cov, self.noise_var_s2, self.dof)

    def predict(self, input_bytes: float) -> Predictive:
        """Predictive runtime on the reference node class (Student-t, clipped at zero)."""
        return self.linear_model().predict(size_features(input_bytes))

    def to_params(self, model: str = "paper") -> dict[str, Any]:
        """Plain numbers for the params JSON (schemas/task-model.json, 'paper')."""
        return {
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
        }

    @classmethod
    def from_params(cls, doc: dict[str, Any]) -> ReferenceModel:
        """Inverse of to_params."""
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
        )
