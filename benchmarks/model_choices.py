"""The runtime models' choices, cross-validated on both development data sets (issue 29).

Run: ``.venv/bin/python benchmarks/model_choices.py [--data ../shared/data] [--cache DIR]
[--variants NAME,...]``.

Each variant changes one choice of the advisor's model and reruns both evaluations:

* Galaxy (``advisor evaluate --runs`` on every [A, B, tools] pair of galaxy/machines.json,
  pooled): cross-validated across tools (five folds of tools per pair); the advisor with
  nothing on B and after its first 1-3 runs there, beside the plain per-task median of A, Lotaru
  as published, the plain probe ratio and A's least-squares line scaled by the first run(s);
* Lotaru (``advisor evaluate --traces --calibrate``): leave one workflow out, homogeneous
  (local) and heterogeneous (A1, A2, N1, N2, C2), zero-shot and after 1-3 calibration runs.

Printed per variant: the pooled median relative error (%), the P95 coverage (%) and how many
predictions were <= 0 s, for every method.  Results are kept under --cache (one JSON per
variant and data set) so a rerun prints at once; delete the folder to recompute.  Not a speed
benchmark: it measures the figures docs/performance.md and docs/models.md quote, and how much each choice moves them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import advisor.models.evidence as evidence
import advisor.models.task_model as task_model
from advisor.imports.json_files import read_task_runs
from advisor.models.transfer_evaluation import score, task_runs
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
        line = None if found is None or size is None else self.evidence.locations(size)[1]
        return found if line is None else found._replace(loc=line)

    return patched(task_model.Reference, "forecast", forecast)


VARIANTS: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
    "chosen": contextlib.nullcontext,
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
        scored.extend(score(runs, train, target, probe=True))
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
    return out


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
    return out


def cached(path: Path, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The JSON at path, computed and written first if it is not there."""
    if path.exists():
        loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return loaded
    found = compute()
    path.write_text(json.dumps(found, indent=1), encoding="utf-8")
    return found


def _print(title: str, rows: dict[str, dict[str, float]]) -> None:
    print(f"\n### {title}")
    for key, figures in rows.items():
        cells = "  ".join(f"{k} {v:8.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items())  # fmt: skip
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
        slug = f"v{list(VARIANTS).index(name)}"
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
