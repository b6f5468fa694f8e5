"""What ``advisor sbatch`` loads on every submission, and the record base that keeps it light.

Speed itself is measured by benchmarks/bench_wrapper.py; this pins the cause: the submit path
imports no module that costs milliseconds to load (typing, dataclasses, pathlib, statistics,
subprocess for --dry-run, argparse, enum, re, json, the sqlite3 package and its datetime, the
numeric and rendering libraries), no advisor module outside the command's own chain, and no
more modules than the budget below; and the command ends without the interpreter's teardown
only where that changes nothing a user sees.
"""

from __future__ import annotations

import collections
import copy
import inspect
import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import advisor
from advisor.lite import NamedTuple, json_loads
from tests.helpers.caches import NODES, PARTITIONS, train
from tests.helpers.paths import REPO

#: Standard-library and third-party modules the submit path must not load.
HEAVY = frozenset(
    {"typing", "dataclasses", "inspect", "pathlib", "statistics", "random", "decimal",
     "fractions", "subprocess", "argparse", "logging", "urllib", "importlib.metadata", "bz2",
     "lzma", "numpy", "sklearn", "sqlite_utils", "tabulate", "jsonschema", "tenacity",
     "enum", "re", "json", "shlex", "contextlib", "string", "locale", "threading", "sqlite3",
     "datetime"}
)  # fmt: skip
#: How many modules a dry run with a learned model may add to a bare interpreter's (issue 17):
#: what it loads, 49 of ours and 17 of the standard library (_sqlite3 brings 12 of those:
#: functools, collections and what they import; the rest are __future__, _json, gc, math and
#: pwd).  Each costs 50-150 µs; a new one on this path should replace another.  Two of ours
#: are memory's (issue 33: the --mem decision and its rows in the cache; the peaks' model loads
#: only for a task whose peaks the cache knows).
ADVISOR_BUDGET = 49
STDLIB_BUDGET = 17
#: Advisor packages the submit path may use (the command, sbatch's language, the advice, models,
#: store, the Slurm records).
ALLOWED = ("advisor.wrapper.", "advisor.sbatch.", "advisor.advice.", "advisor.models.",
           "advisor.store.", "advisor.slurm.records", "advisor.slurm.timefmt",
           "advisor.profiling.twins")  # fmt: skip
PACKAGES = frozenset({"advisor", "advisor.wrapper", "advisor.sbatch", "advisor.advice",
                      "advisor.models", "advisor.store", "advisor.slurm",
                      "advisor.profiling"})  # fmt: skip
#: Light modules it may import.
LEAVES = frozenset({"advisor.errors", "advisor.lite", "advisor.text", "advisor.inputs",
                    "advisor.factors", "advisor.taskkey", "advisor.users"})  # fmt: skip


def _modules_after(tmp_path: Path, *argv: str) -> tuple[set[str], str]:
    """The modules a run of ``advisor ARGV`` adds to what a bare interpreter has loaded.

    It runs as bin/advisor runs it: an ``sbatch`` command line straight to the wrapper's
    command, without the command line interface (advisor.cli).

    ``-S`` and the package's own directory on sys.path: an editable install's import hook
    (site) loads pathlib, re, enum and more at start, which would hide them from the count; a
    regular install's interpreter starts with what ``-S`` plus ``import os`` loads.
    """
    out = tmp_path / "modules.json"
    root = str(Path(advisor.__file__).parent.parent)
    code = (
        "import os, sys\n"
        f"sys.path.insert(0, {root!r})\n"
        "start = set(sys.modules)\n"
        "from advisor.wrapper.command import run, sbatch_call\n"
        f"code = run(*sbatch_call({list(argv)!r}), exiting=False)\n"
        "added = sorted(set(sys.modules) - start)\n"
        f"open({str(out)!r}, 'w').write('\\n'.join(added))\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return set(out.read_text().split()), done.stdout


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train(tmp_path_factory.mktemp("cache") / "cache.db", "align", PARTITIONS, NODES)


def _dry_run(cache: Path, tmp_path: Path) -> tuple[set[str], str]:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH -J align\n#SBATCH -p cpu,fat\nsleep 1\n")
    data = tmp_path / "reads.fq"
    data.write_bytes(b"@r\nACGT\n+\nIIII\n" * 1000)
    modules, stdout = _modules_after(
        tmp_path,
        "--db",
        str(cache),
        "sbatch",
        "--advisor-dry-run",
        "--advisor-input",
        str(data),
        str(script),
    )
    assert "--time=" in stdout and "advisor:wrapper" in stdout  # the model really answered
    return modules, stdout


def test_a_dry_run_loads_nothing_heavy(cache: Path, tmp_path: Path) -> None:
    modules, _ = _dry_run(cache, tmp_path)
    assert sorted(HEAVY & {m.split(".")[0] for m in modules} | HEAVY & modules) == []
    ours = {m for m in modules if m == "advisor" or m.startswith("advisor.")}
    stray = {m for m in ours - PACKAGES - LEAVES if not m.startswith(ALLOWED)}
    assert sorted(stray) == []
    assert "advisor.models.predict" in ours and "advisor.advice.snapshot" in ours


def test_a_dry_run_keeps_to_its_module_budget(cache: Path, tmp_path: Path) -> None:
    modules, _ = _dry_run(cache, tmp_path)
    ours = sorted(m for m in modules if m == "advisor" or m.startswith("advisor."))
    stdlib = sorted(modules - set(ours))
    assert "_sqlite3" in stdlib and "advisor.advice.advice" in ours  # it counted the real thing
    assert len(ours) <= ADVISOR_BUDGET, ours
    assert len(stdlib) <= STDLIB_BUDGET, stdlib
    assert "advisor.models.baselines" not in ours  # a learned model's forecast needs none


def test_the_advisor_command_imports_no_re(cache: Path, tmp_path: Path) -> None:
    """bin/advisor (what pip installs as the command) starts without pip's ``import re``.

    And an ``sbatch`` command line reaches the wrapper without the command line interface.
    """
    command = REPO / "bin" / "advisor"
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH -J align\nsleep 1\n")
    env = {**os.environ, "PYTHONPATH": str(Path(advisor.__file__).parent.parent)}
    done = subprocess.run(
        [sys.executable, "-S", "-X", "importtime", str(command), "--db", str(cache), "sbatch",
         "--advisor-dry-run", str(script)],
        capture_output=True, text=True, check=False, timeout=60, env=env,
    )  # fmt: skip
    assert done.returncode == 0 and "--time=" in done.stdout, done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "advisor.advice.advice" in imported
    assert sorted(imported & {"re", "enum", "shlex", "json"}) == []
    assert (
        sorted(m for m in imported if m.startswith("advisor.cli")) == []
    )  # straight to the wrapper


class Job(NamedTuple):
    """A record as the submit path defines them."""

    name: str
    cpus: int = 1
    partitions: tuple[str, ...] = ()

    @property
    def wide(self) -> bool:
        """A method and a property survive the class body."""
        return self.cpus > 1

    def renamed(self, name: str) -> Job:
        return self._replace(name=name)


def test_the_light_named_tuple_behaves_as_typings() -> None:
    job = Job("a", 4)
    assert job == ("a", 4, ()) and job.partitions == () and job.wide
    assert job.renamed("b") == Job("b", 4) and Job._fields == ("name", "cpus", "partitions")
    assert job._asdict() == {"name": "a", "cpus": 4, "partitions": ()}
    assert Job.__doc__ == "A record as the submit path defines them."
    assert Job.__qualname__ == "Job" and Job.__module__ == __name__
    assert repr(job) == "Job(name='a', cpus=4, partitions=())"
    with pytest.raises(AttributeError):
        job.name = "c"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Job()  # type: ignore[call-arg]


def test_the_light_named_tuple_refuses_what_typing_refuses() -> None:
    with pytest.raises(TypeError, match="without a default"):

        class Bad(NamedTuple):
            a: int = 0
            b: int  # type: ignore[misc]

    with pytest.raises(AttributeError, match="_replace"):

        class Worse(NamedTuple):
            a: int

            def _replace(self) -> None:  # type: ignore[override]
                pass


def _outcome(call: Callable[..., object], *args: object) -> str:
    try:
        return repr(call(*args))
    except Exception as error:
        return f"{type(error).__name__}: {error}"


@pytest.mark.parametrize("count", [0, 1, 2, 7, 24, 25, 30])
def test_the_light_named_tuple_is_collections_namedtuple(count: int) -> None:
    """The same class as collections.namedtuple's, field by field and error by error.

    24 fields is the largest precompiled ``__new__``; beyond it collections builds it.
    """
    fields = [f"f{i}" for i in range(count)]
    defaults = list(range(count // 2))
    body = "".join(f"    {name}: int{' = 0' if i >= count - len(defaults) else ''}\n"
                   for i, name in enumerate(fields))  # fmt: skip
    namespace: dict[str, object] = {"NamedTuple": NamedTuple}
    exec(f"class Rec(NamedTuple):\n    '''A record.'''\n{body or '    pass'}\n", namespace)  # noqa: S102
    ours = namespace["Rec"]
    theirs = collections.namedtuple("Rec", fields, defaults=[0] * len(defaults))
    assert isinstance(ours, type) and ours.__bases__ == (tuple,)
    for name in ("_fields", "_field_defaults", "__match_args__", "__slots__"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert str(inspect.signature(ours)) == str(inspect.signature(theirs))
    assert ours.__new__.__doc__ == theirs.__new__.__doc__
    assert ours.__new__.__qualname__ == "Rec.__new__" and ours.__doc__ == "A record."
    for name in fields:
        assert getattr(ours, name).__doc__ == getattr(theirs, name).__doc__
    values = list(range(100, 100 + count))
    calls: list[Callable[[type[Any]], object]] = [
        lambda c: c(*values),
        lambda c: c(*values[: count - len(defaults)]),
        lambda c: c(*values, 1),
        lambda c: c(),
        lambda c: c(**dict(zip(fields, values, strict=True))),
        lambda c: c(*values, nope=1),
        lambda c: c._make(values),
        lambda c: c._make([*values, 1]),
        lambda c: c(*values)._replace(**dict.fromkeys(fields[:1], -1)),
        lambda c: c(*values)._replace(nope=1),
        lambda c: c(*values)._asdict(),
        lambda c: c(*values).__getnewargs__(),
        lambda c: tuple(c(*values)) == tuple(values) and c(*values) == tuple(values),
        lambda c: copy.deepcopy(c(*values)) == c(*values),
    ]
    for call in calls:
        assert _outcome(call, ours) == _outcome(call, theirs)


def test_a_light_record_pickles() -> None:
    job = Job("a", 2, ("cpu",))
    assert pickle.loads(pickle.dumps(job)) == job  # noqa: S301 (our own bytes)
    assert type(pickle.loads(pickle.dumps(job))) is Job  # noqa: S301


def test_field_names_cannot_start_with_an_underscore() -> None:
    with pytest.raises(ValueError, match="underscore"):

        class Bad(NamedTuple):
            _hidden: int


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_JSON, st.booleans())
def test_json_loads_is_jsons_on_what_json_dumps_writes(value: object, sorted_keys: bool) -> None:
    text = json.dumps(value, sort_keys=sorted_keys)
    assert repr(json_loads(text)) == repr(json.loads(text))


@pytest.mark.parametrize(
    "text", ["", " 1", "1 ", "[1,]", "{", '{"a": 1} x', "NaN", "-Infinity", '"\\ud800"', "01",
             '{"a": 1, "a": 2}', "1e400", "[" * 10 + "]" * 10, '"\x01"', "tru"],
)  # fmt: skip
def test_json_loads_answers_and_refuses_as_json_does(text: str) -> None:
    assert _outcome(json_loads, text) == _outcome(json.loads, text)


def test_the_collector_is_paused_for_a_submission_and_resumed_after(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import gc

    import advisor.cli
    from advisor.wrapper import explain

    seen: list[bool] = []
    original = explain.command_line

    def spying(argv: Sequence[str]) -> str:
        seen.append(gc.isenabled())
        return original(argv)

    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH -J align\nsleep 1\n")
    argv = ["--db", str(cache), "sbatch", "--advisor-dry-run", str(script)]
    assert gc.isenabled()
    try:
        explain.command_line = spying  # type: ignore[assignment]
        assert advisor.cli.main(argv) == 0
        assert seen and not any(seen) and gc.isenabled()
        gc.disable()  # a caller's own choice stands
        assert advisor.cli.main(argv) == 0
        assert not gc.isenabled()
    finally:
        explain.command_line = original  # type: ignore[assignment]
        gc.enable()
    assert "--time=" in capsys.readouterr().out


def _command(cache: Path, tmp_path: Path, *args: str, prelude: str = "", **kw: Any) -> Any:
    """``advisor --db CACHE sbatch ARGS`` as the installed command runs it (its main, argv None)."""
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH -J align\nsleep 1\n")
    code = (
        f"import sys\n{prelude}\n"
        f"sys.argv = ['advisor', '--db', {str(cache)!r}, 'sbatch', *{list(args)!r}, {str(script)!r}]\n"
        "from advisor.cli import main\n"
        "sys.exit(main())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(advisor.__file__).parent.parent)}
    return subprocess.run([sys.executable, "-c", code], check=False, timeout=60, env=env, **kw)


def test_the_command_leaves_with_its_output_and_exit_code(cache: Path, tmp_path: Path) -> None:
    done = _command(cache, tmp_path, "--advisor-dry-run", capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("sbatch --time="), done.stderr
    refused = _command(cache, tmp_path, "--advisor-quantile", "2", capture_output=True, text=True)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.startswith("advisor: error:") and refused.stderr.endswith("\n")


def test_an_atexit_handler_still_runs(cache: Path, tmp_path: Path) -> None:
    """With a handler registered (by a sitecustomize, say), the interpreter exits as usual."""
    prelude = "import atexit\natexit.register(lambda: print('handler ran'))"
    done = _command(cache, tmp_path, "--advisor-dry-run", prelude=prelude, capture_output=True,
                    text=True)  # fmt: skip
    assert done.returncode == 0 and "--time=" in done.stdout
    assert done.stdout.endswith("handler ran\n")


def test_a_closed_stdout_is_reported_as_without_the_shortcut(cache: Path, tmp_path: Path) -> None:
    """A reader that went away: the same exit code and message, shortcut or not."""
    outcomes = []
    for prelude in ("", "import atexit\natexit.register(int)"):  # a handler: no shortcut
        read, write = os.pipe()
        os.close(read)
        try:
            done = _command(cache, tmp_path, "--advisor-dry-run", prelude=prelude, stdout=write,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
        finally:
            os.close(write)
        outcomes.append((done.returncode, done.stderr.splitlines()[-1:]))
    assert outcomes[0] == outcomes[1] and outcomes[0][0] != 0, outcomes
    assert "BrokenPipeError" in outcomes[0][1][0]


def _leaving(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(advisor.__file__).parent.parent)}
    prelude = "import io, sys, threading\nfrom advisor.wrapper.command import leave\n"
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True,
                          check=False, timeout=60, env=env)  # fmt: skip


def test_leaving_flushes_and_ends_with_the_code() -> None:
    done = _leaving("sys.stdout.write('kept')\nsys.stderr.write('said')\nleave(3)\nprint('after')")
    assert (done.returncode, done.stdout, done.stderr) == (3, "kept", "said")


def test_leaving_returns_when_a_flush_fails_or_a_thread_runs() -> None:
    failing = (
        "class Closed(io.StringIO):\n"
        "    def flush(self):\n"
        "        raise BrokenPipeError(32, 'Broken pipe')\n"
        "real, sys.stdout = sys.stdout, Closed()\n"
        "leave(3)\n"
        "sys.stdout = real\n"
        "print('returned')\n"
    )
    done = _leaving(failing)
    assert (done.returncode, done.stdout) == (0, "returned\n"), done.stderr
    waiting = (
        "stop = threading.Event()\n"
        "threading.Thread(target=stop.wait).start()\n"
        "leave(3)\n"
        "print('returned')\n"
        "stop.set()\n"
    )
    done = _leaving(waiting)
    assert (done.returncode, done.stdout) == (0, "returned\n"), done.stderr
