"""``advisor sbatch --advisor-insitu FILE --advisor-steps M``: the limit from an in situ makespan.

The in situ model (advisor.insitu) predicts the makespan of M steps from a few measured steps;
here it stands in for a task model, so the limit goes through the wrapper's normal path (margin,
whole minutes, MaxTime, policy, tag, advice record).  Imported only when --advisor-insitu is given.
"""

from __future__ import annotations

from typing import NamedTuple

from advisor.advice.forecast import Forecast


class InsituPredictor(NamedTuple):
    """The same expected makespan on every node class (the steps were measured on one)."""

    expected_s: float
    steady_steps: int

    def default_input_bytes(self, task: str) -> int | None:
        """In situ runs need no input size."""
        return None

    def forecast(
        self, task: str, input_bytes: int | None, node_class: str, quantile: float
    ) -> Forecast:
        """The makespan (plus the warm-up excess seen in the file) as every quantile."""
        value = self.expected_s
        return Forecast(
            node_class=node_class,
            mean_s=value,
            p50_s=value,
            p90_s=value,
            p95_s=value,
            quantile=quantile,
            quantile_s=value,
            runs=self.steady_steps,
            source="insitu",
        )


def insitu_predictor(path: str, steps: int | None) -> InsituPredictor:
    """Read and analyse the step file; steps defaults to the number of steps in it."""
    from advisor.insitu.report import analyse_steps, insitu_time_limit_s
    from advisor.insitu.steps import read_steps

    report = analyse_steps(read_steps(path), steps=steps)
    expected = insitu_time_limit_s(report, report.makespan_steps, 0.0)
    return InsituPredictor(float(expected), report.window.steady_steps)
