"""The option table: which sbatch options take a value, to find the script in an argv.

It was read off the installed sbatch (slurm-wlm 22.05.8, then 24.11.5) by probing it:
``--NAME=x`` and ``--NAME`` for every option name in the man pages and in libslurmfull's
strings, ``-X`` and ``-Xq`` for every letter; getopt's own messages ("requires an argument",
"doesn't allow an argument") say which is which, and getopt itself lists every long option that
starts with a letter (``sbatch --c``: "option '--c' is ambiguous; possibilities: ..."), so none
is missed: ``--cluster`` (an alias of ``--clusters``), ``--context`` and ``--ntasks-per-tres``
are in no man page.  It holds the options of both versions (the short ones are the same), so
that one table serves every cluster; ``ONLY_IN`` names those one version lacks.
tests/integration/test_wrapper.py probes the installed sbatch again and compares both ways.
sbatch parses with ``getopt_long`` in POSIX mode: options stop at the first non-option (the
script) or at ``--``; a long option may be abbreviated to any unambiguous prefix; an optional
value must be attached (``--nice=5``; ``--nice 5`` makes 5 the script).
"""

from __future__ import annotations

from collections.abc import Mapping

from advisor.lite import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import ClassVar


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
