"""The task key of workflow managers' jobs, in Python and in slurm/job_submit.lua alike.

tests/data/taskkey/cases.json holds the cases both implementations must agree on; the
properties build job names and comments the way Nextflow and snakemake-executor-plugin-slurm
do (their code is cited in advisor/taskkey.py's docstring and the report of issue 15).
"""

from __future__ import annotations

import getpass
import json
import random
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.accounting.sacct_file import format_sacct_row, read_sacct_dump
from advisor.accounting.saved import update_from_file
from advisor.cli import main
from advisor.history.lookup import history_limit
from advisor.imports.nextflow import read_trace
from advisor.slurm.parsers import SACCT_FIELDS
from advisor.store import Store
from advisor.taskkey import nextflow_process_key, task_key
from advisor.text import percent_encode
from tests.helpers.caches import NODES, PARTITIONS, train
from tests.helpers.captures import capture
from tests.helpers.jobs import earned
from tests.helpers.lua_plugin import NO_VAL, PARTS, run_cases
from tests.helpers.paths import TEST_DATA

CASES: list[dict[str, Any]] = json.loads(
    (TEST_DATA / "taskkey" / "cases.json").read_text(encoding="utf-8")
)["cases"]

#: AbstractGridExecutor.INVALID_NAME_CHARS as it works (its "\\n", "\\t", "\\r" match nothing).
_NEXTFLOW_INVALID = " /:@*?="


def nextflow_job_name(task_name: str) -> str:
    """What Nextflow's getJobNameFor gives a task name (nextflow-io/nextflow, see the module)."""
    return ("nf-" + "".join("_" if c in _NEXTFLOW_INVALID else c for c in task_name))[:256]


def snakemake_comment(rule: str, wildcards: list[str]) -> str:
    """What snakemake-executor-plugin-slurm's run_job gives a job as --comment."""
    values = "_".join(wildcards).replace("/", "_")
    return f"rule_{rule}_wildcards_{values}" if values else f"rule_{rule}"


def test_every_shared_case_in_python() -> None:
    wrong = [
        (case["name"], case["comment"], task_key(case["name"], case["comment"]), case["key"])
        for case in CASES
        if task_key(case["name"], case["comment"]) != case["key"]
    ]
    assert wrong == []


def test_every_shared_case_in_the_lua_plugin(lua: str, tmp_path: Path) -> None:
    """Each case's job gets the limit exported for its key, and a tag naming that key."""
    keys = sorted({case["key"] for case in CASES if case["key"]})
    limit = {key: 10 + index for index, key in enumerate(keys)}
    export = {
        "version": 3,
        "tasks": {key: {"partitions": {"cpu": {"limit_min": limit[key]}}} for key in keys},
        "users": {},
    }
    jobs = []
    for case in CASES:
        job = {"name": case["name"]}
        if case["comment"] is not None:
            job["comment"] = case["comment"]
        jobs.append({"job": job, "parts": PARTS})
    jobs[0]["export_text"] = json.dumps(export)
    results = run_cases(lua, tmp_path, jobs)
    for case, result in zip(CASES, results, strict=True):
        if not case["key"]:
            assert (result["time_limit"], result["logs"]) == (NO_VAL, []), case
            assert result["comment"] == (case["comment"] or ""), case
            continue
        assert result["time_limit"] == limit[case["key"]], case
        tag = (
            f"advisor:lua,action=set,limit={limit[case['key']]},task={percent_encode(case['key'])}"
        )
        mine = case["comment"]
        assert result["comment"] == (f"{mine} {tag}" if mine else tag), case


def _tricky(rng: random.Random) -> tuple[str, str | None]:
    """A name and comment built from the pieces the rules look at, in random order."""
    pieces = ["nf-", "_(", "(", ")", "_", ":", " ", "\t", "\u00e9", "-", "rule_", "_wildcards_",
              "A", "b", "7", "advisor:lua,action=set"]  # fmt: skip

    def text(prefixes: list[str]) -> str:
        rest = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 5)))
        return rng.choice(prefixes) + rest

    uuid_text = str(uuid.UUID(int=rng.getrandbits(128)))
    name = rng.choice([text(["nf-", "nf-A", "NF-", ""]), uuid_text, uuid_text.upper()])
    comment = text(["rule_", "rule_b", " rule_", ""]) if rng.random() < 0.85 else None
    return name, comment


def test_python_and_lua_agree_on_random_tricky_names(lua: str, tmp_path: Path) -> None:
    """400 names and comments made of the rules' own pieces (fixed seed)."""
    rng = random.Random(15)
    cases = [_tricky(rng) for _ in range(400)]
    keys = [task_key(name, comment) for name, comment in cases]
    limit = {key: 10 + i for i, key in enumerate(sorted(set(keys) - {""}))}
    export = {
        "version": 3,
        "tasks": {k: {"partitions": {"cpu": {"limit_min": m}}} for k, m in limit.items()},
    }
    jobs: list[dict[str, Any]] = []
    for name, comment in cases:
        job = {"name": name} if comment is None else {"name": name, "comment": comment}
        jobs.append({"job": job, "parts": PARTS})
    jobs[0]["export_text"] = json.dumps(export)
    results = run_cases(lua, tmp_path, jobs)
    lua = [r["time_limit"] for r in results]
    assert lua == [limit.get(key, NO_VAL) for key in keys]


_PART = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,20}", fullmatch=True)
_PROCESS = st.lists(_PART, min_size=1, max_size=4).map(":".join)
_TAG = st.text(st.characters(blacklist_categories=("Cs",)), max_size=300)


@given(process=_PROCESS, tag=st.one_of(st.none(), _TAG, st.integers(1, 10**6).map(str)))
def test_a_nextflow_job_is_keyed_as_the_trace_keys_its_process(
    process: str, tag: str | None
) -> None:
    """TaskRun.getName: 'PROCESS (tag)', 'PROCESS (index)', or 'PROCESS' for a singleton."""
    name = nextflow_job_name(process if tag is None else f"{process} ({tag})")
    assert task_key(name, "whatever the comment") == nextflow_process_key(process)


@given(
    rule=st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,30}", fullmatch=True).filter(
        lambda rule: "_wildcards_" not in f"{rule}_"
    ),
    wildcards=st.lists(st.text(max_size=20), max_size=3),
)
def test_a_snakemake_job_is_keyed_by_its_rule(rule: str, wildcards: list[str]) -> None:
    comment = snakemake_comment(rule, wildcards)
    if " " in comment or "\t" in comment:  # the rule is cut at the first blank
        return
    assert task_key(str(uuid.uuid4()), comment) == rule
    assert task_key(str(uuid.uuid4()), f"{comment} advisor:lua,action=set,limit=3") == rule


def test_a_nextflow_trace_names_its_processes_as_their_jobs_do(tmp_path: Path) -> None:
    trace = tmp_path / "trace.txt"
    trace.write_text(
        "task_id\thash\tprocess\tname\tstatus\trealtime\n"
        "1\tab/cdef12\tNFCORE_X:QC:FASTQC\tNFCORE_X:QC:FASTQC (s1)\tCOMPLETED\t5s\n"
        "2\tab/cdef13\t\tNFCORE_X:MULTIQC\tCOMPLETED\t7s\n"
    )
    tasks = [run.task for run in read_trace(trace)]
    assert tasks == ["NFCORE_X_QC_FASTQC", "NFCORE_X_MULTIQC"]
    assert task_key(nextflow_job_name("NFCORE_X:QC:FASTQC (s1)")) == tasks[0]
    assert task_key(nextflow_job_name("NFCORE_X:MULTIQC")) == tasks[1]


def test_a_process_name_longer_than_nextflows_cut_still_agrees() -> None:
    process = "P" * 300
    assert (
        task_key(nextflow_job_name(f"{process} (1)")) == nextflow_process_key(process) == "P" * 253
    )


def _recorded_workflow_jobs(tmp_path: Path, user: str) -> Path:
    """tests/integration/test_workflow_jobs.py's recorded jobs, as if user had run them."""
    dump = tmp_path / "recorded.txt"
    dump.write_text(capture("sacct_workflow_jobs.txt").body)
    jobs = [job._replace(user=user) for _, job in read_sacct_dump(dump)]
    mine = tmp_path / "sacct.txt"
    mine.write_text(
        "|".join(SACCT_FIELDS) + "\n" + "".join(f"{format_sacct_row(j)}\n" for j in jobs)
    )
    return mine


def test_recorded_workflow_jobs_are_learned_per_process_and_rule(tmp_path: Path) -> None:
    dump = tmp_path / "recorded.txt"
    dump.write_text(capture("sacct_workflow_jobs.txt").body)
    names = [job.name for _, job in read_sacct_dump(dump)]
    assert sum(name.startswith("nf-") for name in names) == 6 and len(set(names)) == 7
    with Store.open(tmp_path / "cache.db") as store:
        update_from_file(store, dump, kind="sacct")
        tasks = Counter(row["task"] for row in store.query("SELECT task FROM observations"))
        keys = {
            row["name"]
            for row in store.query("SELECT name FROM history_keys WHERE kind = 'user+name'")
        }
    process, rule = (key for key, count in tasks.most_common(2))
    assert sorted(tasks.values()) == [1, 5, 5] and keys == set(tasks)
    assert process.startswith("WF") and process.endswith("_QC_FASTQC")
    assert rule.startswith("bwa_map_")


@pytest.mark.parametrize("classic", [False, True])
def test_the_wrapper_gives_a_recorded_rules_next_job_its_history_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], classic: bool
) -> None:
    # The rule's next job, named as the Slurm executor plugin names it (the run's UUID and
    # the rule in the comment) or as classic Snakemake does (snakejob.<rule>.<jobid>.sh).
    user = getpass.getuser()
    cache = train(tmp_path / "cache.db", "align", PARTITIONS, NODES)
    with Store.open(cache) as store:
        update_from_file(store, _recorded_workflow_jobs(tmp_path, user), kind="sacct")
        earned(store, "cpu")
        (rule,) = {
            row["task"]
            for row in store.query("SELECT task FROM observations")
            if row["task"].startswith("bwa_map_")
        }
        found = history_limit(store, user, rule, "cpu")
    assert found is not None
    limit = found[0]
    if classic:
        comment, named = "", ["-J", f"snakejob.{rule}.17.sh"]
    else:
        comment = f"rule_{rule}_wildcards_sample_7"
        named = ["-J", str(uuid.uuid4()), "--comment", comment]
    argv = ["--db", str(cache), "sbatch", "--advisor-dry-run", "-p", "cpu", *named,
            "--wrap", "true"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"--time={limit // 3600:02d}:{limit % 3600 // 60:02d}:00" in out
    tag = f"advisor:history,action=set,limit={limit // 60},task={rule}"
    assert (f"--comment={comment} {tag}" if comment else f"--comment={tag}") in out


def test_a_nextflow_job_script_gets_the_model_its_processs_trace_taught(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = train(tmp_path / "cache.db", "align", PARTITIONS, NODES)
    rows = ["task_id\thash\tprocess\tname\tstatus\trealtime\trchar\thostname"]
    rows += [f"{i}\tab/{i:06x}\tNF_X:QC:FASTQC\tNF_X:QC:FASTQC (s{i})\tCOMPLETED\t{30 + 20 * i}s\t"
             f"{(i + 1) * 100} MB\tc1" for i in range(12)]  # fmt: skip
    trace = tmp_path / "trace.txt"
    trace.write_text("\n".join(rows) + "\n")
    imported = ["--db", str(cache), "runs", "import", str(trace), "--input-format", "nextflow"]
    assert main([*imported, "--node-class", "small"]) == 0
    assert main(["--db", str(cache), "learn"]) == 0
    script = tmp_path / ".command.run"  # as Nextflow writes it: the name in a #SBATCH line
    script.write_text("#!/bin/bash\n#SBATCH -J nf-NF_X_QC_FASTQC_(s99)\n#SBATCH -p cpu\nsleep 1\n")
    capsys.readouterr()
    assert main(["--db", str(cache), "sbatch", "--advisor-dry-run", str(script)]) == 0
    out = capsys.readouterr().out
    assert (
        "--time=" in out and ",task=NF_X_QC_FASTQC" in out and "advisor:wrapper,action=set" in out
    )
