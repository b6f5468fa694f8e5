"""The runtime models' choices, cross-validated on both development data sets (issue 29).

Run: ``.venv/bin/python benchmarks/model_choices.py [--data ../shared/data] [--cache DIR]
[--variants NAME,...]``.

Each variant changes one choice of the advisor's model and reruns both evaluations; "chosen" is
the product as it is (the probe ratio mixed with the model's forecast by the class's
comparisons, advisor.models.pooling), "two-part offset alone (before)" the model's forecast
without the ratio, and every later variant changes one choice of that forecast, without the
ratio as well (as they were measured before the mix):

* Galaxy (``advisor evaluate --runs`` on every [A, B, tools] pair of galaxy/machines.json,
  pooled): cross-validated across tools (five folds of tools per pair); the advisor with
  nothing on B and after its first 1-3 runs there, beside the plain per-task median of A, Lotaru
  as published, the plain probe ratio and A's least-squares line scaled by the first run(s);
* Lotaru (``advisor evaluate --traces --calibrate``): leave one workflow out, homogeneous
  (local) and heterogeneous (A1, A2, N1, N2, C2), zero-shot and after 1-3 calibration runs.

Printed per variant: the pooled median relative error (%), the P95 coverage (%) and how many
predictions were <= 0 s, for every method; and each advisor method beside the methods that saw
as many runs (advisor.models.comparison: the ratio of median errors, its 95 % interval over
draws of the tools or tasks, the share of runs predicted closer).  Results are kept under
--cache (one JSON per variant and data set) so a rerun prints at once; delete the folder to
recompute.  Not a speed
benchmark: it measures the figures docs/performance.md and docs/models.md quote, and how much each choice moves them.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import statistics
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import advisor.models.evaluation as lotaru_evaluation
import advisor.models.evidence as evidence
import advisor.models.pooling as pooling
import advisor.models.task_model as task_model
import advisor.models.transfer_evaluation as transfer_evaluation
from advisor.factors import class_factor
from advisor.imports.json_files import read_task_runs
from advisor.models.comparison import Comparison, comparisons
from advisor.models.fitting import positive
from advisor.models.predict import TaskModels, View
from advisor.models.predict import view as advisor_view
from advisor.models.transfer_evaluation import score, task_runs
from advisor.models.updates import learn_run
from advisor.services.evaluate import EvaluateRequest, evaluate

HERE = Path(__file__).resolve().parent


@contextlib.contextmanager
def patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    """owner.name = value for the duration."""
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


def _no_upward(self: evidence.Evidence) -> tuple[Any, Any, Any]:
    return self.scores[0], self.scores[1], self.scores[2]


def _always_significant(self: evidence.Score) -> bool:
    return self.advantage > 0.0


def _significant_everywhere(self: evidence.Evidence, locations: tuple[Any, ...]) -> int:
    best = self.incumbent(locations[3])
    if locations[best] is None:
        best = 0
    top, chosen = 0.0, best
    for index, (found, loc) in enumerate(zip(self.scores, locations, strict=True)):
        if loc is not None and index != best and found.advantage > top and found.significant():
            top, chosen = found.advantage, index
    return chosen


def _without(name: str) -> Callable[[], contextlib.AbstractContextManager[None]]:
    index = evidence.NAMES.index(name)
    original = evidence.Evidence.locations

    def locations(self: evidence.Evidence, size: Any, prior: Any = None) -> tuple[Any, ...]:
        found = list(original(self, size, prior))
        found[index] = None
        return tuple(found)

    return lambda: patched(evidence.Evidence, "locations", locations)


def _decreasing(self: evidence.Evidence, index: int, size: float) -> float | None:
    """fitted() without the rule that a runtime does not shrink as its input grows."""
    found = (self.line if index == 1 else self.power).line()
    if found is None:
        return None
    if index == 1:
        return math.log(max(found[0] + found[1] * size / evidence.X_UNIT_BYTES, self.floor))
    return found[0] + found[1] * math.log(size)


def _supported() -> contextlib.AbstractContextManager[None]:
    """Fits answer beyond the sizes their runs span (in log size) as at that span's edge."""
    original = evidence.Evidence.locations
    seen: dict[tuple[Any, ...], tuple[float, float]] = {}

    def locations(self: evidence.Evidence, size: Any, prior: Any = None) -> tuple[Any, ...]:
        sizes = [x for x, _ in self.runs if x > 0]
        if size is None or not sizes:
            return original(self, size, prior)
        low, high = seen.setdefault(self.runs, (min(sizes), max(sizes)))
        spread = math.log(high / low)
        at = min(max(size, low * math.exp(-spread)), high * math.exp(spread))
        return original(self, at, prior)

    return patched(evidence.Evidence, "locations", locations)


def _one_offset(self: task_model.Reference, size: float | None) -> tuple[float, float]:
    """Every run's load (1, 0): a task's offset on a class is one ratio at every size."""
    return 1.0, 0.0


def _line_carried() -> contextlib.AbstractContextManager[None]:
    """The reference's line, where it can speak, is what other classes are carried from.

    (It answers on the reference class too: the homogeneous figures move with it.)
    """
    original = task_model.Reference.forecast

    def forecast(self: task_model.Reference, size: Any, site: Any) -> Any:
        found = original(self, size, site)
        if found is None or size is None:
            return found
        line = self.evidence.locations(size)[1]
        return found if line is None else found._replace(loc=line)

    return patched(task_model.Reference, "forecast", forecast)


def _own_ratio(
    effect: Any, offsets: Any, sigma2: float, load: Any = (1.0, 0.0)
) -> tuple[float, float]:
    """The task's own mean log ratio once it ran on the class (no pooling, one offset)."""
    mean, variance = _TASK_OFFSET(effect, offsets, sigma2, load)
    return (mean, variance) if offsets is None or offsets.n == 0 else (offsets.mean(), variance)


_TASK_OFFSET = pooling.task_offset

# -- the probe ratio raced against the model's offset (issue 29's follow-up) -------------------
#: A comparison of the two on one run: (runs seen before it, ratio's log error, model's).
Pair = tuple[int, float, float]
#: Per class effect (one fold's class), every other task's pairs on that class.
_CLASS_PAIRS: dict[Any, dict[str, list[Pair]]] = {}


def _line_ratio(models: TaskModels, node_class: str, size: float | None) -> float | None:
    """The plain probe ratio's log location: Σ runtimes / Σ reference line at their sizes, times
    the line at size (the user's by-hand figure, on the advisor's own line); None where the
    reference has no line or a run on the class has no size."""
    reference, record = models.reference, models.classes.get(node_class)
    if reference is None or record is None or not record.n or size is None or not size > 0:
        return None
    runs = record.evidence.runs
    if not runs or any(x <= 0 for x, _ in runs):
        return None
    at = reference.evidence.fitted(1, size)
    lines = [reference.evidence.fitted(1, x) for x, _ in runs]
    if at is None or any(line is None for line in lines):
        return None
    observed = math.fsum(math.exp(z) for _, z in runs)
    return at + math.log(observed / math.fsum(math.exp(line or 0.0) for line in lines))


def _pairs(models: TaskModels, node_class: str) -> list[Pair]:
    """The ratio's and the model's out-of-sample errors on each run after the class's first.

    The model's are the record's own (its prior's errors as each run came in); the ratio's
    are replayed from the runs before each (the reference as it is now).
    """
    reference, record = models.reference, models.classes.get(node_class)
    if reference is None or record is None or record.n < 2:
        return []
    runs, errors = record.evidence.runs, record.evidence.scores[3].errors
    if len(errors) != len(runs) or any(x <= 0 for x, _ in runs):
        return []
    lines = [reference.evidence.fitted(1, x) for x, _ in runs]
    if any(line is None for line in lines):
        return []
    start = record.n - len(runs)
    out = []
    for i in range(1, len(runs)):
        observed = math.fsum(math.exp(z) for _, z in runs[:i])
        local = math.fsum(math.exp(line or 0.0) for line in lines[:i])
        ratio = runs[i][1] - (lines[i] or 0.0) - math.log(observed / local)
        out.append((start + i, ratio, errors[i]))
    return out


def _chosen_if_earned(gains: list[float], significance: bool) -> float:
    advantage = math.fsum(gains)
    squares = math.fsum(g * g for g in gains)
    earned = advantage > 0 and (not significance or advantage * advantage > squares)
    return 1.0 if earned else 0.0


def _weight(rule: str, own: list[Pair], others: list[Pair], seen: int) -> float:
    """The model's weight against the probe ratio (1: the model's offset, 0: the ratio)."""
    significance = not rule.endswith("-nosig")
    if rule == "ratio":
        return 0.0
    if rule.startswith("own"):
        chosen = own
    elif rule.startswith("position"):
        chosen = own + [p for p in others if p[0] == seen]
    else:
        chosen = own + others
    if rule == "own-first" and len(own) < 2:
        chosen = own + others
    return _chosen_if_earned([abs(r) - abs(m) for _, r, m in chosen], significance)


def _raced(rule: str) -> Callable[[], contextlib.AbstractContextManager[None]]:
    """The probe ratio as the default explanation on a class, the model's offset by evidence."""

    def view(models: TaskModels, node_class: str, size: Any, factor: Any) -> View:
        found = advisor_view(models, node_class, size, factor)
        reference = models.reference
        if reference is None or node_class == reference.reference:
            return found
        ratio = _line_ratio(models, node_class, size)
        if ratio is None or found.forecast.leader != "prior":
            return found
        effect = (models.effects or {}).get((reference.reference, node_class))
        key = None if effect is None else effect._replace(mix=pooling.Mix())
        others = [
            p
            for task, pairs in _CLASS_PAIRS.get(key, {}).items()
            if task != models.task
            for p in pairs
        ]
        record = models.classes[node_class]
        w = _weight(rule, _pairs(models, node_class), others, record.n)
        loc = ratio + w * (found.forecast.loc - ratio)
        forecast = found.forecast._replace(loc=loc)
        return found._replace(forecast=forecast, shared=forecast)

    site_of, calibration_effects = (
        transfer_evaluation.site_of,
        lotaru_evaluation._calibration_effects,
    )

    def galaxy_site(fitted: Any, train: str, target: str) -> Any:
        site, effect = site_of(fitted, train, target)
        table = _CLASS_PAIRS.setdefault(effect._replace(mix=pooling.Mix()), {})
        for f in fitted:
            effects = {(train, target): effect}
            models = TaskModels(f.runs.task, f.reference, site=site, effects=effects)
            for obs in f.runs.target:
                size = float(obs.input_bytes) if obs.input_bytes else None
                learnt = learn_run(models, target, size, positive(obs.runtime_s), factor=None)
                models = learnt.models
            table[f.runs.task] = _pairs(models, target)
        return site, effect

    def lotaru_effects(setting: Any, group: Any, target: str, k: int) -> Any:
        found = calibration_effects(setting, group, target, k)
        effect = next(iter(found.values()))._replace(mix=pooling.Mix())
        table = _CLASS_PAIRS.setdefault(effect, {})
        for fit in group:
            factor = class_factor(setting.reference, target, setting.scores, fit.model.cpu_weight)
            effects = {(setting.reference, target): effect}
            models = TaskModels(fit.task, fit.model, site=setting.site, effects=effects)
            for run in lotaru_evaluation.calibration_runs(fit.targets[target][0], k):
                size = float(run.input_bytes or 0) or None
                learnt = learn_run(models, target, size, positive(run.runtime_s), factor=factor)
                models = learnt.models
            table[fit.task] = _pairs(models, target)
        return found

    @contextlib.contextmanager
    def context() -> Iterator[None]:
        _CLASS_PAIRS.clear()
        with contextlib.ExitStack() as stack:
            for owner in (lotaru_evaluation, transfer_evaluation):
                stack.enter_context(patched(owner, "view", view))
            stack.enter_context(patched(transfer_evaluation, "site_of", galaxy_site))
            stack.enter_context(patched(lotaru_evaluation, "_calibration_effects", lotaru_effects))
            yield

    return context


def _model_alone() -> contextlib.AbstractContextManager[None]:
    """The model's forecast on a class once the task ran there, never the probe ratio."""
    return patched(pooling.Mix, "weight", lambda self: 1.0)


def _before(
    variant: Callable[[], contextlib.AbstractContextManager[None]],
) -> Callable[[], contextlib.AbstractContextManager[None]]:
    """A variant of the model's forecast alone, as they were measured before the mix."""

    @contextlib.contextmanager
    def context() -> Iterator[None]:
        with _model_alone(), variant():
            yield

    return context


#: Variants of the design before the probe ratio was mixed in: each with the model alone.
_BEFORE: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
    "no upward race (time order only)": lambda: patched(evidence.Evidence, "upward", _no_upward),
    "challengers of the prior need no significance": lambda: patched(
        evidence.Score, "significant", _always_significant
    ),
    "significance against every incumbent": lambda: patched(
        evidence.Evidence, "leader", _significant_everywhere
    ),
    "without the power law": _without("power"),
    "without the line": _without("line"),
    "a fit may say the runtime falls as the input grows": lambda: patched(
        evidence.Evidence, "fitted", _decreasing
    ),
    "fits answer beyond the sizes their runs span as at its edge": _supported,
    "one offset per task and class (no overhead / per-byte loads)": lambda: patched(
        task_model.Reference, "load", _one_offset
    ),
    "the reference's line carried to other classes in place of its leader": _line_carried,
    # the probe ratio in the class's race (issue 29's follow-up: the promise at +1 by construction)
    "the task's own ratio on the advisor's forecast once it ran (no pooling; one offset)": lambda: (
        patched(task_model, "task_offset", _own_ratio)
    ),
    "the plain probe ratio (on the reference's line) once the task ran": _raced("ratio"),
    "probe ratio unless the model beat it on the task's own runs (significant)": _raced("own"),
    "probe ratio unless the model beat it on the task's own runs": _raced("own-nosig"),
    "probe ratio unless the model beat it on the class's runs of all tasks (significant)": _raced(
        "pooled"
    ),
    "probe ratio unless the model beat it on the class's runs of all tasks": _raced("pooled-nosig"),
    "the same with the class's runs at the same number of runs seen (significant)": _raced(
        "position"
    ),
    "the same with the class's runs at the same number of runs seen": _raced("position-nosig"),
    "the task's own runs from two comparisons on (else the class's) (significant)": _raced(
        "own-first"
    ),
}
VARIANTS: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
    # the product: the probe ratio and the model mixed by the class's comparisons
    "chosen": contextlib.nullcontext,
    "two-part offset alone (before)": _model_alone,
    **{name: _before(variant) for name, variant in _BEFORE.items()},
}


def galaxy(data: Path, runs_file: Path) -> dict[str, dict[str, float]]:
    """Every pair of machines.json, pooled: method -> figures."""
    if not runs_file.exists():
        sys.path.insert(0, str(HERE))
        from galaxy_runs import convert

        convert(data, runs_file)
    observations = read_task_runs(runs_file)
    pairs = json.loads((data / "machines.json").read_text(encoding="utf-8"))["pairs"]
    scored = []
    for train, target, tools in pairs:
        runs = [r for r in task_runs(observations, train, target) if r.task in tools]
        # a tool of one pair is not the same task as in another (the unit of the comparisons)
        scored.extend(
            dataclasses.replace(s, task=f"{train}>{target} {s.task}")
            for s in score(runs, train, target, probe=True)
        )
    out: dict[str, dict[str, float]] = {}
    methods = sorted({s.method for s in scored})
    for method in methods:
        items = [s for s in scored if s.method == method]
        out[method] = {
            "n": len(items),
            "median_%": 100 * statistics.median(s.error for s in items),
            "p95_cover_%": 100 * sum(s.actual_s <= s.p95_s for s in items) / len(items),
            "le0": sum(s.predicted_s <= 0 for s in items),
        }
    for fold in sorted({s.fold for s in scored}):
        items = [s for s in scored if s.fold == fold and s.method in ("advisor", "median")]
        for method in ("advisor", "median"):
            errors = [s.error for s in items if s.method == method]
            out.setdefault(f"fold {fold}", {})[f"{method}_median_%"] = 100 * statistics.median(
                errors
            )
    return out | _beside(comparisons(scored, key=lambda s: (s.task, s.run), task=lambda s: s.task))


def _beside(rows: list[Comparison]) -> dict[str, dict[str, float]]:
    """'method / against' -> the ratio of their median errors, its interval, closer %."""
    return {
        f"{c.scope[:3] + ' ' if c.scope else ''}{c.method} / {c.against}": {
            "ratio": math.nan if c.ratio is None else c.ratio,
            "low": math.nan if c.low is None else c.low,
            "high": math.nan if c.high is None else c.high,
            "closer_%": 100 * c.closer,
        }
        for c in rows
    }


def lotaru(traces: Path) -> dict[str, dict[str, float]]:
    """Leave one workflow out, pooled: 'scope method' -> figures; per fold too."""
    done = evaluate(EvaluateRequest(traces, calibrate=True))
    out: dict[str, dict[str, float]] = {}
    for row in done.folds:
        if not row.scheme.startswith("leave-one-workflow"):
            continue
        summary = row.summary
        out[f"{row.fold} {row.scope[:3]} {row.method}"] = {
            "n": summary.n,
            "median_%": 100 * (summary.median_error or 0.0),
            "p95_cover_%": 100 * (summary.p95_coverage or 0.0),
        }
    return out | _beside([c for c in done.comparisons if c.against == "paper"
                          or c.against.startswith("probe+")])  # fmt: skip


def cached(path: Path, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The JSON at path, computed and written first if it is not there."""
    if path.exists():
        loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return loaded
    found = compute()
    path.write_text(json.dumps(found, indent=1), encoding="utf-8")
    return found


def _cell(name: str, value: Any) -> str:
    if not isinstance(value, float):
        return f"{name} {value}"
    return f"{name} {value:6.3f}" if name in ("ratio", "low", "high") else f"{name} {value:8.1f}"


def _print(title: str, rows: dict[str, dict[str, float]]) -> None:
    print(f"\n### {title}")
    for key, figures in rows.items():
        cells = "  ".join(_cell(k, v) for k, v in figures.items())
        print(f"{key:40s} {cells}")


def main() -> None:
    """Every variant on both data sets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "advisor-model-choices"
    )
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    for number, name in enumerate(args.variants.split(",")):
        slug = f"v{zlib.crc32(name.encode()):08x}"  # a variant keeps its results when others come
        with VARIANTS[name]():
            found_galaxy = cached(
                args.cache / f"{slug}-galaxy.json",
                lambda: galaxy(args.data / "galaxy", args.cache / "galaxy-runs.json"),
            )
            found_lotaru = cached(
                args.cache / f"{slug}-lotaru.json", lambda: lotaru(args.data / "lotaru")
            )
        print(f"\n## variant {number + 1}: {name}")
        _print("Galaxy, every pair pooled, cross-validated across tools", found_galaxy)
        _print("Lotaru, leave one workflow out", found_lotaru)


if __name__ == "__main__":
    main()
