"""``#BSUB`` and ``#PBS`` directives, read the way sbatch translates them (src/sbatch/xlate.c).

After the ``#SBATCH`` lines, sbatch 22.05 scans the script for ``#BSUB`` lines, else for
``#PBS`` lines (one kind only: with any ``#BSUB`` line, every ``#PBS`` line is ignored), parses
their words with getopt_long against LSF's or PBS's own options and sets the sbatch options they
map to.  So they override ``#SBATCH`` lines, and ``SBATCH_*`` variables and the command line
override them (advisor.sbatch.request).  Unlike ``#SBATCH``, the scan does not stop at the
first command: it reads up to the 101st line that does not start with ``#`` (blank lines count).
``--ignore-pbs`` (abbreviated too, or in an ``#SBATCH`` line) and ``SBATCH_IGNORE_PBS`` (any
value, even empty) turn it off.  A word getopt cannot take (an unknown option, a missing value,
a word that is no option) makes sbatch exit with an error.

Of what they set, the advisor needs the time limit, the partition and the job name:

* ``#BSUB -W T`` (``--time``) is ``--time=T``, ``-q Q`` (``--queue_name``) is ``--partition``,
  ``-J N`` (``--job_name``) is ``--job-name``;
* ``#PBS -l LIST`` (``--resource_list``): every ``walltime=``, ``cput=`` and ``pcput=`` in LIST
  is ``--time`` (the last wins), found by sbatch's own character-by-character scan (so
  ``xwalltime=5`` counts, and ``software=walltime=5`` does not); ``-q Q`` (``--destination``)
  is ``--partition``, ``-N N`` (``--job_name``) is ``--job-name``.

The rules come from Slurm's source (SchedMD/slurm@08c0aca4a8b9:src/sbatch/xlate.c for the
option tables and the scans; src/sbatch/opt.c, process_options_second_pass, for the order
#SBATCH, translation, environment, command line), and every one was observed on the installed
sbatch (22.05.8, ``sbatch -v`` against a controller that does not exist, so nothing is
submitted); tests/integration/test_sbatch_reading.py compares both on many scripts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from advisor.lite import NamedTuple
from advisor.sbatch.argv import Option
from advisor.sbatch.options import AmbiguousOption, Arg, resolve_long
from advisor.sbatch.script import directive_words

#: Lines read before sbatch stops looking: it breaks at the 101st line not starting with '#'.
MAX_COMMANDS = 100


class Dialect(NamedTuple):
    """One batch system's directives as sbatch reads them."""

    magic: str
    #: getopt's short options: letter -> takes a value.
    short: Mapping[str, Arg]
    #: Long options -> (has_arg, the short letter they stand for).
    long: Mapping[str, tuple[Arg, str]]
    #: Letters whose value is the job name / the partition / the time limit.
    job_name: str
    partition: str
    time: str | None


def _short(spec: str) -> dict[str, Arg]:
    out: dict[str, Arg] = {}
    for i, letter in enumerate(spec):
        if letter != ":":
            out[letter] = Arg.REQUIRED if spec[i + 1 : i + 2] == ":" else Arg.NONE
    return out


_R, _N, _O = Arg.REQUIRED, Arg.NONE, Arg.OPTIONAL
BSUB = Dialect(
    "#BSUB",
    _short("c:e:J:m:M:n:o:q:W:x"),
    {"cwd": (_R, "c"), "error_file": (_R, "e"), "job_name": (_R, "J"), "hostname": (_R, "m"),
     "memory_limit": (_R, "M"), "output_file": (_R, "o"), "queue_name": (_R, "q"),
     "time": (_R, "W"), "exclusive": (_N, "x")},
    job_name="J", partition="q", time="W",
)  # fmt: skip
PBS = Dialect(
    "#PBS",
    _short("a:A:c:C:e:hIj:J:k:l:m:M:N:o:p:q:r:S:t:u:v:VW:z"),
    {"start_time": (_R, "a"), "account": (_R, "A"), "checkpoint": (_R, "c"),
     "working_dir": (_R, "C"), "error": (_R, "e"), "hold": (_N, "h"), "interactive": (_N, "I"),
     "join": (_O, "j"), "job_array": (_R, "J"), "keep": (_R, "k"), "resource_list": (_R, "l"),
     "mail_options": (_R, "m"), "mail_user_list": (_R, "M"), "job_name": (_R, "N"),
     "out": (_R, "o"), "priority": (_R, "p"), "destination": (_R, "q"), "rerunable": (_R, "r"),
     "script_path": (_R, "S"), "array": (_R, "t"), "running_user": (_R, "u"),
     "variable_list": (_R, "v"), "all_env": (_N, "V"), "attributes": (_R, "W"),
     "no_std": (_N, "z")},
    job_name="N", partition="q", time=None,
)  # fmt: skip


class Translated(NamedTuple):
    """The sbatch options a script's ``#BSUB`` or ``#PBS`` lines stand for, in order."""

    options: tuple[Option, ...] = ()
    #: The directive kind read ('#BSUB', '#PBS'), None when there was none (or it was ignored).
    magic: str | None = None
    #: Why sbatch will exit on these lines (None: it will not).
    invalid: str | None = None


class _Refused(Exception):
    """A word sbatch's getopt does not take."""


def _lines(text: str, magic: str) -> Iterator[tuple[int, str]]:
    """(line number, rest after the magic) of the directive lines sbatch reads."""
    commands = 0
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.startswith(magic):
            yield lineno, line[len(magic) :]
        elif not line.startswith("#"):
            commands += 1
            if commands > MAX_COMMANDS:
                return


def _long(dialect: Dialect, word: str, rest: list[str]) -> tuple[str, str | None]:
    name, eq, attached = word[2:].partition("=")
    try:
        full = resolve_long(name, {k: v[0] for k, v in dialect.long.items()})
    except AmbiguousOption:
        raise _Refused(word) from None
    kind, letter = dialect.long[full]
    if kind is Arg.NONE:
        if eq:
            raise _Refused(word)
        return letter, None
    if eq or kind is Arg.OPTIONAL:
        return letter, attached if eq else None
    if not rest:
        raise _Refused(word)
    return letter, rest.pop(0)


def _getopt(dialect: Dialect, words: Sequence[str]) -> Iterator[tuple[str, str | None]]:
    """(letter, value) for every option of the words, as getopt_long("+...") returns them."""
    rest = list(words)
    while rest:
        word = rest.pop(0)
        if word == "--":
            break
        if word.startswith("--"):
            yield _long(dialect, word, rest)
            continue
        if not word.startswith("-") or word == "-":
            raise _Refused(word)  # a non-option: "Invalid argument"
        letters = word[1:]
        while letters:
            letter, letters = letters[0], letters[1:]
            kind = dialect.short.get(letter)
            if kind is None:
                raise _Refused(f"-{letter}")
            if kind is Arg.NONE:
                yield letter, None
            elif letters:
                yield letter, letters
                letters = ""
            elif rest:
                yield letter, rest.pop(0)
            else:
                raise _Refused(word)
    if rest:
        raise _Refused(rest[0])


#: sbatch's scan of a ``-l`` resource list, in its order: (prefix, case-insensitive, how the
#: value ends: ',' or ':' it is read up to, 'skip' the rest of the option is skipped, '' nothing
#: is consumed, 'proc' read up to ',' and then the next option skipped as well).
_RESOURCES = (
    ("accelerator=", True, ""), ("arch=", False, "skip"), ("cput=", False, ","),
    ("file=", False, ","), ("host=", False, "skip"), ("mem=", False, ","),
    ("mpiprocs=", True, ":"), ("naccelerators=", True, ","), ("ncpus=", True, ":"),
    ("nice=", False, ","), ("nodes=", False, ","), ("opsys=", False, "skip"),
    ("other=", False, "skip"), ("pcput=", False, ","), ("pmem=", False, "skip"),
    ("proc=", False, "proc"), ("pvmem=", False, "skip"), ("select=", True, ":"),
    ("software=", False, "skip"), ("vmem=", False, "skip"), ("walltime=", False, ","),
)  # fmt: skip
_TIME_RESOURCES = frozenset({"walltime=", "cput=", "pcput="})


def _until(text: str, i: int, sep: str) -> tuple[str, int]:
    """The text from i up to sep (or the end), and the index after sep."""
    end = text.find(sep, i)
    if end < 0:
        return text[i:], len(text)
    return text[i:end], end + 1


def resource_times(resources: str) -> list[str]:
    """The time limits a PBS resource list sets, in order (``_parse_pbs_resource_list``)."""
    times: list[str] = []
    i = 0
    while i < len(resources):
        for prefix, nocase, end in _RESOURCES:
            head = resources[i : i + len(prefix)]
            if (head.lower() if nocase else head) == prefix:
                i += len(prefix)
                if end in (",", ":"):
                    value, i = _until(resources, i, end)
                    if prefix in _TIME_RESOURCES:
                        times.append(value)
                elif end == "skip":
                    i = _until(resources, i, ",")[1]
                elif end == "proc":
                    i = _until(resources, _until(resources, i, ",")[1], ",")[1]
                break
        else:
            i += 1
    return times


def _translate(dialect: Dialect, words: Sequence[str]) -> list[Option]:
    options: list[Option] = []
    for letter, value in _getopt(dialect, _bsub_cwd(dialect, words)):
        if value is None:
            continue
        if letter == dialect.job_name:
            options.append(Option("job-name", value))
        elif letter == dialect.partition:
            options.append(Option("partition", value))
        elif letter == dialect.time:
            options.append(Option("time", value))
        elif dialect is PBS and letter == "l":
            options.extend(Option("time", t) for t in resource_times(value))
    return options


def _bsub_cwd(dialect: Dialect, words: Sequence[str]) -> list[str]:
    """The words with ``-cwd`` as ``-c`` where an option may stand (every other word), as sbatch."""
    if dialect is not BSUB:
        return list(words)
    return ["-c" if word == "-cwd" and i % 2 == 0 else word for i, word in enumerate(words)]


def ignored(
    command_line: Sequence[Option], script: Sequence[Option], env: Mapping[str, str]
) -> bool:
    """True when sbatch skips the translation (``--ignore-pbs``, ``SBATCH_IGNORE_PBS``)."""
    return "SBATCH_IGNORE_PBS" in env or any(
        option.name == "ignore-pbs" for option in (*command_line, *script)
    )


def translate_directives(text: str, *, source: str = "script") -> Translated:
    """What the script's ``#BSUB`` lines, else its ``#PBS`` lines, set (see the module doc)."""
    for dialect in (BSUB, PBS):
        found = list(_lines(text, dialect.magic))
        if not found:
            continue
        words: list[str] = []
        for lineno, rest in found:
            words.extend(directive_words(rest, source=source, lineno=lineno, magic=dialect.magic))
        try:
            return Translated(tuple(_translate(dialect, words)), dialect.magic)
        except _Refused as refused:
            return Translated((), dialect.magic, f"{dialect.magic} {refused.args[0]!r}")
    return Translated()
