"""Every command's ``--format json`` output, run as a user runs it, against its schema in schemas/.

The file-based commands run on the cache ``advisor demo --db`` leaves (bundled samples, no
Slurm), each on its own copy; the commands that need Slurm (cluster, profile, calibrate,
guard) run on the real test cluster.  ``completion`` prints a shell script, not JSON.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.cli.commands import COMMANDS
from advisor.validate import validate

# cluster_turns: profile and calibrate cases: srun on every node, probes on time
pytestmark = [
    pytest.mark.integration,
    pytest.mark.cluster(uses=("daemons",), owns=("nodes",), minutes=0.8),
]

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "advisor" / "sample"
DATA = REPO / "tests" / "data"
#: Commands whose output is not a JSON document.
NOT_JSON = frozenset({"completion"})

#: (case, argv after ``advisor --db {db}``, schema, what it needs: "demo" cache, "live" cluster).
#: ``{tmp}`` is the case's directory, ``{sample}``/``{data}`` the bundled samples and the test data.
CASES: list[tuple[str, str, str, str]] = [
    ("demo", "--format json demo", "demo-output", ""),
    ("nodes", "--format json nodes", "nodes-output", "demo"),
    ("runs-import", "runs import --input-format json --format json {sample}/task-runs.json",
     "runs-import-output", "demo"),
    ("learn", "--format json learn", "learn-output", "demo"),
    ("predict", "--format json predict --task bwa --input-bytes 4000000000", "predict-output",
     "demo"),
    ("evaluate", "--format json evaluate --traces {data}/lotaru-format", "evaluate-output", ""),
    ("plan", "--format json plan {sample}/workflow.json", "plan-output", "demo"),
    ("estimate", "--format json estimate {data}/workflows/diamond-1.3.json --platform summit "
     "--nodes 1 --cores 2 --flops-per-unit 61.542Gf", "estimate-output", ""),
    ("submit", "--format json submit --dry-run {sample}/workflow.json", "submit-output", "demo"),
    ("insitu", "--format json insitu {data}/insitu/pipeline-idle-analyzer.csv", "insitu-report", ""),
    ("sbatch", "--format json sbatch --advisor-dry-run --advisor-explain -p fast,legacy "
     "--advisor-task bwa --advisor-input {tmp}/reads.fastq {tmp}/job.sh", "sbatch-explain", "demo"),
    ("export", "--format json export --out {tmp}/export.json", "export", "demo"),
    ("update", "--format json update --swf {sample}/curie-3000.swf", "update-output", "demo"),
    ("replay", "--format json replay {sample}/curie-3000.swf", "replay-output", ""),
    ("report-accuracy", "--format json report accuracy", "report-accuracy", "demo"),
    ("report-limits", "--format json report limits", "report-limits", "demo"),
    ("report-models", "--format json report models", "report-models", "demo"),
    ("report-nodes", "--format json report nodes", "report-nodes", "demo"),
    ("publish", "--format json publish --out {tmp}", "publish-output", "demo"),
    ("doctor", "--format json doctor", "doctor-output", "demo"),
    ("bench", "--format json bench --quick --dir {tmp}", "bench-output", ""),
    ("cluster", "--format json cluster", "cluster", "live"),
    ("profile", "--format json profile --nodelist c1,f1 --dir {tmp}", "profile-output", "live"),
    ("calibrate", "--format json calibrate schema-sleep --command 'sleep 1' --input {tmp}/small.txt "
     "--partition cpu --time-limit 2 --dir {tmp}", "calibrate-output", "live"),
    ("guard", "--format json guard --once", "guard-output", "live"),
    ("readvise", "--format json readvise --dry-run", "readvise-output", "live"),
]  # fmt: skip


def advisor(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor", *argv], capture_output=True, text=True, timeout=600,
        check=False, cwd=cwd, env={**os.environ, "ADVISOR_PROGRESS": "0"},
    )  # fmt: skip


@pytest.fixture(scope="module")
def demo_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cache the demo leaves: the sample cluster, its runs and models, a replayed log."""
    path = tmp_path_factory.mktemp("demo") / "cache.db"
    done = advisor("--db", str(path), "demo", cwd=path.parent)
    assert done.returncode == 0, done.stderr
    return path


def _copy(source: Path, target: Path) -> None:
    """A consistent copy of a WAL cache (SQLite's backup, not a file copy)."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    dst.close()
    src.close()


def _live_cache(db: Path, tmp: Path) -> None:
    """A cache of the live cluster with a model of schema-sleep learnt on c1's class."""
    assert (
        advisor(
            "--db", str(db), "profile", "--nodelist", "c1,f1", "--dir", str(tmp), cwd=tmp
        ).returncode
        == 0
    )
    runs = [{"task": "schema-sleep", "node": "c1", "input_bytes": 1_000_000 * 2**i,
             "runtime_s": 1.0 + 0.1 * 2**i} for i in range(6)]  # fmt: skip
    (tmp / "runs.json").write_text(json.dumps({"runs": runs}))
    assert advisor("--db", str(db), "runs", "import", "--input-format", "json", str(tmp / "runs.json"),
                   cwd=tmp).returncode == 0  # fmt: skip
    assert advisor("--db", str(db), "learn", cwd=tmp).returncode == 0


def test_every_command_with_json_output_has_a_case() -> None:
    covered = {argv.removeprefix("--format json ").split()[0] for _, argv, _, _ in CASES}
    assert set(COMMANDS) - NOT_JSON - covered == set()


@pytest.mark.parametrize(("case", "argv", "schema", "needs"), CASES, ids=[c[0] for c in CASES])
def test_the_json_output_follows_its_schema(
    case: str, argv: str, schema: str, needs: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    db = tmp_path / "cache.db"
    if needs == "demo":
        _copy(request.getfixturevalue("demo_cache"), db)
    elif needs == "live":
        request.getfixturevalue("slurm_cluster")
        if case == "calibrate":
            _live_cache(db, tmp_path)
    (tmp_path / "reads.fastq").write_bytes(b"@r\nACGT\n+\nIIII\n" * 1000)
    (tmp_path / "job.sh").write_text("#!/bin/sh\nsleep 1\n")
    (tmp_path / "small.txt").write_bytes(b"ACGT" * 250_000)
    words = shlex.split(argv.format(tmp=tmp_path, sample=SAMPLE, data=DATA))
    done = advisor("--db", str(db), *words, cwd=tmp_path)
    # doctor exits 1 when a check fails (the demo cache has no plugin, export or update timer)
    assert done.returncode in ((0, 1) if case == "doctor" else (0,)), done.stderr
    data = json.loads(done.stdout)
    validate(data, schema, source=f"advisor {case}")
    if case == "export":  # what it prints is the file it wrote
        assert json.loads((tmp_path / "export.json").read_text()) == data
