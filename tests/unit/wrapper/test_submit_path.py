"""What ``advisor sbatch`` loads on every submission, and the record base that keeps it light.

Speed itself is measured by benchmarks/bench_wrapper.py; this pins the cause: the submit path
imports no module that costs milliseconds to load (typing, dataclasses, pathlib, statistics,
subprocess for --dry-run, argparse, the numeric and rendering libraries) and no advisor
module outside the wrapper's own chain.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.lite import NamedTuple
from tests.helpers.caches import NODES, PARTITIONS, train

#: Standard-library and third-party modules the submit path must not load.
HEAVY = frozenset(
    {"typing", "dataclasses", "inspect", "pathlib", "statistics", "random", "decimal",
     "fractions", "subprocess", "argparse", "logging", "urllib", "importlib.metadata", "bz2",
     "lzma", "numpy", "sklearn", "sqlite_utils", "tabulate", "jsonschema", "tenacity"}
)  # fmt: skip
#: Advisor packages the submit path may use (models, store, the Slurm records, the wrapper).
ALLOWED = ("advisor.cli.sbatch_cmd", "advisor.wrapper.", "advisor.models.", "advisor.store.",
           "advisor.slurm.records", "advisor.slurm.timefmt", "advisor.profiling.twins")  # fmt: skip
PACKAGES = frozenset({"advisor", "advisor.cli", "advisor.wrapper", "advisor.models",
                      "advisor.store", "advisor.slurm", "advisor.profiling"})  # fmt: skip
#: Light modules it may import (advisor.insitu for --steps' MAX_STEPS: its __init__ is a constant).
LEAVES = frozenset({"advisor.errors", "advisor.lite", "advisor.text", "advisor.inputs",
                    "advisor.factors", "advisor.insitu", "advisor.taskkey"})  # fmt: skip


def _modules_after(tmp_path: Path, *argv: str) -> tuple[set[str], str]:
    """The modules a run of ``advisor ARGV`` adds to what the interpreter loaded at start.

    (An editable install's import hook loads pathlib at start, a regular install does not.)
    """
    out = tmp_path / "modules.json"
    code = (
        "import sys\n"
        "start = set(sys.modules)\n"
        "import advisor.cli\n"
        f"code = advisor.cli.main({list(argv)!r})\n"
        "added = sorted(set(sys.modules) - start)\n"
        "import json\n"
        f"open({str(out)!r}, 'w').write(json.dumps(added))\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(out.read_text())), done.stdout


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train(tmp_path_factory.mktemp("cache") / "cache.db", "align", PARTITIONS, NODES)


def test_a_dry_run_loads_nothing_heavy(cache: Path, tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH -J align\n#SBATCH -p cpu,fat\nsleep 1\n")
    data = tmp_path / "reads.fq"
    data.write_bytes(b"@r\nACGT\n+\nIIII\n" * 1000)
    modules, stdout = _modules_after(
        tmp_path, "--db", str(cache), "sbatch", "--advisor-dry-run", "--advisor-input", str(data),
        str(script),
    )
    assert "--time=" in stdout and "advisor:wrapper" in stdout  # the model really answered
    assert sorted(HEAVY & {m.split(".")[0] for m in modules} | HEAVY & modules) == []
    ours = {m for m in modules if m == "advisor" or m.startswith("advisor.")}
    stray = {m for m in ours - PACKAGES - LEAVES if not m.startswith(ALLOWED)}
    assert sorted(stray) == []
    assert "advisor.models.predict" in ours and "advisor.wrapper.snapshot" in ours


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
