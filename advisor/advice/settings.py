"""What the advice can be asked, the site's defaults, and a job's choice of them from its command line.

The policies and the pick, the quantile and margin of a limit, the most in situ steps, and the
``Literal`` types of what the advice records (its action, its basis).  ``AdvisorOptions`` is one
job's choice, read from the ``--advisor-*`` options that advisor.sbatch.argv splits off the
``advisor sbatch`` argv.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from advisor.errors import UsageError
from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.sbatch.argv import PREFIX, SbatchArgv, split_command_line
from advisor.text import ascii_int

if TYPE_CHECKING:
    from typing import Literal

    #: What the wrapper did to the job's limit: set one (no --time given), lowered the user's
    #: (tighten; guarded while the guard is alive), kept it, only advised, nothing (no model
    #: or history, or the limits unusable), or fell back to the user's arguments (explain).
    Action = Literal["set", "lowered", "guarded", "kept", "advise", "none", "fallback"]
    #: Where the limits come from: the task model's forecasts, the history policy (no task
    #: model), or the in situ steps' predictor.
    Basis = Literal["model", "history", "insitu"]


#: What each policy does with the job's own --time (advisor.advice.limits.decide).
POLICIES = ("fill", "tighten", "guarded", "advise")
PICKS = ("earliest",)
#: The site defaults of a limit: the upper quantile of the runtime on the slowest class, plus a margin.
DEFAULT_QUANTILE = 0.95
DEFAULT_MARGIN = 0.10
#: The most steps a makespan is predicted for (``advisor insitu --steps``, ``advisor sbatch
#: --advisor-steps``): a million steps a second for thirty years; more is a typo, and 10**400
#: steps overflowed the float makespan.
MAX_STEPS = 10**15


class AdvisorOptions(NamedTuple):
    """What the user asked of the advisor itself."""

    task: str | None = None
    inputs: tuple[str, ...] = ()
    dry_run: bool = False
    explain: bool = False
    policy: str = "fill"
    pick: str | None = None
    quantile: float = DEFAULT_QUANTILE
    margin: float = DEFAULT_MARGIN
    db: str | None = None
    fmt: str | None = None
    help: bool = False
    #: In situ step file: the limit comes from the predicted makespan of ``steps`` steps.
    insitu: str | None = None
    steps: int | None = None


class CommandLine(NamedTuple):
    """``advisor sbatch`` arguments, split."""

    advisor: AdvisorOptions
    sbatch: SbatchArgv
    #: The user's arguments with the advisor's removed: what sbatch gets when we fail open.
    original: tuple[str, ...] = ()
    #: Options given by a name the advisor used before (RETIRED), now sbatch's.
    retired: tuple[str, ...] = ()

    def retired_warning(self) -> str | None:
        """One line about RETIRED names among the options, or None."""
        if not self.retired:
            return None
        given = ", ".join(self.retired)
        meant = ", ".join(PREFIX + name[2:] for name in self.retired)
        are, s = ("are", "s") if len(self.retired) > 1 else ("is", "")
        return (
            f"advisor: warning: sbatch reads {given} as its own option{s}; "
            f"the advisor's {are} {meant}"
        )


def _float(option: str, text: str, low: float, high: float, *, open_high: bool) -> float:
    try:  # ASCII only: float() also reads '٠.٩' and '０.９'
        value = float(text) if text.isascii() else math.nan
    except ValueError:
        value = math.nan
    ok = math.isfinite(value) and low <= value and (value < high if open_high else value <= high)
    if not ok or (option.endswith("quantile") and value <= low):
        raise UsageError(
            f"advisor sbatch: {option} {text!r}: expected a number in the documented range"
        )
    return value


def _choice(option: str, text: str, choices: Sequence[str]) -> str:
    if text not in choices:
        raise UsageError(f"advisor sbatch: {option} {text!r}: expected one of {', '.join(choices)}")
    return text


def advisor_options(settings: dict[str, object], inputs: Sequence[str]) -> AdvisorOptions:
    """The advisor's options' values read and checked: UsageError names the option."""

    def text(key: str) -> str | None:
        value = settings.get(key)
        return value if isinstance(value, str) else None

    quantile, margin = text("quantile"), text("margin")
    policy, pick, task = text("policy"), text("pick"), text("task")
    if task is not None and not task.strip():
        raise UsageError(f"advisor sbatch: {PREFIX}task needs a non-empty name")
    insitu, steps = text("insitu"), text("steps")
    if steps is not None and insitu is None:
        raise UsageError(f"advisor sbatch: {PREFIX}steps goes with {PREFIX}insitu STEPS_FILE")
    count = ascii_int(steps, max_digits=16) if steps is not None else None
    if steps is not None and not (count is not None and 0 < count <= MAX_STEPS):
        raise UsageError(
            f"advisor sbatch: {PREFIX}steps needs a whole number of steps, got {steps!r}"
        )
    return AdvisorOptions(
        insitu=insitu,
        steps=count,
        task=task,
        inputs=tuple(inputs),
        dry_run=bool(settings.get("dry_run")),
        explain=bool(settings.get("explain")),
        policy=_choice(PREFIX + "policy", policy, POLICIES) if policy is not None else "fill",
        pick=_choice(PREFIX + "pick", pick, PICKS) if pick is not None else None,
        quantile=_float(PREFIX + "quantile", quantile, 0.0, 1.0, open_high=True)
        if quantile is not None
        else DEFAULT_QUANTILE,
        margin=_float(PREFIX + "margin", margin, 0.0, 10.0, open_high=False)
        if margin is not None
        else DEFAULT_MARGIN,
        db=text("db"),
        fmt=text("format"),
        help=bool(settings.get("help")),
    )


def parse_command_line(argv: Sequence[str]) -> CommandLine:
    """Split ``advisor sbatch`` arguments; UsageError only for a bad advisor option value."""
    split = split_command_line(argv)
    advisor = advisor_options(split.settings, split.inputs)
    return CommandLine(advisor, split.sbatch, split.sbatch.args, split.retired)
