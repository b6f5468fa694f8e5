"""A task's reference models from its runs: the CPU weight from the twin, then both models.

What ``advisor learn`` and ``advisor evaluate`` call: the advisor's evidence on the reference
class (advisor.models.evidence, raced in the runs' order) and Lotaru exactly as published
(advisor.models.lotaru).
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.models.conformal import DEFAULT_SCALE
from advisor.models.cpu_weight import cpu_weight, pair_runs
from advisor.models.evidence import Evidence
from advisor.models.lotaru import fit_reference
from advisor.models.reference import ReferenceModel
from advisor.models.task_model import DEFAULT_CPU_WEIGHT, Reference
from advisor.store.observations import Observation

#: What a run reported as 0 s counts as: accounting's clock has a resolution of one second, so
#: such a run took under one; half of it is the middle (the models need a positive runtime).
ZERO_RUNTIME_S = 0.5


def positive(runtime_s: float) -> float:
    """The runtime the models learn (a 0 s run is ZERO_RUNTIME_S)."""
    return runtime_s if runtime_s > 0 else ZERO_RUNTIME_S


def fit_models(
    runs: Sequence[Observation],
    twins: Sequence[tuple[str, Sequence[Observation], float]],
    *,
    reference: str,
    site_scale: float = DEFAULT_SCALE,
) -> tuple[Reference, ReferenceModel]:
    """(the advisor's reference evidence, Lotaru as published) of a task's reference runs.

    The CPU weight comes from the first twin that pairs; twins are (name, the twin's runs of the
    task, clock ratio), and without pairs the weight is DEFAULT_CPU_WEIGHT.  The evidence learns
    the runs in their order (each predicted before it is learnt); Lotaru's model is fitted on
    the runs with a size (all of them when none has one).
    """
    weight, source, pairs = DEFAULT_CPU_WEIGHT, "default", 0
    for name, observed, clock_ratio in twins:
        found = cpu_weight(pair_runs(runs, observed), clock_ratio)
        if found is not None:
            weight, source, pairs = found.value, f"twin:{name}", found.pairs
            break
    evidence = Evidence()
    for o in runs:
        evidence = evidence.observe(
            None if o.input_bytes is None else float(o.input_bytes),
            positive(o.runtime_s),
            site_scale=site_scale,
        )
    use = [o for o in runs if o.input_bytes is not None] or list(runs)
    paper = fit_reference(
        [float(o.input_bytes or 0) for o in use],
        [o.runtime_s for o in use],
        reference=reference,
        cpu_weight=weight,
        cpu_weight_source=source,
        cpu_weight_pairs=pairs,
    )
    model = Reference(reference, evidence, weight, source, pairs, paper.pearson_r)
    return model, paper
