"""A Gantt chart of a plan as PNG (matplotlib from the ``plots`` extra, imported only here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.errors import InputError
from advisor.planner.scheduling.plan import Plan


def save_gantt(plan: Plan, path: str | Path) -> None:
    """One row per used slot, one bar per task, coloured by workflow."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError(
            "--gantt needs matplotlib", hint="pip install 'slurm-advisor[plots]'"
        ) from None
    problem = plan.problem
    slots = sorted({(p.node, p.core) for p in plan.placements})
    row_of = {slot: row for row, slot in enumerate(slots)}
    colours: Any = plt.get_cmap("tab10")
    figure, axes = plt.subplots(figsize=(10, max(2.0, 0.3 * len(slots) + 1)))
    for p in plan.placements:
        axes.barh(
            row_of[(p.node, p.core)],
            p.finish_s - p.start_s,
            left=p.start_s,
            color=colours(problem.workflow_of[p.task] % 10),
            edgecolor="black",
            linewidth=0.3,
        )
    axes.set_yticks(range(len(slots)))
    axes.set_yticklabels([f"{problem.nodes[n].name}:{c}" for n, c in slots], fontsize=7)
    axes.invert_yaxis()
    axes.set_xlabel("time (s)")
    axes.set_title(f"{plan.algorithm} plan, makespan {plan.makespan_s:.1f} s")
    figure.tight_layout()
    try:
        figure.savefig(path, dpi=120)
    except OSError as error:
        raise InputError(f"cannot write: {error}", source=str(path)) from None
    finally:
        plt.close(figure)
