"""A task's reference models from its runs: the CPU weight from the twin, then both models.

What ``advisor learn`` and ``advisor evaluate`` call: the advisor's averaged model
(advisor.models.averaging) and Lotaru exactly as published (advisor.models.lotaru).
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.models.averaging import fit_averaged
from advisor.models.cpu_weight import cpu_weight, pair_runs
from advisor.models.discrepancy import DISCREPANCY
from advisor.models.lotaru import published as published_model
from advisor.models.reference import DEFAULT_CPU_WEIGHT, ReferenceModel
from advisor.store.observations import Observation


def fit_models(
    runs: Sequence[Observation],
    twins: Sequence[tuple[str, Sequence[Observation], float]],
    *,
    reference: str,
    discrepancy: float = DISCREPANCY,
) -> tuple[ReferenceModel, ReferenceModel]:
    """(the advisor's averaged model, Lotaru as published) of a task's reference runs.

    The CPU weight comes from the first twin that pairs; twins are (name, the twin's runs of the
    task, clock ratio), and without pairs the weight is DEFAULT_CPU_WEIGHT.  Runs without an
    input size count only when no run has one (the constant).  Both models share the CPU weight
    and the two fitted components (one BayesianRidge fit).
    """
    weight, source, pairs = DEFAULT_CPU_WEIGHT, "default", 0
    for name, observed, clock_ratio in twins:
        found = cpu_weight(pair_runs(runs, observed), clock_ratio)
        if found is not None:
            weight, source, pairs = found.value, f"twin:{name}", found.pairs
            break
    use = [o for o in runs if o.input_bytes is not None] or list(runs)
    model = fit_averaged(
        [float(o.input_bytes or 0) for o in use],
        [o.runtime_s for o in use],
        reference=reference,
        cpu_weight=weight,
        cpu_weight_source=source,
        cpu_weight_pairs=pairs,
        discrepancy=discrepancy,
    )
    return model, published_model(model)


def fit_task(
    runs: Sequence[Observation],
    twins: Sequence[tuple[str, Sequence[Observation], float]],
    *,
    reference: str,
    published: bool = False,
    discrepancy: float = DISCREPANCY,
) -> ReferenceModel:
    """One of fit_models' two: Lotaru as published, or (default) the advisor's."""
    model, paper = fit_models(runs, twins, reference=reference, discrepancy=discrepancy)
    return paper if published else model
