"""Reading a job's sbatch options as sbatch reads them: the option table, the argv, ``#SBATCH``.

One module for four steps (which sbatch options take a value, splitting the ``advisor sbatch``
argv, the script's ``#SBATCH`` lines, the precedence among them): the submit path needs all four
on every submission, and each module costs it ~80 µs to find and load (issue 17).  The sections
below follow that order.

**The option table** says which sbatch options take a value, to find the script in an argv
without running sbatch.  It was read off the installed sbatch (slurm-wlm 22.05.8, then 24.11.5)
by probing it: ``--NAME=x`` and ``--NAME`` for every option name in the man pages and in
libslurmfull's strings, ``-X`` and ``-Xq`` for every letter; getopt's own messages ("requires an
argument", "doesn't allow an argument") say which is which, and getopt itself lists every long
option that starts with a letter (``sbatch --c``: "option '--c' is ambiguous; possibilities:
..."), so none is missed: ``--cluster`` (an alias of ``--clusters``), ``--context`` and
``--ntasks-per-tres`` are in no man page.  It holds the options of both versions (the short ones
are the same), so that one table serves every cluster; ``ONLY_IN`` names those one version
lacks.  tests/integration/test_wrapper.py probes the installed sbatch again and compares both
ways.  sbatch parses with ``getopt_long`` in POSIX mode: options stop at the first non-option
(the script) or at ``--``; a long option may be abbreviated to any unambiguous prefix; an
optional value must be attached (``--nice=5``; ``--nice 5`` makes 5 the script).

**The argv** of ``advisor sbatch`` splits into the advisor's options, sbatch's options and the
script.  The split follows sbatch's own parser (the option table) so that a value is never
mistaken for an option: in ``--comment --advisor-task`` the comment is "--advisor-task".
Advisor options are recognised only by their exact names, anywhere before the script;
everything else is kept verbatim and in order, so what reaches sbatch is the user's argv minus
the advisor's options, plus only what the wrapper adds (inserted just before the script).
The advisor's options are all named ``--advisor-*`` (besides ``-h``/``--help``, which submit
nothing either way): getopt_long takes any unique prefix of a long option, so a name such as
``--task`` is sbatch's ``--tasks-per-node`` and ``--input`` its own option.  The rule, checked
against the installed sbatch by the tests: no advisor option is an sbatch option or a prefix of
one, and none starts with one.  The names used before (``--task``, ``--policy``...) now reach
sbatch as what sbatch makes of them; the wrapper says so in one warning line.

**#SBATCH lines** are read the way sbatch reads them (src/sbatch/opt.c,
``_opt_batch_script``): lines that start with ``#SBATCH`` (``#SLURM`` is a deprecated spelling),
up to the first line that is neither blank nor a comment.  Each directive is split into words
with single and double quotes grouping, a backslash escaping the next character, and an
unquoted ``#`` starting a comment.  A ``#SBATCH hetjob`` line separates the components of a
heterogeneous job.  ``#BSUB`` and ``#PBS`` lines, which sbatch translates, are read by
advisor.wrapper.xlate.

**Precedence** (sbatch(1)) makes what the job asks for: options on the command line override
``SBATCH_*`` environment variables, which override the ``#BSUB`` or ``#PBS`` lines sbatch
translates (advisor.wrapper.xlate), which override ``#SBATCH`` lines in the script; among
options of one origin the last one wins.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping, Sequence

from advisor.errors import InputError, UsageError
from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.taskkey import task_key
from advisor.text import ascii_int

if TYPE_CHECKING:
    from typing import ClassVar


# The option table: which sbatch options take a value.


class Arg:
    """getopt's has_arg: one of three instances, compared by identity (enum costs ~1 ms)."""

    __slots__ = ("name",)
    NONE: ClassVar[Arg]
    REQUIRED: ClassVar[Arg]
    OPTIONAL: ClassVar[Arg]

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Arg.{self.name}"

    def __reduce__(self) -> str:
        return f"Arg.{self.name}"


Arg.NONE, Arg.REQUIRED, Arg.OPTIONAL = Arg("NONE"), Arg("REQUIRED"), Arg("OPTIONAL")


_NONE = (
    "contiguous help hold ignore-pbs no-requeue overcommit oversubscribe parsable quiet reboot "
    "requeue spread-job test-only usage use-min-nodes verbose version wait"
)
_REQUIRED = (
    "account acctg-freq array batch bb bbf begin chdir cluster cluster-constraint clusters "
    "comment constraint container context core-spec cores-per-socket cpu-freq cpus-per-gpu "
    "cpus-per-task deadline delay-boot dependency distribution error exclude export export-file "
    "extra-node-info gid gpu-bind gpu-freq gpus gpus-per-node gpus-per-socket gpus-per-task "
    "gres gres-flags hint input job-name kill-on-invalid-dep licenses mail-type mail-user "
    "mcs-label mem mem-bind mem-per-cpu mem-per-gpu mincpus network nodefile nodelist nodes ntasks "
    "ntasks-per-core ntasks-per-gpu ntasks-per-node ntasks-per-socket ntasks-per-tres open-mode "
    "output partition power prefer priority profile qos reservation signal sockets-per-node "
    "switches tasks-per-node thread-spec threads-per-core time time-min tmp uid wait-all-nodes "
    "wckey wrap"
)
_OPTIONAL = "exclusive get-user-env nice no-kill propagate"
# Added after 22.05 (present in 24.11).
_NONE_NEW = "stepmgr"
_REQUIRED_NEW = "autocomplete container-id extra segment tres-bind tres-per-task"
_OPTIONAL_NEW = "oom-kill-step resv-ports"

#: Every long option of sbatch 22.05 and 24.11 and whether it takes a value.
LONG_OPTIONS: dict[str, Arg] = {
    **dict.fromkeys(f"{_NONE} {_NONE_NEW}".split(), Arg.NONE),
    **dict.fromkeys(f"{_REQUIRED} {_REQUIRED_NEW}".split(), Arg.REQUIRED),
    **dict.fromkeys(f"{_OPTIONAL} {_OPTIONAL_NEW}".split(), Arg.OPTIONAL),
}

#: Options that only one version's sbatch has (``power`` was removed in 23.x).
ONLY_IN: dict[str, str] = {
    "power": "22.05",
    **dict.fromkeys(f"{_NONE_NEW} {_REQUIRED_NEW} {_OPTIONAL_NEW}".split(), "24.11"),
}

#: Short options and the long option each stands for.
SHORT_OPTIONS: dict[str, str] = {
    "a": "array", "b": "begin", "c": "cpus-per-task", "d": "dependency", "e": "error",
    "i": "input", "m": "distribution", "n": "ntasks", "o": "output", "p": "partition",
    "q": "qos", "t": "time", "w": "nodelist", "x": "exclude", "A": "account",
    "B": "extra-node-info", "C": "constraint", "D": "chdir", "F": "nodefile", "G": "gpus",
    "J": "job-name", "L": "licenses", "M": "clusters", "N": "nodes", "S": "core-spec",
    "h": "help", "s": "oversubscribe", "v": "verbose", "H": "hold", "O": "overcommit",
    "Q": "quiet", "V": "version", "W": "wait", "k": "no-kill",
}  # fmt: skip


class AmbiguousOption(ValueError):
    """A long option that abbreviates several sbatch options, or none."""


def resolve_long(name: str, table: Mapping[str, object] = LONG_OPTIONS) -> str:
    """The full option a (possibly abbreviated) long name stands for, as getopt_long does.

    An exact name wins; otherwise the name must be the prefix of exactly one option of the
    table (sbatch's own by default).
    """
    if name in table:
        return name
    matches = [option for option in table if option.startswith(name)]
    if len(matches) != 1:
        raise AmbiguousOption(name)
    return matches[0]


# The argv: the advisor's options, sbatch's options, the script.


POLICIES = ("fill", "tighten", "guarded", "advise")
PICKS = ("earliest",)
DEFAULT_QUANTILE = 0.95
DEFAULT_MARGIN = 0.10

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


# #SBATCH lines of the script.


_MAGIC = ("#SBATCH", "#SLURM")
_HETJOB_WORDS = ("hetjob", "packjob")
#: What sbatch splits on: isspace() of bytes in the C locale, and lines at "\n" only.  Python's
#: str.isspace() and str.splitlines() also split at "\x1c", "\x85", "\xa0", "\u2028"..., which
#: would make the wrapper read another job name than the one sbatch gives the job.
_C_SPACE = " \t\n\v\f\r"


class Directives(NamedTuple):
    """The words of a script's directives, in order, and the line each came from."""

    words: tuple[str, ...]
    lines: tuple[int, ...]
    hetjob: bool = False


def directive_words(
    text: str, *, source: str, lineno: int, magic: str = "#SBATCH"
) -> Iterator[str]:
    """The words of one directive line, split like sbatch's ``get_argument``."""
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _C_SPACE:
            i += 1
        if i >= n:
            return
        word: list[str] = []
        quote = ""
        escaped = False
        while i < n and (quote or text[i] not in _C_SPACE):
            char = text[i]
            i += 1
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
                continue
            elif quote:
                if char == quote:
                    quote = ""
                    continue
            elif char in "\"'":
                quote = char
                continue
            elif char == "#":
                i = n  # the rest of the line is a comment
                break
            word.append(char)
        if quote:
            raise InputError(f"line {lineno}: unmatched {quote} in {magic} line", source=source)
        if word:
            yield "".join(word)


def read_directives(text: str, *, source: str = "script") -> Directives:
    """The option words of every ``#SBATCH`` line before the first command."""
    words: list[str] = []
    lines: list[int] = []
    hetjob = False
    for lineno, line in enumerate(text.split("\n"), start=1):  # not splitlines: see _C_SPACE
        magic = next((m for m in _MAGIC if line.startswith(m)), None)
        if magic is None:
            stripped = line.lstrip(_C_SPACE)
            if stripped and not stripped.startswith("#"):
                break  # the first command: sbatch reads no further
            continue
        rest = line[len(magic) :]
        found = list(directive_words(rest, source=source, lineno=lineno))
        if found[:1] and found[0] in _HETJOB_WORDS:
            hetjob = True
            break  # later components do not concern the first job's limit
        words.extend(found)
        lines.extend([lineno] * len(found))
    return Directives(tuple(words), tuple(lines), hetjob)


# Precedence: what the job asks for.


#: The input environment variables of sbatch 22.05 that concern the advisor (sbatch(1)).
ENVIRONMENT = {
    "time": "SBATCH_TIMELIMIT",
    "partition": "SBATCH_PARTITION",
    "job-name": "SBATCH_JOB_NAME",
    "account": "SBATCH_ACCOUNT",
    "qos": "SBATCH_QOS",
}


class Setting(NamedTuple):
    """A value and where it came from.

    The origin is 'command line', the variable's name, '#PBS' or '#BSUB' (the directives
    sbatch translates), or 'script' (``#SBATCH``).
    """

    value: str
    origin: str


class JobRequest(NamedTuple):
    """The settings the advisor reads; None when the job does not set them."""

    partition: Setting | None = None
    time: Setting | None = None
    time_min: Setting | None = None
    job_name: Setting | None = None
    comment: Setting | None = None
    wrap: bool = False
    #: --account and --qos: with the user, they choose the association and QoS whose MaxWall
    #: bounds the limit (SiteLimits.job_bounds).
    account: Setting | None = None
    qos: Setting | None = None

    @property
    def partitions(self) -> tuple[str, ...]:
        """The candidate partitions (``-p a,b``); empty means the default partition."""
        if self.partition is None:
            return ()
        return tuple(dict.fromkeys(p.strip() for p in self.partition.value.split(",") if p.strip()))


def _last(options: Sequence[Option], name: str) -> str | None:
    value = None
    for option in options:
        if option.name == name:
            value = option.value if option.value is not None else ""
    return value


def _setting(
    name: str,
    command_line: Sequence[Option],
    env: Mapping[str, str],
    script: Sequence[Option],
    translated: tuple[str, Sequence[Option]] | None,
) -> Setting | None:
    value = _last(command_line, name)
    if value is not None:
        return Setting(value, "command line")
    variable = ENVIRONMENT.get(name)
    if variable and variable in env:
        return Setting(env[variable], variable)
    if translated is not None:
        value = _last(translated[1], name)
        if value is not None:
            return Setting(value, translated[0])
    value = _last(script, name)
    if value is not None:
        return Setting(value, "script")
    return None


def job_request(
    command_line: Sequence[Option],
    env: Mapping[str, str],
    script: Sequence[Option] = (),
    translated: tuple[str, Sequence[Option]] | None = None,
) -> JobRequest:
    """Merge the origins with sbatch's precedence; translated: ('#PBS', its options) or None."""

    def setting(name: str) -> Setting | None:
        return _setting(name, command_line, env, script, translated)

    return JobRequest(
        partition=setting("partition"),
        time=setting("time"),
        time_min=setting("time-min"),
        job_name=setting("job-name"),
        comment=setting("comment"),
        wrap=_last(command_line, "wrap") is not None,
        account=setting("account"),
        qos=setting("qos"),
    )


def task_name(explicit: str | None, request: JobRequest, script: str | None) -> str | None:
    """``--advisor-task``, else the job name's task key, else what sbatch names the job: the script's name.

    The task key (advisor.taskkey) is a Nextflow job's process or a Snakemake job's rule (from
    its comment), as accounting and the Lua plugin know the job; any other name as it is.
    """
    if explicit:
        return explicit
    if request.job_name is not None and request.job_name.value:
        comment = request.comment.value if request.comment is not None else None
        return task_key(request.job_name.value, comment)
    if request.wrap:
        return "wrap"
    if script:
        return os.path.basename(script.rstrip("/"))
    return None
