"""advisor sbatch and slurm/job_submit.lua against the real test cluster.

Jobs are submitted held (-H) when only their limits matter, and cancelled at once; the few that
run are short.  Task names carry a random suffix, so the limits file this module writes to
/etc/slurm cannot touch other users' jobs; the file is removed afterwards (the cluster starts
without one).
"""

from __future__ import annotations

import json
import os
import pwd
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from advisor.accounting.sacct_file import format_sacct_row
from advisor.history.lookup import history_limit
from advisor.services.cluster import fetch_cluster
from advisor.slurm.backend import CliBackend
from advisor.slurm.parsers import SACCT_FIELDS
from advisor.slurm.records import JobRecord
from advisor.slurm.runner import RetryPolicy
from advisor.slurm.timefmt import format_duration, parse_duration
from advisor.store.connection import Store
from advisor.wrapper import effects
from advisor.wrapper.command import main as sbatch_main
from tests.helpers.caches import train
from tests.helpers.cluster import ADVISOR, EXPORT, cancel, cluster_sh, job_id, show
from tests.helpers.jobs import earned

TASK = f"wt-{secrets.token_hex(3)}"
WAIT_S = 60


def run(
    *argv: str, env: dict[str, str] | None = None, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def advisor_sbatch(
    cache: Path, *args: str, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return run(*ADVISOR, "--db", str(cache), "sbatch", *args, prefix=prefix)


def limit_s(text: str) -> int:
    return parse_duration(text)


@pytest.fixture(scope="module")
def cache(slurm_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The live cluster's partitions, classes small (c1, c2) and big (f1), and TASK learned."""
    partitions, nodes = fetch_cluster(CliBackend())
    return train(tmp_path_factory.mktemp("wrapper") / "cache.db", TASK, partitions, nodes)


@pytest.fixture(scope="module")
def job_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Writes its arguments (NUL-terminated) to the file named by the first one."""
    path = tmp_path_factory.mktemp("job") / "job.sh"
    path.write_text(
        "#!/bin/sh\n#SBATCH --output=/dev/null\n#SBATCH --mem=100M\n"
        'out=$1; shift\nfor a in "$@"; do printf \'%s\\0\' "$a"; done > "$out.tmp"\n'
        'mv "$out.tmp" "$out"\n'
    )
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def input_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("input") / "reads.bin"
    with path.open("wb") as out:
        out.truncate(700_000_000)  # sparse: 700 MB without writing them
    return path


@contextmanager
def explained(
    cache: Path, job_script: Path, *options: str
) -> Iterator[tuple[dict[str, Any], int, dict[str, str]]]:
    """Submit TASK held, explained as JSON; the explanation, job id and scontrol view."""
    done = advisor_sbatch(
        cache, "--advisor-task", TASK, "--advisor-explain", "--advisor-format", "json", "-H",
        *options, str(job_script), "/dev/null",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    job = job_id(done.stdout)
    try:
        start = done.stderr.index("{")
        doc: dict[str, Any] = json.JSONDecoder().raw_decode(done.stderr[start:])[0]
        yield doc, job, show(job)
    finally:
        cancel(job)


def test_explained_limit_is_the_time_limit_and_comment_is_tagged(
    cache: Path, job_script: Path, input_file: Path
) -> None:
    options = ("--advisor-input", str(input_file), "-p", "cpu")
    with explained(cache, job_script, *options) as (doc, job, info):
        time_s = doc["decision"]["time_s"]
        assert limit_s(info["TimeLimit"]) == time_s
        assert (
            f"advisor:wrapper,action=set,limit={time_s // 60},q=0.95,task={TASK}" in info["Comment"]
        )
        assert doc["input_bytes"] == 700_000_000
    with Store.open(cache, readonly=True) as store:
        rows = store.query(
            "SELECT task, job_id, outcome, limit_s FROM advice WHERE job_id = ?", (job,)
        )
    assert rows == [{"task": TASK, "job_id": job, "outcome": "submitted", "limit_s": time_s}]


def test_two_partitions_give_the_largest_limit_and_the_smallest_as_time_min(
    cache: Path, job_script: Path
) -> None:
    with explained(cache, job_script, "-p", "cpu,fat") as (doc, _, info):
        limits = {p["partition"]: p["limit_s"] for p in doc["partitions"]}
        assert limits["cpu"] > limits["fat"]
        assert limit_s(info["TimeLimit"]) == limits["cpu"]
        assert limit_s(info["TimeMin"]) == limits["fat"]


def test_pick_earliest_submits_to_one_partition_with_its_limit(
    cache: Path, job_script: Path
) -> None:
    options = ("--advisor-pick", "earliest", "-p", "cpu,fat")
    with explained(cache, job_script, *options) as (doc, _, info):
        assert info["Partition"] in ("cpu", "fat")
        assert info["Partition"] == doc["picked"]
        limits = {p["partition"]: p["limit_s"] for p in doc["partitions"]}
        assert limit_s(info["TimeLimit"]) == limits[info["Partition"]]
        assert len(doc["estimates"]) == 2


def test_a_given_time_is_kept(cache: Path, job_script: Path) -> None:
    done = advisor_sbatch(
        cache, "--advisor-task", TASK, "-H", "-t", "7", str(job_script), "/dev/null"
    )
    job = job_id(done.stdout)
    try:
        info = show(job)
        assert info["TimeLimit"] == "00:07:00"
        assert "action=kept" in info["Comment"]
    finally:
        cancel(job)


def test_arguments_reach_the_job_unchanged(cache: Path, job_script: Path, tmp_path: Path) -> None:
    args = ["a b", "it's", 'say "hi"', "$HOME", "a;b", "x\ny", "--advisor-task", "-p", "", "*",
            "é"]  # fmt: skip
    out = tmp_path / "argv.bin"
    done = advisor_sbatch(
        cache,
        "--advisor-task",
        TASK,
        "-p",
        "cpu",
        "-J",
        "x y;$z",
        str(job_script),
        str(out),
        *args,
    )
    assert done.returncode == 0, done.stderr
    job = job_id(done.stdout)
    try:
        deadline = time.monotonic() + WAIT_S
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.3)
        assert out.exists(), f"job {job} did not run within {WAIT_S} s"
        assert out.read_bytes() == b"".join(a.encode() + b"\0" for a in args)
        assert show(job)["JobName"] == "x y;$z"  # MinJobAge keeps finished jobs visible
    finally:
        cancel(job)


def test_a_job_name_without_model_gets_its_history_limit(
    cache: Path, job_script: Path, tmp_path: Path
) -> None:
    """Five completed 600 s runs of the name in accounting and a partition whose kill budget has
    earned its margins: the history policy's limit, on Slurm."""
    me = pwd.getpwuid(os.getuid()).pw_name
    name = f"{TASK}-history"
    start = datetime(2026, 1, 1)
    jobs = [
        JobRecord("advisor", str(700 + i), 700 + i, name, me, "x", "cpu", ("c1",), 1, 100.0,
                  600, 3600, None, "COMPLETED", None, 0, 0, start, start,
                  start + timedelta(seconds=600 + i), "")
        for i in range(5)
    ]  # fmt: skip
    dump = tmp_path / "sacct.txt"
    dump.write_text(
        "|".join(SACCT_FIELDS) + "\n" + "".join(f"{format_sacct_row(j)}\n" for j in jobs)
    )
    mine = tmp_path / "cache.db"
    shutil.copy(cache, mine)
    done = run(*ADVISOR, "--db", str(mine), "update", "--sacct-file", str(dump))
    assert done.returncode == 0, done.stderr
    with Store.open(mine) as store:
        earned(store, "cpu")
        found = history_limit(store, me, name, "cpu")
    assert found is not None
    limit = found[0]
    submitted = advisor_sbatch(mine, "-H", "-J", name, "-p", "cpu", str(job_script), "/dev/null")
    assert submitted.returncode == 0 and submitted.stderr == "", submitted.stderr
    job = job_id(submitted.stdout)
    try:
        info = show(job)
        assert info["TimeLimit"] == format_duration(limit)
        assert info["Comment"] == f"advisor:history,action=set,limit={limit // 60},task={name}"
    finally:
        cancel(job)
    with Store.open(mine, readonly=True) as store:
        rows = store.query("SELECT policy, task, limit_s FROM advice WHERE job_id = ?", (job,))
    assert rows == [{"policy": "history", "task": name, "limit_s": limit}]  # counts as running


def _fail_open(cache_arg: Path, job_script: Path, prefix: tuple[str, ...] = ()) -> None:
    done = advisor_sbatch(
        cache_arg, "--advisor-task", TASK, "-H", str(job_script), "/dev/null", prefix=prefix
    )
    assert done.returncode == 0, done.stderr
    job = job_id(done.stdout)
    try:
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("advisor: warning:"), done.stderr
        info = show(job)
        assert info["TimeLimit"] == "00:30:00"  # the partition's default: submitted as written
        assert "advisor:" not in info.get("Comment", "")
    finally:
        cancel(job)
    plain = advisor_sbatch(cache_arg, "-p", "no-such-partition", str(job_script), prefix=prefix)
    reference = run("sbatch", "-p", "no-such-partition", str(job_script))
    assert plain.returncode == reference.returncode != 0
    assert reference.stderr.strip() in plain.stderr


def test_fail_open_when_the_cache_is_deleted(tmp_path: Path, job_script: Path) -> None:
    _fail_open(tmp_path / "deleted.db", job_script)


def test_fail_open_when_the_cache_is_corrupt(tmp_path: Path, job_script: Path) -> None:
    bad = tmp_path / "corrupt.db"
    bad.write_bytes(b"SQLite format 3\x00" + os.urandom(8192))
    _fail_open(bad, job_script)


@pytest.mark.skipif(
    shutil.which("setpriv") is None, reason="needs setpriv to drop root's DAC override"
)
def test_fail_open_when_the_cache_is_unreadable(
    cache: Path, tmp_path: Path, job_script: Path
) -> None:
    locked = tmp_path / "locked.db"
    shutil.copy(cache, locked)
    locked.chmod(0)
    no_override = (
        "setpriv",
        "--inh-caps=-dac_override,-dac_read_search",
        "--bounding-set=-dac_override,-dac_read_search",
    )
    assert run("cat", str(locked), prefix=no_override).returncode != 0  # really unreadable
    _fail_open(locked, job_script, prefix=no_override)


def _replace_export(text: str) -> None:
    tmp = EXPORT.with_suffix(".test-tmp")
    tmp.write_text(text)
    tmp.chmod(0o644)
    os.replace(tmp, EXPORT)


def test_plain_sbatch_gets_the_exported_limit_from_the_plugin(
    cache: Path, job_script: Path, plugin_and_export: None
) -> None:
    done = run(*ADVISOR, "--db", str(cache), "--format", "json", "export", "--out", str(EXPORT))
    assert done.returncode == 0, done.stderr
    exported = json.loads(done.stdout)["tasks"][TASK]["partitions"]
    plain = run("sbatch", "-H", "-J", TASK, str(job_script), "/dev/null")
    assert plain.returncode == 0, plain.stderr
    assert plain.stderr.count("advisor: no --time given") == 1
    job = job_id(plain.stdout)
    try:
        info = show(job)
        assert info["TimeLimit"] == format_duration(exported["cpu"]["limit_min"] * 60)
        assert (
            info["Comment"]
            == f"advisor:lua,action=set,limit={exported['cpu']['limit_min']},task={TASK}"
        )
    finally:
        cancel(job)
    two = run("sbatch", "-H", "-J", TASK, "-p", "cpu,fat", str(job_script), "/dev/null")
    job = job_id(two.stdout)
    try:
        info = show(job)
        assert limit_s(info["TimeLimit"]) == exported["cpu"]["limit_min"] * 60
        assert limit_s(info["TimeMin"]) == exported["fat"]["limit_min"] * 60
    finally:
        cancel(job)
    given = run("sbatch", "-H", "-J", TASK, "-t", "3", str(job_script), "/dev/null")
    job = job_id(given.stdout)
    try:
        assert show(job)["TimeLimit"] == "00:03:00"
        assert "advisor" not in given.stderr
    finally:
        cancel(job)


def test_a_corrupt_export_lets_jobs_through_unchanged(
    job_script: Path, plugin_and_export: None
) -> None:
    _replace_export(
        json.dumps(
            {"version": 3, "tasks": {TASK: {"partitions": {"cpu": {"limit_min": 11}}}}, "users": {}}
        )
    )
    first = run("sbatch", "-H", "-J", TASK, str(job_script), "/dev/null")
    job = job_id(first.stdout)
    try:
        assert show(job)["TimeLimit"] == "00:11:00"  # the plugin reads a valid file...
    finally:
        cancel(job)
    time.sleep(1.1)  # ...and notices the next one (the plugin also compares size and inode)
    _replace_export('{"version": 3, "tasks": {"' + TASK + '": ')
    done = run("sbatch", "-H", "-J", TASK, str(job_script), "/dev/null")
    assert done.returncode == 0, done.stderr
    job = job_id(done.stdout)
    try:
        info = show(job)
        assert info["TimeLimit"] == "00:30:00"
        assert "advisor" not in info.get("Comment", "") + done.stderr
    finally:
        cancel(job)


def test_stopped_controller_gives_sbatchs_error_after_bounded_retries(
    cache: Path, job_script: Path
) -> None:
    policy = RetryPolicy(attempts=2, max_delay_s=30, first_wait_s=0.5, max_wait_s=1)
    calls: list[float] = []

    def counting(argv, timeout_s, stdin=None):  # type: ignore[no-untyped-def]
        calls.append(time.monotonic())
        from advisor.slurm.runner import run_subprocess

        return run_subprocess(argv, timeout_s, stdin)

    side = effects.real()._replace(
        run_sbatch=partial(effects.run_sbatch, policy=policy, runner=counting)
    )
    import io

    out, err = io.StringIO(), io.StringIO()
    before = Store.open(cache, readonly=True)
    count = before.query("SELECT COUNT(*) AS n FROM advice")[0]["n"]
    before.close()
    cluster_sh("stop-daemon", "slurmctld")
    try:
        start = time.monotonic()
        code = sbatch_main(
            ["--advisor-db", str(cache), "--advisor-task", TASK, str(job_script), "/dev/null"],
            side=side,
            out=out,
            err=err,
        )
        elapsed = time.monotonic() - start
    finally:
        cluster_sh("start-daemon", "slurmctld")
    assert code == 1
    assert "Unable to contact slurm controller" in err.getvalue()
    assert out.getvalue() == ""
    assert len(calls) == 2
    assert elapsed < 60
    with Store.open(cache, readonly=True) as store:
        rows = store.query("SELECT outcome, job_id FROM advice ORDER BY id")
    assert len(rows) == count + 1
    assert rows[-1] == {"outcome": "failed", "job_id": None}


def test_sbatch_option_table_matches_the_installed_sbatch(slurm_cluster: None) -> None:
    from advisor.sbatch.options import LONG_OPTIONS, ONLY_IN, SHORT_OPTIONS, Arg

    installed = re.search(r"(\d+\.\d+)\.\d+", run("sbatch", "--version").stdout)
    assert installed, "sbatch --version printed no version"
    for name, kind in LONG_OPTIONS.items():
        if name == "wrap":  # with a value it would submit a job
            assert "requires an argument" in run("sbatch", "--wrap").stderr
            continue
        with_value = run("sbatch", f"--{name}=x").stderr
        if ONLY_IN.get(name, installed.group(1)) != installed.group(1):
            longer = [o for o in LONG_OPTIONS if o != name and o.startswith(name)
                      and ONLY_IN.get(o, installed.group(1)) == installed.group(1)]  # fmt: skip
            if not longer:  # else getopt takes it for that one (22.05: --extra, --extra-node-info)
                assert f"unrecognized option '--{name}=x'" in with_value, (
                    name
                )  # the other version's
            continue
        without = run("sbatch", f"--{name}").stderr if kind is not Arg.NONE else ""
        assert "unrecognized option" not in with_value, name
        if kind is Arg.NONE:
            assert f"'--{name}' doesn't allow an argument" in with_value, name
        elif kind is Arg.REQUIRED:
            assert f"'--{name}' requires an argument" in without, name
        else:
            assert "requires an argument" not in without and "doesn't allow" not in with_value, name
    for letter, name in SHORT_OPTIONS.items():
        if LONG_OPTIONS[name] is Arg.REQUIRED:
            assert "requires an argument" in run("sbatch", f"-{letter}").stderr, letter
