"""Runtime samples from the task models' predictive distributions (a ``RuntimeSampler``).

A model's prediction is Student-t (``advisor.models.distributions``) on the log scale (the
advisor's models: a runtime is drawn as ``exp(loc + scale * T(dof))``) or on the runtime itself
(Lotaru as published, the baselines: ``loc + scale * T(dof)``, clipped at zero as the
predictive's quantiles are).  Tasks whose runtime
did not come from a model (recorded, carried over, cpu-work) keep the lognormal spread of
``uncertainty.LognormalSampler`` around their planned runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from advisor.planner.cluster.matrix import RuntimeMatrix
from advisor.planner.scheduling.arrays import IntArray
from advisor.planner.scheduling.problem import FloatArray, Node
from advisor.planner.scheduling.uncertainty import LognormalSampler


@dataclass(frozen=True)
class PredictiveSampler:
    """Student-t parameters per task and node (NaN where no model spoke) and the fallback cv.

    log: 1 where the parameters are of the log runtime, 0 where of the runtime.
    """

    loc_s: FloatArray
    scale_s: FloatArray
    dof: FloatArray
    cv: float = 0.2
    log: FloatArray | None = None

    @classmethod
    def from_matrices(
        cls, matrices: Sequence[RuntimeMatrix], nodes: Sequence[Node], cv: float
    ) -> PredictiveSampler:
        """Parameters of the stacked tasks of several workflows on the given nodes."""
        rows = [row for matrix in matrices for row in _rows(matrix, nodes)]
        shape = (len(rows), len(nodes), 4)
        params = np.array(rows, dtype=np.float64).reshape(shape)
        return cls(params[..., 0], params[..., 1], params[..., 2], cv, params[..., 3])

    def sample(
        self,
        tasks: IntArray,
        nodes: IntArray,
        runtime_s: FloatArray,
        rng: np.random.Generator,
        size: int,
    ) -> FloatArray:
        """Samples (len(tasks), size): Student-t where a model spoke, lognormal elsewhere."""
        result = LognormalSampler(self.cv).sample(tasks, nodes, runtime_s, rng, size)
        loc = self.loc_s[tasks, nodes]
        modelled = np.isfinite(loc)
        if modelled.any():
            dof = self.dof[tasks, nodes][modelled]
            draws = rng.standard_t(dof[:, None], size=(int(modelled.sum()), size))
            scale = self.scale_s[tasks, nodes][modelled]
            drawn = loc[modelled][:, None] + scale[:, None] * draws
            log = (
                np.zeros(drawn.shape[0], dtype=bool)
                if self.log is None
                else self.log[tasks, nodes][modelled] > 0
            )
            drawn[log] = np.exp(np.minimum(drawn[log], 700.0))
            result[modelled] = np.maximum(0.0, drawn)
        return result


def _rows(
    matrix: RuntimeMatrix, nodes: Sequence[Node]
) -> list[list[tuple[float, float, float, float]]]:
    column = {name: position for position, name in enumerate(matrix.classes)}
    nan = (np.nan, np.nan, np.nan, 0.0)
    rows = []
    for cells in matrix.cells:
        row = []
        for node in nodes:
            found = cells[column[node.node_class]]
            predictive = found.predictive if found is not None else None
            row.append(
                nan
                if predictive is None
                else (predictive.loc_s, predictive.scale_s, predictive.dof, float(predictive.log))
            )
        rows.append(row)
    return rows
