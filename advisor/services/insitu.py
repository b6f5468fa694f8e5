"""``advisor insitu``: read a file of per-step stage times and apply the in situ step model.

The reading is advisor.insitu.steps', the steady window and the figures advisor.insitu.report's
(the model itself is advisor.insitu.model); returns the ``InSituReport``, whose ``to_json`` is
schemas/insitu-report.json.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.insitu.report import InSituReport, analyse_steps
from advisor.insitu.steps import read_steps


@dataclass(frozen=True)
class InSituRequest:
    """The step file, and what to predict from it."""

    steps_file: str
    #: the m to predict the makespan of (default: the number of steps in the file)
    steps: int | None = None
    #: use only the file's first steps (predict a run from its beginning)
    first: int | None = None
    #: frames the buffer holds (default 1, or the JSON file's value)
    buffer: int | None = None
    #: balanced when E >= 1 - balance_tolerance
    balance_tolerance: float = 0.05


def insitu(request: InSituRequest) -> InSituReport:
    """Read the step file and analyse its steady steps."""
    table = read_steps(request.steps_file, buffer_frames=request.buffer)
    return analyse_steps(
        table,
        steps=request.steps,
        first_steps=request.first,
        balance_tolerance=request.balance_tolerance,
    )
