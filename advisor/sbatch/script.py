"""A script's ``#SBATCH`` lines, read the way sbatch reads them (src/sbatch/opt.c, ``_opt_batch_script``).

Lines that start with ``#SBATCH`` (``#SLURM`` is a deprecated spelling), up to the first line
that is neither blank nor a comment.  Each directive is split into words with single and double
quotes grouping, a backslash escaping the next character, and an unquoted ``#`` starting a
comment.  A ``#SBATCH hetjob`` line separates the components of a heterogeneous job.  ``#BSUB``
and ``#PBS`` lines, which sbatch translates, are read by advisor.sbatch.translated.
"""

from __future__ import annotations

from collections.abc import Iterator

from advisor.errors import InputError
from advisor.lite import NamedTuple

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
