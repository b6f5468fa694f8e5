"""The site's own prediction errors make the intervals: a conformal correction of P90 and P95.

Every forecast a task record makes before it learns a run is scored in units of its own scale
(advisor.models.evidence: ``calibration`` for a class's own forecasts, ``transfer_calibration``
for forecasts carried from another class).  Pooled over the site's records, the q-quantile of
those standardized errors is the multiplier of the scale that covered a fraction q of later runs
(split conformal prediction, Vovk et al. 2005; Lei et al. 2018): the rank ceil((n + 1)·q) of n
exchangeable scores.  It replaces Student-t's quantile wherever the site has enough scores, so
the wrapper's limits are as tight as the site's evidence allows, and no tighter; and it moves
with the site: a site whose tasks are noisier than their models say gets wider limits.

``Site.scale`` is the typical spread of a task's log runtime at the site (the median of its
records' scales): the one pseudo-run of spread a task with few runs is given.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from advisor.lite import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from typing import Any

#: The spread assumed before the site has any task with two runs: a factor of two (log 2), so
#: a single run says the next is within about a factor of four either way (95 %).  It is a
#: statement of ignorance, not a fit; the site's own runs replace it (Site.scale).
DEFAULT_SCALE = math.log(2.0)
#: The quantiles the wrapper and the planner read.
QUANTILES = (0.90, 0.95)


def conformal_quantile(scores: Iterable[float], q: float) -> float | None:
    """The rank-ceil((n+1)q) score of n (None when n is too small for that rank)."""
    ordered = sorted(scores)
    n = len(ordered)
    rank = math.ceil((n + 1) * q)
    if n == 0 or rank > n:
        return None
    return ordered[rank - 1]


def multipliers(scores: Iterable[float]) -> tuple[float, float] | None:
    """(k90, k95) from standardized errors; None until there are enough for P95 (19)."""
    values = list(scores)
    k90, k95 = (conformal_quantile(values, q) for q in QUANTILES)
    if k90 is None or k95 is None:
        return None
    k90 = max(0.0, k90)  # a quantile above the median stays above it
    return k90, max(k90, k95)


class Site(NamedTuple):
    """What a site's records say about all its tasks: typical spread, conformal multipliers."""

    scale: float = DEFAULT_SCALE
    own: tuple[float, float] | None = None
    transferred: tuple[float, float] | None = None
    #: how many scores each multiplier rests on
    own_scores: int = 0
    transferred_scores: int = 0

    def to_json(self) -> dict[str, Any]:
        """Plain numbers (the site row of task_models)."""
        return {
            "scale": self.scale,
            "own": None if self.own is None else list(self.own),
            "transferred": None if self.transferred is None else list(self.transferred),
            "own_scores": self.own_scores,
            "transferred_scores": self.transferred_scores,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Site:
        """Inverse of to_json."""
        own, transferred = doc.get("own"), doc.get("transferred")
        return cls(
            float(doc.get("scale", DEFAULT_SCALE)),
            None if own is None else (float(own[0]), float(own[1])),
            None if transferred is None else (float(transferred[0]), float(transferred[1])),
            int(doc.get("own_scores", 0)),
            int(doc.get("transferred_scores", 0)),
        )


def site_from(scales: Iterable[float], own: Iterable[float], transferred: Iterable[float]) -> Site:
    """The site from its records' scales and standardized errors."""
    found = sorted(s for s in scales if s > 0 and math.isfinite(s))
    scale = found[len(found) // 2] if found else DEFAULT_SCALE
    own_scores, transferred_scores = list(own), list(transferred)
    return Site(
        scale,
        multipliers(own_scores),
        multipliers(transferred_scores),
        len(own_scores),
        len(transferred_scores),
    )
