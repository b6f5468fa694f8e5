"""Splitting ``advisor sbatch`` arguments: the advisor's options, sbatch's options, the script.

The split follows sbatch's own parser (getopt_long in POSIX mode, see sbatch_options) so that a
value is never mistaken for an option: in ``--comment --advisor-task`` the comment is
"--advisor-task".  Advisor options are recognised only by their exact names, anywhere before
the script; everything else is kept verbatim and in order, so what reaches sbatch is the user's
argv minus the advisor's options, plus only what the wrapper adds (inserted just before the
script).

The advisor's options are all named ``--advisor-*`` (besides ``-h``/``--help``, which submit
nothing either way): getopt_long takes any unique prefix of a long option, so a name such as
``--task`` is sbatch's ``--tasks-per-node`` and ``--input`` its own option.  The rule, checked
against the installed sbatch by the tests: no advisor option is an sbatch option or a prefix of
one, and none starts with one.  The names used before (``--task``, ``--policy``...) now reach
sbatch as what sbatch makes of them; the wrapper says so in one warning line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from advisor.errors import UsageError
from advisor.lite import NamedTuple
from advisor.text import ascii_int
from advisor.wrapper.sbatch_options import (
    LONG_OPTIONS,
    SHORT_OPTIONS,
    AmbiguousOption,
    Arg,
    resolve_long,
)

POLICIES = ("fill", "tighten", "guarded", "advise")
PICKS = ("earliest",)
DEFAULT_QUANTILE = 0.95
DEFAULT_MARGIN = 0.10

#: What every advisor option starts with: no sbatch option starts with "ad" (sbatch_options).
PREFIX = "--advisor-"
#: Advisor options that take a value.
VALUED = tuple(
    PREFIX + name
    for name in ("task", "input", "policy", "pick", "quantile", "margin", "db", "format", "insitu",
                 "steps")
)  # fmt: skip
#: Advisor options without a value; -h/--help are sbatch's too, and shadowed (nothing is submitted).
FLAGS = (PREFIX + "dry-run", PREFIX + "explain")
HELP_FLAGS = ("--help", "-h")
#: The names of the advisor's options until issue 16 that are not sbatch's own exact names:
#: they now reach sbatch (``--task`` as ``--tasks-per-node``, the rest rejected as unknown).
RETIRED = (
    "--task", "--policy", "--pick", "--quantile", "--margin", "--db", "--format", "--insitu",
    "--steps", "--dry-run", "--explain",
)  # fmt: skip


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


class Option(NamedTuple):
    """One sbatch option as getopt sees it: the full long name and its value, if any."""

    name: str
    value: str | None = None


class SbatchArgv(NamedTuple):
    """sbatch's arguments, verbatim, with where sbatch finds the options and the script."""

    args: tuple[str, ...]
    options: tuple[Option, ...] = ()
    #: Index in args where the options end (the script, ``--``, or len(args)).
    options_end: int = 0
    #: Index of the script in args; None when sbatch reads it from stdin (or with --wrap).
    script_index: int | None = None
    #: Tokens sbatch will reject (unknown or ambiguous options, a value missing).
    invalid: tuple[str, ...] = ()
    #: A heterogeneous job (``:`` between components).
    hetjob: bool = False

    @property
    def script(self) -> str | None:
        """The script path as given."""
        return None if self.script_index is None else self.args[self.script_index]

    def with_options(self, added: Sequence[str]) -> tuple[str, ...]:
        """The argv with added options just before the script: later options win in sbatch."""
        at = self.options_end
        return (*self.args[:at], *added, *self.args[at:])


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


class _Scanner:
    """One left-to-right pass over the tokens, like getopt, collecting both kinds of option."""

    def __init__(self, tokens: Sequence[str], *, advisor: bool) -> None:
        self.tokens = list(tokens)
        self.advisor = advisor
        self.kept: list[str] = []
        self.options: list[Option] = []
        self.invalid: list[str] = []
        self.settings: dict[str, object] = {}
        self.inputs: list[str] = []
        self.retired: list[str] = []
        self.hetjob = False
        #: Index in kept of a ``--`` that ended the options.
        self.separator: int | None = None

    def _advisor_option(self, arg: str, rest: list[str]) -> bool:
        name, eq, attached = arg.partition("=")
        if name in HELP_FLAGS and not eq:
            self.settings["help"] = True
            return True
        if name in FLAGS and not eq:
            self.settings[name[len(PREFIX) :].replace("-", "_")] = True
            return True
        if name not in VALUED:
            return False
        if eq:
            value = attached
        elif rest:
            value = rest.pop(0)
        else:
            raise UsageError(f"advisor sbatch: {name} needs a value")
        if name == PREFIX + "input":
            self.inputs.append(value)
        else:
            self.settings[name[len(PREFIX) :]] = value
        return True

    def _long(self, arg: str, rest: list[str]) -> None:
        if self.advisor and arg.partition("=")[0] in RETIRED:
            self.retired.append(arg.partition("=")[0])
        name, eq, attached = arg[2:].partition("=")
        try:
            full = resolve_long(name)
        except AmbiguousOption:
            self.invalid.append(arg)
            return
        kind = LONG_OPTIONS[full]
        if kind is Arg.NONE:
            if eq:
                self.invalid.append(arg)
            self.options.append(Option(full))
        elif eq or kind is Arg.OPTIONAL:
            self.options.append(Option(full, attached if eq else None))
        else:
            self._next_value(full, arg, rest)

    def _next_value(self, full: str, arg: str, rest: list[str]) -> None:
        """A required value in the next word, whatever it looks like (getopt does the same)."""
        if rest:
            value = rest.pop(0)
            self.kept.append(value)
            self.options.append(Option(full, value))
        else:
            self.invalid.append(arg)

    def _short(self, arg: str, rest: list[str]) -> None:
        letters = arg[1:]
        while letters:
            letter, letters = letters[0], letters[1:]
            full = SHORT_OPTIONS.get(letter)
            if full is None:
                self.invalid.append(f"-{letter}")
                continue
            kind = LONG_OPTIONS[full]
            if kind is Arg.NONE:
                self.options.append(Option(full))
            elif letters or kind is Arg.OPTIONAL:
                self.options.append(Option(full, letters or None))
                letters = ""
            else:
                self._next_value(full, arg, rest)

    def scan(self) -> int | None:
        """Consume options; the index in kept where the non-options start (None: none do)."""
        rest = self.tokens
        while rest:
            arg = rest.pop(0)
            if self.advisor and self._advisor_option(arg, rest):
                continue
            if arg == "--":
                self.separator = len(self.kept)
                self.kept.append(arg)
                self.kept.extend(rest)
                return self.separator + 1
            if arg == ":":
                self.hetjob = True
                self.kept.append(arg)
                continue
            if arg.startswith("--"):
                self.kept.append(arg)
                self._long(arg, rest)
            elif arg.startswith("-") and arg != "-":
                self.kept.append(arg)
                self._short(arg, rest)
            else:
                at = len(self.kept)
                self.kept.append(arg)
                self.kept.extend(rest)
                return at
        return None


def parse_options(tokens: Sequence[str]) -> tuple[tuple[Option, ...], tuple[str, ...]]:
    """The options in a list of words that holds only options (#SBATCH lines), and the invalid ones."""
    scanner = _Scanner(tokens, advisor=False)
    scanner.scan()
    return tuple(scanner.options), tuple(scanner.invalid)


def _advisor_options(settings: dict[str, object], inputs: list[str]) -> AdvisorOptions:
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
    if steps is not None:
        from advisor.insitu import MAX_STEPS  # loads only with --advisor-steps
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
    scanner = _Scanner(argv, advisor=True)
    start = scanner.scan()
    kept = tuple(scanner.kept)
    end = len(kept) if start is None else start
    script_index: int | None = start
    if scanner.separator is not None:
        end = scanner.separator
        script_index = end + 1 if end + 1 < len(kept) else None
    options = tuple(scanner.options)
    if any(o.name == "wrap" for o in options):
        script_index = None
    sbatch = SbatchArgv(
        args=kept,
        options=options,
        options_end=end,
        script_index=script_index,
        invalid=tuple(scanner.invalid),
        hetjob=scanner.hetjob,
    )
    advisor = _advisor_options(scanner.settings, scanner.inputs)
    return CommandLine(advisor, sbatch, kept, tuple(dict.fromkeys(scanner.retired)))
