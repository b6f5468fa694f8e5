"""Hostile files through the real command line: exit code 2, one stderr line naming the file,
and nothing written to the cache."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.cli import main
from advisor.store import Store
from advisor.text import storable
from tests.helpers.hostile import budget, count, field, mutated_json, write
from tests.helpers.hostile_files import (
    LOTARU,
    NODE_IMPORTS,
    NODE_KEYS,
    PLATFORMS,
    PROBLEM_KEYS,
    PROBLEMS,
    STEP_KEYS,
    STEPS_JSON,
    SWF_LINES,
    TASK_RUNS,
    TRACE,
    WF_KEYS,
    WORKFLOWS,
    sacct_dump,
    steps_csv,
    swf_line,
    table,
    with_bytes,
)
from tests.helpers.paths import TEST_DATA

pytestmark = pytest.mark.fuzz

FORK = json.loads((TEST_DATA / "workflows" / "fork-1.4.json").read_text())
SWF_OK = "1 0 10 100 4 -1 -1 4 3600 -1 1 7 1 3 1 1 -1 -1"
SACCT_HEADER = (
    "JobIDRaw|JobID|JobName|User|Partition|Elapsed|ElapsedRaw|Timelimit|State|End|Cluster"
)
SACCT_OK = "5|5|j|alice|cpu|00:01:00|60|00:05:00|COMPLETED|2026-01-01T00:00:00|c"


def _fork(**changes: object) -> str:
    doc = json.loads(json.dumps(FORK))
    doc["workflow"]["tasks"][0].update(changes)
    return json.dumps(doc)


#: (name, command words before the file, file name, file content).  Every one is malformed.
CASES: list[tuple[str, list[str], str, str | bytes]] = [
    ("nextflow size", ["runs", "import", "--input-format", "nextflow"], "trace.txt",
     TRACE[0] + "\n" + TRACE[1].replace("1.2 GB", "1" * 400 + " GB")),
    ("nextflow bytes", ["runs", "import", "--input-format", "nextflow"], "trace.txt",
     (TRACE[0] + "\n").encode() + b"\xff\xfe\x00" + TRACE[1].encode()),
    ("lotaru size", ["runs", "import", "--input-format", "lotaru"], "runs.csv",
     LOTARU[0] + "\n" + LOTARU[1].replace(",8330435694,", ",1e300,")),
    ("json runtime", ["runs", "import", "--input-format", "json"], "runs.json",
     '{"runs": [{"task": "a", "runtime_s": 1e400}]}'),
    ("json size", ["runs", "import", "--input-format", "json"], "runs.json",
     '{"runs": [{"task": "a", "runtime_s": 1, "input_bytes": 18446744073709551616}]}'),
    ("json digits", ["runs", "import", "--input-format", "json"], "runs.json",
     '{"runs": [{"task": "a", "runtime_s": ' + "1" * 5000 + "}]}"),
    ("json surrogate", ["runs", "import", "--input-format", "json"], "runs.json",
     '{"runs": [{"task": "\\udcff", "runtime_s": 1}]}'),
    ("json nesting", ["runs", "import", "--input-format", "json"], "runs.json", "[" * 100_000),
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
    ("sacct header", ["update", "--sacct-file"], "dump.txt",
     SACCT_HEADER.replace("|State", "") + "\n" + SACCT_OK + "\n"),
    ("sacct json", ["update", "--sacct-file"], "dump.json", '{"jobs": [' + "[" * 100_000),
]  # fmt: skip


def _rows(db: Path) -> dict[str, int]:
    with Store.open(db, readonly=True) as store:
        tables = [
            r["name"] for r in store.query("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        return {t: store.query(f'SELECT count(*) AS n FROM "{t}"')[0]["n"] for t in tables}  # noqa: S608


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache holding valid runs, so 'nothing written' can be checked against real rows."""
    db = tmp_path_factory.mktemp("cli") / "cache.db"
    good = TEST_DATA / "imports" / "trace.txt"
    assert main(["runs", "import", "--input-format", "nextflow", "--db", str(db), str(good)]) == 0
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


def test_one_hostile_sacct_row_is_a_warning_and_strict_refuses_the_dump(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue #15: one bad row (here a 5000-digit uid in the state) rejected the whole dump
    bad = SACCT_OK.replace("5|5", "6|6").replace("COMPLETED", "CANCELLED by " + "9" * 5000)
    path = write(tmp_path / "dump.txt", f"{SACCT_HEADER}\n{SACCT_OK}\n{bad}\n")
    db = tmp_path / "cache.db"
    assert main(["update", "--sacct-file", str(path), "--strict", "--db", str(db)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"advisor: error: {path}:3: job 6: State: not a job state")
    assert line.endswith("--strict: nothing was stored")
    assert main(["update", "--sacct-file", str(path), "--format", "csv", "--db", str(db)]) == 0
    captured = capsys.readouterr()
    (warning,) = captured.err.splitlines()
    assert warning.startswith(f"advisor: warning: {path}:3: job 6: State: not a job state")
    assert "reason,rows\nmalformed,1" in captured.out  # counted in the CSV output too
    assert _rows(db)["accounting_jobs"] == 1


def test_a_job_name_that_is_not_utf8_does_not_refuse_the_dump(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # sacct prints a name as its bytes: one user's Latin-1 name refused every site's dump
    row = b"6|6|\xff|a|cpu|00:00:01|1|1|COMPLETED|2026-01-01T00:00:01|c\n"
    path = write(tmp_path / "dump.txt", (SACCT_HEADER + "\n" + SACCT_OK + "\n").encode() + row)
    db = tmp_path / "cache.db"
    assert main(["update", "--sacct-file", str(path), "--db", str(db)]) == 0, (
        capsys.readouterr().err
    )
    with Store.open(db, readonly=True) as store:
        names = {
            r["job_id"]: r["name"] for r in store.query("SELECT job_id, name FROM accounting_jobs")
        }
    assert names == {"5": "j", "6": "\ufffd"}


def test_a_bad_file_among_good_ones_imports_nothing(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write(tmp_path / "good.json", '{"runs": [{"task": "new", "runtime_s": 1}]}')
    bad = write(tmp_path / "bad.json", '{"runs": [{"task": "new", "runtime_s": 1e400}]}')
    before = _rows(cache)
    assert (
        main(["runs", "import", "--input-format", "json", str(good), str(bad), "--db", str(cache)])
        == 2
    )
    assert str(bad) in capsys.readouterr().err
    assert _rows(cache) == before


def test_predict_queries_with_absurd_numbers(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = write(
        tmp_path / "q.csv", "task,node,input_bytes\nNFCORE_BACASS_BACASS_FASTQC,n2-node-7,1e300\n"
    )
    assert main(["predict", "--queries", str(queries), "--db", str(cache)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert str(queries) in line and ":2" in line


def test_the_wrapper_fails_open_on_a_hostile_step_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = write(tmp_path / "steps.csv", "step,S,W,R,A\n0,1e400,1,1,1\n")
    script = write(tmp_path / "job.sh", "#!/bin/sh\ntrue\n")
    code = main(["sbatch", "--advisor-insitu", str(steps), "--advisor-dry-run", "--advisor-db",
                 str(tmp_path / "none.db"), str(script)])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0 and captured.out.strip().endswith(str(script))
    (warning,) = captured.err.splitlines()
    assert warning.startswith("advisor: warning:") and "unchanged" in warning


# --- any file, any option value: hypothesis through main() --------------------------------------
#
# The same hostile files the per-parser tests generate (their strategies), and hostile values
# of the options that parse numbers, times and names, through the real command line: the exit
# code is 0 or 2, never 1 or a traceback, and a 2 comes with one stderr line that names the file
# or the option.


STEPS = str(TEST_DATA / "insitu" / "pipeline-idle-analyzer.csv")
FORK_PATH = str(TEST_DATA / "workflows" / "fork-1.4.json")
SWF_GOOD = str(TEST_DATA / "traces" / "kth-sp2-excerpt.swf")
TRACE_PATH = str(TEST_DATA / "imports" / "trace.txt")
LOTARU_PATH = str(TEST_DATA / "imports" / "lotaru_local_eager_excerpt.csv")
KNOWN_TASK = "NFCORE_BACASS_BACASS_FASTQC"  # the trace's process, keyed as its jobs
CLI_QUERIES = ["task,node,input_bytes,cores", f"{KNOWN_TASK},n2-node-7,65101034,2",
               f"{KNOWN_TASK},,1000,", "fastqc,local,1,1"]  # fmt: skip

_swf_file = st.lists(st.one_of(st.sampled_from(SWF_LINES), swf_line()),
                     min_size=1, max_size=6).map("\n".join)  # fmt: skip
_json = st.binary(max_size=80)

#: (command words with {file} where the file goes, else at the end; file name; content).
FILE_COMMANDS: dict[str, tuple[list[str], str, st.SearchStrategy[str | bytes]]] = {
    "runs import nextflow": (["runs", "import", "--input-format", "nextflow"], "trace.txt",
                             st.one_of(table(TRACE, "\t"), with_bytes(TRACE))),
    "runs import lotaru": (["runs", "import", "--input-format", "lotaru"], "runs.csv",
                           st.one_of(table(LOTARU, ","), with_bytes(LOTARU))),
    "runs import json": (["runs", "import", "--input-format", "json"], "runs.json",
                         st.one_of(mutated_json(TASK_RUNS), _json)),
    "nodes import": (["nodes", "import"], "nodes.json",
                     st.one_of(mutated_json(NODE_IMPORTS, NODE_KEYS), _json)),
    "predict --queries": (["predict", "--queries"], "queries.csv",
                          st.one_of(table(CLI_QUERIES, ","), with_bytes(CLI_QUERIES))),
    "insitu csv": (["insitu"], "steps.csv", st.one_of(steps_csv(), st.binary(max_size=120))),
    "insitu json": (["insitu"], "steps.json", mutated_json(STEPS_JSON, STEP_KEYS)),
    "replay": (["replay"], "log.swf", _swf_file),
    "update --swf": (["update", "--swf"], "log.swf", _swf_file),
    "update --sacct-file": (["update", "--sacct-file"], "dump.txt", sacct_dump()),
    "plan wfformat": (["plan", "--samples", "3"], "wf.json", mutated_json(WORKFLOWS, WF_KEYS)),
    "plan problem": (["plan", "--samples", "3"], "problem.json", mutated_json(PROBLEMS, PROBLEM_KEYS)),
    "estimate": (["estimate", "--platform", "summit", "--nodes", "2", "--cores", "2"], "wf.json",
                 mutated_json(WORKFLOWS, WF_KEYS)),
    "estimate --platform FILE": (["estimate", "--platform", "{file}", "--nodes", "2", "--cores", "2", FORK_PATH],
                                 "platform.json", st.one_of(mutated_json(PLATFORMS), _json)),
    "plan --platform FILE": (["plan", "--samples", "3", "--platform", "{file}", "--flops-per-unit", "1Gf",
                              FORK_PATH], "platform.json", st.one_of(mutated_json(PLATFORMS), _json)),
}  # fmt: skip

#: --format: JSON refuses NaN and infinities, tables and CSV do not.
FORMATS = ("json", "table", "csv")
_value = st.one_of(field, st.integers(-3, 10**5).map(str), st.floats().map(str))
#: (command words before the options, words after them, options whose values are fuzzed).
OPTION_COMMANDS: dict[str, tuple[list[str], list[str], tuple[str, ...]]] = {
    "report limits": (["report", "limits"], [], ("--since", "--until", "--by", "--sort", "--top", "--user", "--task")),
    "report accuracy": (["report", "accuracy"], [], ("--since", "--until", "--by", "--sort", "--top", "--partition")),
    "report nodes": (["report", "nodes"], [], ("--partition", "--task", "--sort", "--top")),
    "report models": (["report", "models"], [], ("--task", "--sort", "--top")),
    "update --window": (["update", "--swf", SWF_GOOD], [], ("--window",)),
    "insitu": (["insitu", STEPS], [], ("--first", "--steps", "--buffer", "--balance-tolerance")),
    "export": (["export", "--out", "{tmp}/limits.json"], [], ("--quantile", "--margin")),
    "predict": (["predict", "--task", KNOWN_TASK, "--input-bytes=1000"], [], ("--input-bytes", "--cores", "--node", "--partition", "--task")),
    "plan": (["plan", "--samples", "3"], [FORK_PATH], ("--cv", "--seed", "--arrivals", "--bandwidth", "--nodes", "--cores", "--flops-per-unit", "--algorithm")),
    "estimate": (["estimate", "--platform", "summit", "--nodes=2", "--cores=2"], [FORK_PATH], ("--nodes", "--cores", "--flops-per-unit")),
    "runs import nextflow": (["runs", "import", "--input-format", "nextflow"], [TRACE_PATH], ("--node-class", "--workflow", "--label")),
    "runs import lotaru": (["runs", "import", "--input-format", "lotaru"], [LOTARU_PATH], ("--label",)),
    "nodes": (["nodes"], [], ("--reference",)),
}  # fmt: skip


@pytest.fixture(scope="module")
def learned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache with runs and fitted models, copied afresh for every example."""
    db = tmp_path_factory.mktemp("learned") / "cache.db"
    lotaru = [
        str(TEST_DATA / "imports" / f"lotaru_{m}_eager_excerpt.csv")
        for m in ("local", "wallyRedCpu")
    ]
    for words in (["runs", "import", "--input-format", "nextflow", str(TEST_DATA / "imports" / "trace.txt")],
                  ["runs", "import", "--input-format", "lotaru", *lotaru], ["learn"]):  # fmt: skip
        with contextlib.redirect_stdout(io.StringIO()):
            assert main([*words, "--db", str(db)]) == 0
    return db


def _fresh(template: Path, where: Path) -> Path:
    db = where / "cache.db"
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(template, db)
    return db


def through_main(argv: list[str], db: Path | None, named: tuple[str, ...], label: str = "") -> int:
    """main(argv): 0, or 2 with one line naming one of named (and the cache left as it was)."""
    before = _rows(db) if db is not None else None
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*argv, *(["--db", str(db)] if db is not None else [])])
    text = err.getvalue()
    assert code in (0, 2), text
    count(f"{label or argv[0]}: exit {code}")
    if code == 2:
        lines = text.splitlines()
        assert len(lines) == 1 and lines[0].startswith("advisor: error: "), text
        assert any(name in lines[0] for name in named), (named, lines[0])
        if db is not None:
            assert _rows(db) == before
    return code


@budget(300)
@given(data=st.data(), command=st.sampled_from(sorted(FILE_COMMANDS)))
def test_any_file_through_the_command_line(
    learned: Path, scratch: Path, data: st.DataObject, command: str
) -> None:
    words, name, content = FILE_COMMANDS[command]
    path = write(scratch / name, data.draw(content, label="content"))
    argv = [f"--format={data.draw(st.sampled_from(FORMATS), label='format')}"]
    argv += [str(path) if w == "{file}" else w for w in words]
    if "{file}" not in words:
        argv.append(str(path))
    db = (
        _fresh(learned, scratch)
        if words[0] in {"runs", "nodes", "update", "replay", "predict"}
        else None
    )
    named = (str(path), "--") if words[0] in {"plan", "estimate"} else (str(path),)
    through_main(argv, db, named, command)


@budget(300)
@given(data=st.data(), command=st.sampled_from(sorted(OPTION_COMMANDS)))
def test_any_option_value_through_the_command_line(
    learned: Path, scratch: Path, data: st.DataObject, command: str
) -> None:
    before, after, options = OPTION_COMMANDS[command]
    count = data.draw(st.integers(1, min(3, len(options))), label="count")
    chosen = data.draw(st.permutations(options), label="options")[:count]
    argv = [f"--format={data.draw(st.sampled_from(FORMATS), label='format')}"]
    argv += [w.replace("{tmp}", str(scratch)) for w in before]
    values = [data.draw(_value, label=option) for option in chosen]
    argv += [
        f"{o}={v}" for o, v in zip(chosen, values, strict=True)
    ]  # '=': values may start with '-'
    argv += after
    db = (
        _fresh(learned, scratch)
        if before[0] in {"report", "update", "export", "predict", "runs", "nodes"}
        else None
    )
    # the message names the option, the value itself (an unknown task, node or partition), or
    # the workflow file the value did not fit
    files = [w for w in argv if w.startswith("/")]
    shown = [storable(v) for v in values]  # names reach the cache (and messages) as storable text
    named = (*chosen, *files, *(repr(v) for v in shown), *(v for v in shown if v.strip()))
    through_main(argv, db, named, command)


#: Option values the two tests above found, each once a traceback (or a hang) instead of exit 2.
OPTION_REGRESSIONS: list[tuple[str, list[str], str]] = [
    ("negative seed", ["plan", "--samples=3", "--seed=-1", FORK_PATH], "--seed"),  # numpy ValueError
    ("cv 1e300 as json", ["--format=json", "plan", "--samples=3", "--cv=1e300", FORK_PATH], "--cv"),  # NaN in JSON
    ("cv nan", ["plan", "--samples=3", "--cv=nan", FORK_PATH], "--cv"),
    ("10**12 nodes", ["plan", "--samples=3", "--nodes=1000000000000", FORK_PATH], "--nodes"),  # never finished
    ("13e9 slots", ["plan", "--samples=3", "--nodes=200000", "--cores=65536", FORK_PATH], "cores (slots)"),
    # the campaign: an n x n rate matrix of 56504**2 floats (25 GB) took the machine's memory
    ("a network of 56504 nodes", ["plan", "--samples=3", "--nodes=56504", "--bandwidth=1", FORK_PATH], "--bandwidth"),
    ("zero cores", ["plan", "--samples=3", "--nodes=1", "--cores=0", FORK_PATH], "--cores"),  # taken as 1
    ("negative arrival", ["plan", "--samples=3", "--arrivals=-1", FORK_PATH], "--arrivals"),  # unnamed
    ("estimate 10**400 nodes", ["estimate", "--platform=summit", "--cores=1", "--nodes=" + "1" * 400, FORK_PATH], "--nodes"),
    ("input 10**400 bytes", ["predict", f"--task={KNOWN_TASK}", "--input-bytes=" + "1" * 400], "--input-bytes"),
    ("10**400 steps", ["insitu", STEPS, "--steps=" + "1" * 400], "--steps"),  # OverflowError
    ("task not utf-8", ["report", "models", "--task=\udcff"], ""),  # UnicodeEncodeError; now no rows
    ("user not utf-8", ["report", "limits", "--user=\udcff"], ""),
    ("predict task not utf-8", ["predict", "--task=\udcff", "--input-bytes=1"], "unknown task"),
    ("node class not utf-8", ["runs", "import", "--format=nextflow", "--node-class=\udcff", TRACE_PATH], ""),
    ("sort by --", ["report", "accuracy", "--sort=--"], "--sort"),  # argparse gave []: AttributeError
    ("top --", ["report", "models", "--top=--"], "--top"),
    ("group by a record separator", ["report", "accuracy", "--by=0\x1e0"], "--by"),  # two lines
    ("flops not utf-8", ["estimate", "--platform=summit", "--nodes=2", "--cores=2", "--flops-per-unit=\udcff", FORK_PATH], "--flops-per-unit"),
    ("plan flops not utf-8", ["plan", "--samples=3", "--platform=summit", "--flops-per-unit=\udcff", FORK_PATH], "--flops-per-unit"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "named"), [c[1:] for c in OPTION_REGRESSIONS],
                         ids=[c[0] for c in OPTION_REGRESSIONS])  # fmt: skip
def test_option_values_the_fuzzers_found(
    learned: Path, tmp_path: Path, argv: list[str], named: str
) -> None:
    db = _fresh(learned, tmp_path) if argv[0] in {"report", "predict", "runs"} else None
    code = through_main(argv, db, (named,))
    assert code == (0 if not named else 2)


def test_a_task_name_that_is_not_utf8_finds_its_stored_runs(learned: Path, tmp_path: Path) -> None:
    # The name reaches the cache as storable text, so a query with the same bytes finds it.
    db = _fresh(learned, tmp_path)
    assert (
        through_main(
            ["runs", "import", "--format=nextflow", "--workflow=w\udcff", TRACE_PATH], db, ()
        )
        == 0
    )
    with Store.open(db, readonly=True) as store:
        assert {"w\ufffd"} <= {
            r["workflow"] for r in store.query("SELECT workflow FROM observations")
        }


def test_a_platform_whose_rates_make_infinite_estimates_is_an_input_error(tmp_path: Path) -> None:
    # Regression (the 100,000-input campaign): a read rate of 2.2e-308 bytes/s passed the
    # schema, the naive estimate became inf and 'estimate --format json' raised ValueError.
    platform = write(tmp_path / "platform.json", json.dumps({
        "name": "summit", "flops_per_core": 61542441882.6, "read_bytes_per_s": 2.2250738585072014e-308,
        "write_bytes_per_s": 4283134920.6}))  # fmt: skip
    argv = [
        "--format=json",
        "estimate",
        "--platform",
        str(platform),
        "--nodes",
        "2",
        "--cores",
        "2",
        FORK_PATH,
    ]
    assert through_main(argv, None, (str(platform),)) == 2
