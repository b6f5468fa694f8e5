"""The report pictures, as PNG: the error CDF per method, limit vs runtime, memory vs peak.

matplotlib comes from the ``plots`` extra and is imported here only, when a picture is asked
for; without it the command stops with a one-line error (exit 2) before writing anything.
The plan's Gantt chart is advisor.planner.gantt (``advisor plan --gantt``).

* Error CDF (as the Lotaru paper's figures): for each method, the share of predictions whose
  relative error is at most x.  A curve further up and to the left is better; where it crosses
  50 % is the median error.  The x axis is logarithmic because errors span orders of magnitude
  (users' own limits are often 10× the runtime).
* Limit vs runtime: each job's time limit against its elapsed time, log-log, with the line
  limit = runtime.  Points far above the line reserved time they never used; points on it were
  killed at their limit (TIMEOUT, drawn as crosses).
* Memory: each job's requested memory per node (and the advisor's P95 for it) against its
  peak, log-log, with the line request = peak; OUT_OF_MEMORY jobs as crosses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from advisor.errors import InputError
from advisor.reports.jobs import JobView
from advisor.reports.memory import MemoryJob
from advisor.reports.stats import median

#: Seconds and their labels for log-scaled time axes.
_TIME_TICKS = (
    (1, "1 s"), (10, "10 s"), (60, "1 min"), (600, "10 min"), (3600, "1 h"), (86400, "1 d"),
    (864000, "10 d"), (8640000, "100 d"),
)  # fmt: skip
#: Finer ticks for a narrow range (fewer than three coarse ticks in it).
_FINE_TICKS = (
    (1, "1 s"), (10, "10 s"), (30, "30 s"), (60, "1 min"), (300, "5 min"), (600, "10 min"),
    (1800, "30 min"), (3600, "1 h"), (4 * 3600, "4 h"), (12 * 3600, "12 h"), (86400, "1 d"),
    (7 * 86400, "1 w"), (30 * 86400, "30 d"),
)  # fmt: skip
#: Line styles cycled with the colours, so methods with equal errors stay distinguishable.
_LINE_STYLES = ("-", "--", "-.", ":")
#: Errors below this (0.1 %) are drawn at it: a log axis has no zero.
_ERROR_FLOOR_PCT = 0.1


def pyplot() -> Any:
    """matplotlib.pyplot on the file-only Agg backend, or a one-line InputError (exit 2)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError(
            "--plot needs matplotlib", hint="pip install 'slurm-advisor[plots]'"
        ) from None
    return plt


def save_figure(plt: Any, figure: Any, path: str | Path) -> None:
    """Write the figure as PNG and close it; an unwritable path is an InputError naming it."""
    try:
        figure.savefig(path, dpi=120)
    except OSError as error:
        raise InputError(f"cannot write: {error}", source=str(path)) from None
    finally:
        plt.close(figure)


def cdf_points(errors: Sequence[float]) -> tuple[list[float], list[float]]:
    """(errors in percent, floored for the log axis, sorted; cumulative share in percent)."""
    ordered = sorted(max(_ERROR_FLOOR_PCT, 100.0 * e) for e in errors)
    n = len(ordered)
    return ordered, [100.0 * (i + 1) / n for i in range(n)]


def save_error_cdf(errors: Mapping[str, Sequence[float]], path: str | Path, *, title: str) -> None:
    """One step line per method: cumulative share of predictions vs relative error."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(8, 5))
    drawn = [(method, values) for method, values in sorted(errors.items()) if values]
    for index, (method, values) in enumerate(drawn):
        xs, ys = cdf_points(values)
        axes.step(
            [xs[0], *xs],
            [0.0, *ys],
            where="post",
            linewidth=1.8,
            linestyle=_LINE_STYLES[index % len(_LINE_STYLES)],
            label=f"{method} (n={len(values)}, median {100 * (median(values) or 0):.1f} %)",
        )
    for share in (50, 90):
        axes.axhline(share, color="grey", linewidth=0.6, linestyle=":")
    axes.set_xscale("log")
    axes.xaxis.set_major_formatter(plt.FuncFormatter(lambda value, _: f"{value:g} %"))
    axes.set_ylim(0, 100)
    axes.set_xlabel("relative error |predicted − actual| / actual (%, log scale)")
    axes.set_ylabel("predictions with at most this error (%)")
    axes.set_title(title)
    axes.grid(True, which="major", linewidth=0.4, alpha=0.6)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc="lower right", fontsize=8, title="method", title_fontsize=8)
    else:
        axes.text(
            0.5,
            0.5,
            "no completed advised jobs in the selection",
            ha="center",
            transform=axes.transAxes,
        )
    figure.tight_layout()
    save_figure(plt, figure, path)


def limit_points(jobs: Sequence[JobView]) -> dict[str, list[tuple[float, float, bool]]]:
    """(runtime s, limit s, timed out) per series: limits without the advisor, and the advisor's."""
    out: dict[str, list[tuple[float, float, bool]]] = {
        "limit without the advisor": [],
        "advisor's limit": [],
    }
    for job in jobs:
        runtime = float(max(1, job.elapsed_s))
        advice = job.advice
        without = job.timelimit_s if advice is None else advice.without_s
        if without:
            killed = job.timed_out and (advice is None or not advice.applied)
            out["limit without the advisor"].append((runtime, float(without), killed))
        if advice is not None:
            out["advisor's limit"].append(
                (runtime, float(advice.limit_s), job.timed_out and advice.applied)
            )
    return out


def _time_axis(plt: Any, axis: Any, low: float, high: float) -> None:
    axis.set_minor_formatter(plt.NullFormatter())
    ticks = [(s, label) for s, label in _TIME_TICKS if low <= s <= high]
    if len(ticks) < 3:
        ticks = [(s, label) for s, label in _FINE_TICKS if low <= s <= high] or list(
            _TIME_TICKS[:2]
        )
    axis.set_ticks([s for s, _ in ticks])
    axis.set_ticklabels([label for _, label in ticks])


def save_limit_scatter(jobs: Sequence[JobView], path: str | Path, *, title: str) -> None:
    """Time limit against elapsed time, log-log, with the line limit = runtime."""
    save_limit_series(limit_points(jobs), path, title=title)


def save_limit_series(
    series: Mapping[str, Sequence[tuple[float, float, bool]]], path: str | Path, *, title: str
) -> None:
    """The limit-vs-runtime picture of two series, the limits before the advisor and its own."""
    plt = pyplot()
    values = [v for points in series.values() for p in points for v in p[:2]]
    low, high = (min(values) / 2, max(values) * 2) if values else (1.0, 3600.0)
    figure, axes = plt.subplots(figsize=(7, 6))
    styles = (("tab:blue", 14), ("tab:orange", 18))
    for (name, points), (colour, size) in zip(series.items(), styles, strict=True):
        ran = [p for p in points if not p[2]]
        killed = [p for p in points if p[2]]
        if ran:
            axes.scatter(
                [p[0] for p in ran],
                [p[1] for p in ran],
                s=size,
                alpha=0.45,
                color=colour,
                edgecolors="none",
                label=f"{name} ({len(points)} jobs)",
                rasterized=True,
            )
        if killed:
            axes.scatter(
                [p[0] for p in killed],
                [p[1] for p in killed],
                s=36,
                marker="x",
                color=colour,
                linewidths=1.2,
                label=f"{name}: killed at it ({len(killed)})",
            )
    axes.plot([low, high], [low, high], color="black", linewidth=1, label="limit = runtime")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    axes.set_ylim(low, high)
    _time_axis(plt, axes.xaxis, low, high)
    _time_axis(plt, axes.yaxis, low, high)
    axes.set_xlabel("actual runtime, elapsed (log scale)")
    axes.set_ylabel("time limit (log scale)")
    axes.set_title(f"{title}\npoints above the line reserved time they never used", fontsize=11)
    axes.grid(True, which="major", linewidth=0.4, alpha=0.6)
    axes.set_aspect("equal")
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    save_figure(plt, figure, path)


def save_memory_scatter(jobs: Sequence[MemoryJob], path: str | Path, *, title: str) -> None:
    """Requested (and the advisor's) memory per node against each job's peak, log-log."""
    plt = pyplot()
    measured = [j for j in jobs if j.peak_mb and j.requested_mb]
    series = {
        "requested": [(j.peak_mb or 0.0, j.requested_mb or 0.0, j.oom) for j in measured],
        "the advisor's P95": [
            (j.peak_mb or 0.0, j.advised_mb, j.oom) for j in measured if j.advised_mb is not None
        ],
    }
    values = [v / 1024 for points in series.values() for p in points for v in p[:2]]
    low, high = (min(values) / 2, max(values) * 2) if values else (0.01, 100.0)
    figure, axes = plt.subplots(figsize=(7, 6))
    for (name, points), colour in zip(series.items(), ("tab:blue", "tab:orange"), strict=True):
        ran = [p for p in points if not p[2]]
        killed = [p for p in points if p[2]]
        if ran:
            axes.scatter([p[0] / 1024 for p in ran], [p[1] / 1024 for p in ran], s=14,
                         alpha=0.45, color=colour, edgecolors="none",
                         label=f"{name} ({len(points)} jobs)", rasterized=True)  # fmt: skip
        if killed:
            axes.scatter([p[0] / 1024 for p in killed], [p[1] / 1024 for p in killed], s=36,
                         marker="x", color=colour, linewidths=1.2,
                         label=f"{name}: OUT_OF_MEMORY ({len(killed)})")  # fmt: skip
    axes.plot([low, high], [low, high], color="black", linewidth=1, label="request = peak")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    axes.set_ylim(low, high)
    axes.set_xlabel("peak memory per node, GB (log scale)")
    axes.set_ylabel("memory per node, GB (log scale)")
    axes.set_title(f"{title}\npoints above the line held memory they never used", fontsize=11)
    axes.grid(True, which="major", linewidth=0.4, alpha=0.6)
    axes.set_aspect("equal")
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    save_figure(plt, figure, path)
