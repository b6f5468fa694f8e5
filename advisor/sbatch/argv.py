"""The argv of ``advisor sbatch``, split into the advisor's options, sbatch's options and the script.

The split follows sbatch's own parser (advisor.sbatch.options) so that a value is never
mistaken for an option: in ``--comment --advisor-task`` the comment is "--advisor-task".
Advisor options are recognised only by their exact names, anywhere before the script;
everything else is kept verbatim and in order, so what reaches sbatch is the user's argv minus
the advisor's options, plus only what the wrapper adds (inserted just before the script).
The advisor's options are all named ``--advisor-*`` (besides ``-h``/``--help``, which submit
nothing either way): getopt_long takes any unique prefix of a long option, so a name such as
``--task`` is sbatch's ``--tasks-per-node`` and ``--input`` its own option.  The rule, checked
against the installed sbatch by the tests: no advisor option is an sbatch option or a prefix of
one, and none starts with one.  The names used before (``--task``, ``--policy``...) now reach
sbatch as what sbatch makes of them; the wrapper says so in one warning line.  What the
advisor's options' values mean is the advice's business (advisor.advice.settings).
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.errors import UsageError
from advisor.lite import NamedTuple
from advisor.sbatch.options import LONG_OPTIONS, SHORT_OPTIONS, AmbiguousOption, Arg, resolve_long

#: What every advisor option starts with: no sbatch option starts with "ad" (the option table).
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


class SplitArgv(NamedTuple):
    """``advisor sbatch`` arguments split: sbatch's, verbatim, and the advisor's, as given."""

    sbatch: SbatchArgv
    #: The advisor's options by name without the prefix (``dry_run`` for a flag, True): as given.
    settings: dict[str, object]
    #: Every ``--advisor-input``, in order.
    inputs: tuple[str, ...] = ()
    #: Options given by a name the advisor used before (RETIRED), now sbatch's.
    retired: tuple[str, ...] = ()


def split_command_line(argv: Sequence[str]) -> SplitArgv:
    """Split ``advisor sbatch`` arguments; UsageError only for an advisor option without a value."""
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
    return SplitArgv(
        sbatch, scanner.settings, tuple(scanner.inputs), tuple(dict.fromkeys(scanner.retired))
    )
