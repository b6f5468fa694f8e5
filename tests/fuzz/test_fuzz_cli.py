"""Hostile files through the real command line: exit code 2, one stderr line naming the file,
and nothing written to the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.store import Store
from tests.conftest import TEST_DATA
from tests.fuzz.hostile import write

pytestmark = pytest.mark.fuzz

TRACE = (TEST_DATA / "imports" / "trace.txt").read_text().splitlines()
LOTARU = (TEST_DATA / "imports" / "lotaru_local_eager_excerpt.csv").read_text().splitlines()
FORK = json.loads((TEST_DATA / "workflows" / "fork-1.4.json").read_text())
SWF_OK = "1 0 10 100 4 -1 -1 4 3600 -1 1 7 1 3 1 1 -1 -1"
SACCT_HEADER = "JobIDRaw|JobID|JobName|User|Partition|Elapsed|ElapsedRaw|Timelimit|State|End|Cluster"
SACCT_OK = "5|5|j|alice|cpu|00:01:00|60|00:05:00|COMPLETED|2026-01-01T00:00:00|c"


def _fork(**changes: object) -> str:
    doc = json.loads(json.dumps(FORK))
    doc["workflow"]["tasks"][0].update(changes)
    return json.dumps(doc)


#: (name, command words before the file, file name, file content).  Every one is malformed.
CASES: list[tuple[str, list[str], str, str | bytes]] = [
    ("nextflow size", ["runs", "import", "--format", "nextflow"], "trace.txt",
     TRACE[0] + "\n" + TRACE[1].replace("1.2 GB", "1" * 400 + " GB")),
    ("nextflow bytes", ["runs", "import", "--format", "nextflow"], "trace.txt",
     (TRACE[0] + "\n").encode() + b"\xff\xfe\x00" + TRACE[1].encode()),
    ("lotaru size", ["runs", "import", "--format", "lotaru"], "runs.csv",
     LOTARU[0] + "\n" + LOTARU[1].replace(",8330435694,", ",1e300,")),
    ("json runtime", ["runs", "import", "--format", "json"], "runs.json",
     '{"runs": [{"task": "a", "runtime_s": 1e400}]}'),
    ("json size", ["runs", "import", "--format", "json"], "runs.json",
     '{"runs": [{"task": "a", "runtime_s": 1, "input_bytes": 18446744073709551616}]}'),
    ("json digits", ["runs", "import", "--format", "json"], "runs.json",
     '{"runs": [{"task": "a", "runtime_s": ' + "1" * 5000 + "}]}"),
    ("json surrogate", ["runs", "import", "--format", "json"], "runs.json",
     '{"runs": [{"task": "\\udcff", "runtime_s": 1}]}'),
    ("json nesting", ["runs", "import", "--format", "json"], "runs.json", "[" * 100_000),
    ("nodes NaN", ["nodes", "import"], "nodes.json",
     '{"nodes": [{"name": "a", "scores": {"cpu_single_events_s": NaN}}]}'),
    ("plan cycle", ["plan"], "wf.json", _fork(parents=["right"])),
    ("plan overflow", ["plan", "--nodes", "1"], "wf.json", _fork(runtimeInSeconds=1e308)),
    ("plan children", ["plan"], "wf.json", _fork(children=0.5)),
    ("plan bytes", ["plan"], "wf.json", b'{"name": "\xff"}'),
    ("estimate", ["estimate", "--platform", "summit", "--nodes", "1", "--cores", "1"], "wf.json",
     _fork(runtimeInSeconds=-1)),
    ("insitu", ["insitu"], "steps.csv", "step,S,W,R,A\n" + "9" * 5000 + ",1,1,1,1\n"),
    ("insitu inf", ["insitu"], "steps.csv", "step,S,W,R,A\n0,1e400,1,1,1\n"),
    ("swf replay", ["replay"], "log.swf", SWF_OK + "\n" + " ".join(["1" * 400] * 18) + "\n"),
    ("swf replay bytes", ["replay"], "log.swf", SWF_OK.encode() + b"\n\xff\xfe\n"),
    ("swf header bytes", ["update", "--swf"], "log.swf", b"; Note: \xff\n" + SWF_OK.encode()),
    ("swf update", ["update", "--swf"], "log.swf", SWF_OK + "\n" + SWF_OK.replace("1 7 1", "1" * 5000 + " 7 1") + "\n"),
    ("sacct update", ["update", "--sacct-file"], "dump.txt",
     SACCT_HEADER + "\n" + SACCT_OK + "\n" + SACCT_OK.replace("COMPLETED", "CANCELLED by " + "9" * 5000) + "\n"),
    ("sacct update bytes", ["update", "--sacct-file"], "dump.txt",
     (SACCT_HEADER + "\n" + SACCT_OK + "\n").encode() + b"6|6|\xff|a|cpu|00:00:01|1|1|COMPLETED||c\n"),
]  # fmt: skip


def _rows(db: Path) -> dict[str, int]:
    with Store.open(db, readonly=True) as store:
        tables = [r["name"] for r in store.query("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: store.query(f'SELECT count(*) AS n FROM "{t}"')[0]["n"] for t in tables}  # noqa: S608


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache holding valid runs, so 'nothing written' can be checked against real rows."""
    db = tmp_path_factory.mktemp("cli") / "cache.db"
    good = TEST_DATA / "imports" / "trace.txt"
    assert main(["runs", "import", "--format", "nextflow", "--db", str(db), str(good)]) == 0
    return db


@pytest.mark.parametrize(("words", "name", "content"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_hostile_files_exit_2_with_one_line_naming_the_file(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    words: list[str], name: str, content: str | bytes,
) -> None:  # fmt: skip
    path = write(tmp_path / name, content)
    before = _rows(cache)
    capsys.readouterr()
    uses_cache = words[0] in {"runs", "nodes", "update", "replay"}  # plan --db: on the cluster
    code = main([*words, str(path), *(["--db", str(cache)] if uses_cache else [])])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("advisor: error: "), err
    assert str(path) in lines[0]
    assert _rows(cache) == before


def test_a_bad_file_among_good_ones_imports_nothing(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write(tmp_path / "good.json", '{"runs": [{"task": "new", "runtime_s": 1}]}')
    bad = write(tmp_path / "bad.json", '{"runs": [{"task": "new", "runtime_s": 1e400}]}')
    before = _rows(cache)
    assert main(["runs", "import", "--format", "json", str(good), str(bad), "--db", str(cache)]) == 2
    assert str(bad) in capsys.readouterr().err
    assert _rows(cache) == before


def test_predict_queries_with_absurd_numbers(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = write(tmp_path / "q.csv", "task,node,input_bytes\nNFCORE_BACASS:BACASS:FASTQC,n2-node-7,1e300\n")
    assert main(["predict", "--queries", str(queries), "--db", str(cache)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert str(queries) in line and ":2" in line


def test_the_wrapper_fails_open_on_a_hostile_step_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = write(tmp_path / "steps.csv", "step,S,W,R,A\n0,1e400,1,1,1\n")
    script = write(tmp_path / "job.sh", "#!/bin/sh\ntrue\n")
    code = main(["sbatch", "--insitu", str(steps), "--dry-run", "--db", str(tmp_path / "none.db"),
                 str(script)])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0 and captured.out.strip().endswith(str(script))
    (warning,) = captured.err.splitlines()
    assert warning.startswith("advisor: warning:") and "unchanged" in warning
