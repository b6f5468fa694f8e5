"""Privilege: the site layout of contrib/site/README.md, tried as real unprivileged users.

The administrator (root here) keeps the working cache (WAL mode) in a private directory and
publishes the read-only copies with ``advisor publish`` (rollback journal, in a root-owned 0755
directory: shared.db 0644, and each user's own <uid>.db, theirs alone); users' ``advisor
sbatch`` reads the directory, slurmctld's job_submit.lua reads the JSON export (0640, group
slurm, with its key beside it).  The users are ``nobody``, ``daemon`` and ``slurm``; their jobs are submitted held
and cancelled.  Task names carry a random suffix, so the limits file this module writes to
/etc/slurm touches no one else's jobs; it is removed afterwards.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pwd
import re
import secrets
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from advisor.accounting.sacct_file import format_sacct_row
from advisor.advice.snapshot import load_snapshot
from advisor.history.cache import (
    load_budgets,
    load_key_states,
    load_quantiles,
    save_key_states,
)
from advisor.history.cells import LEVELS, key_cell
from advisor.history.keys import HistoryKey
from advisor.history.lookup import history_advice, history_limit
from advisor.history.policy import DEFAULT_CONFIG, KeyState, Proposal, clamp, margin_limit_s
from advisor.services.cluster import fetch_cluster
from advisor.services.export import UserLimits, export_document
from advisor.services.publish import publish_copies
from advisor.slurm.backend import CliBackend
from advisor.slurm.parsers import SACCT_FIELDS
from advisor.slurm.records import JobRecord
from advisor.slurm.timefmt import format_duration, parse_duration
from advisor.store.advice import Advice, record_advice
from advisor.store.cluster import load_partitions, save_cluster
from advisor.store.connection import Store
from advisor.store.names import name_key
from advisor.validate import validate
from benchmarks.bench_load import train_cache
from tests.helpers.cluster import (
    EXPORT,
    export_key_of,
    install_export,
    install_plugin,
    job_id,
    remove_export,
    show,
)
from tests.helpers.jobs import earned
from tests.helpers.paths import REPO

# cluster_turns: writes the plugin's export
pytestmark = [pytest.mark.slow, pytest.mark.cluster(uses=("daemons", "nodes"), owns=("export",))]

TASK = f"pv-{secrets.token_hex(3)}"
BIG = f"{TASK}-big"  # in the export with limits far above every MaxTime
WRITER = "nobody"  # the history keys of the half-transaction test: the reader's own

# Run by other users: counts torn reads of a cache another process keeps rewriting.  Each
# generation adds 10 history keys of the reader (nobody) named "<generation>-<i>" in one
# transaction (in nobody's own published file): two queries in one read see 10 per generation.
READER = """
import json, os, sys, time
from advisor.store import Store
path, stop, writer = sys.argv[1], sys.argv[2], sys.argv[3]
reads = errors = torn = 0
seen, last = set(), ""
print("ready", flush=True)
end = time.monotonic() + 300  # only if the writer died without saying stop
while not os.path.exists(stop) and time.monotonic() < end:
    try:
        with Store.open(path, readonly=True) as store, store.read():  # as load_snapshot does
            rows = store.query("SELECT COUNT(*) AS n FROM history_keys WHERE user = ?", (writer,))
            mark = store.query("SELECT MAX(CAST(substr(name, 1, instr(name, '-') - 1) AS INTEGER)) "
                               "AS g FROM history_keys WHERE user = ?", (writer,))
    except Exception as error:
        errors, last = errors + 1, repr(error)
        continue
    reads += 1
    generation = int(mark[0]["g"] or 0) if mark else 0
    torn += rows[0]["n"] != 10 * generation
    seen.add(generation)
print(json.dumps({"reads": reads, "errors": errors, "torn": torn, "generations": len(seen),
                  "last_error": last}))
"""


@dataclass(frozen=True)
class Site:
    """The site layout: root-owned 0755 directory, private working cache, published copies."""

    root: Path
    working: Path
    copy: Path
    python: tuple[str, ...]  # how other users run the advisor
    env: dict[str, str]


def run(
    argv: Sequence[str], *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=120, check=False,
                          env=env, cwd=cwd, stdin=subprocess.DEVNULL)  # fmt: skip


def as_user(site: Site, user: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return run(["runuser", "-u", user, "--", *argv], env=site.env, cwd=site.root)


def advisor_as(site: Site, user: str, *args: str) -> subprocess.CompletedProcess[str]:
    return as_user(site, user, *site.python, "-m", "advisor", *args)


def advisor(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "advisor", *map(str, args)])


def fingerprint(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under folder: mode, owner and content hash."""
    return {
        str(path.relative_to(folder)): (
            path.stat().st_mode, path.stat().st_uid, hashlib.sha256(path.read_bytes()).hexdigest()
        )
        for path in sorted(folder.rglob("*")) if path.is_file()
    }  # fmt: skip


def _users_python() -> tuple[tuple[str, ...], dict[str, str]]:
    """This interpreter when other users may run it, else python3 with the repository on the path."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    probe = ("-c", "import advisor, tenacity")
    own = run(["runuser", "-u", "nobody", "--", sys.executable, *probe], env=env, cwd=Path("/"))
    if own.returncode == 0:
        return (sys.executable,), env
    # A venv under a home directory other users cannot enter (pyenv in /root, here)
    system = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or "python3"
    env["PYTHONPATH"] = os.pathsep.join((str(REPO), sysconfig.get_paths()["purelib"]))
    other = run(["runuser", "-u", "nobody", "--", system, *probe], env=env, cwd=Path("/"))
    if other.returncode != 0:
        pytest.skip(f"user nobody cannot run the advisor from {REPO}: {other.stderr.strip()}")
    return (system,), env


@pytest.fixture(scope="module")
def site(slurm_cluster: None) -> Iterator[Site]:
    python, env = _users_python()
    root = Path(tempfile.mkdtemp(prefix="advisor-site-"))
    try:
        root.chmod(0o755)
        private = root / "private"
        private.mkdir(mode=0o700)
        working = train_cache(private / "cache.db", TASK)
        copies = root / "copies"
        copies.mkdir(mode=0o755)
        done = advisor("--db", working, "publish", "--out", copies)
        assert done.returncode == 0, done.stderr
        yield Site(root, working, copies, python, env)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def dry_run(site: Site, user: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return advisor_as(site, user, "--db", str(cache), "sbatch", "--advisor-dry-run", "-J", TASK,
                      "--wrap", "true")  # fmt: skip


def test_the_published_copy_is_root_owned_0644_in_a_0755_directory(site: Site) -> None:
    shared = site.copy / "shared.db"
    for path, mode in ((site.root, 0o755), (site.copy, 0o755), (shared, 0o644),
                       (site.working.parent, 0o700), (site.working, 0o600)):  # fmt: skip
        info = path.stat()
        assert (info.st_uid, info.st_mode & 0o777) == (0, mode), path
    assert shared.read_bytes()[18:20] == b"\x01\x01"  # rollback journal; WAL would be 2, 2


def test_a_wal_cache_in_a_directory_users_cannot_write_fails_open_so_they_read_the_copy(
    site: Site,
) -> None:
    folder = site.root / "wal"
    folder.mkdir(mode=0o755)
    wal = folder / "cache.db"
    shutil.copyfile(site.working, wal)
    wal.chmod(0o644)
    assert wal.read_bytes()[18:20] == b"\x02\x02"  # WAL mode, and no -shm or -wal beside it
    trapped = dry_run(site, "nobody", wal)
    assert trapped.returncode == 0
    assert trapped.stdout.strip() == f"sbatch -J {TASK} --wrap true"  # unchanged: failed open
    lines = trapped.stderr.strip().splitlines()
    assert len(lines) == 1, trapped.stderr
    assert "attempt to write a readonly database" in lines[0]
    assert "advisor publish" in lines[0]
    shutil.rmtree(folder)

    before = fingerprint(site.root)
    advised = dry_run(site, "nobody", site.copy)
    assert advised.returncode == 0 and advised.stderr == ""
    assert "--time=" in advised.stdout
    assert "--comment=advisor:wrapper,action=set,limit=" in advised.stdout
    assert fingerprint(site.root) == before  # read-only: nothing created, nothing changed


def test_users_read_the_copies_and_only_user_slurm_the_export(site: Site) -> None:
    """Issue 31 N4: the export (0644) told every user each user's limits; now 0640, slurm's."""
    export = site.root / "limits.json"
    done = advisor("--db", site.working, "export", "--out", export)
    assert done.returncode == 0, done.stderr
    slurm_gid = pwd.getpwnam("slurm").pw_gid
    for path in (export, Path(f"{export}.key")):
        info = path.stat()
        assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (0, slurm_gid, 0o640), path
    snippet = (
        "import json, sys\nfrom advisor.store import Store\n"
        "with Store.open(sys.argv[1], readonly=True) as store:\n"
        "    rows = store.query('SELECT DISTINCT task FROM task_models')\n"
        "try:\n    export = sorted(json.load(open(sys.argv[2]))['tasks'])\n"
        "except PermissionError:\n    export = 'denied'\n"
        "print(json.dumps({'models': [r['task'] for r in rows], 'export': export}))"
    )
    for user, seen in (("nobody", "denied"), ("slurm", [TASK])):
        read = as_user(site, user, *site.python, "-c", snippet, str(site.copy), str(export))
        assert read.returncode == 0, f"{user}: {read.stderr}"
        assert json.loads(read.stdout) == {"models": [TASK], "export": seen}, user


def test_a_user_submits_through_the_copy_and_gets_the_advised_limit_without_a_warning(
    site: Site,
) -> None:
    name = f"{TASK}-nobody"
    done = advisor_as(site, "nobody", "--db", str(site.copy), "sbatch", "--advisor-task", TASK, "-H",
                      "-J", name, "--output=/dev/null", "--wrap", "true")  # fmt: skip
    try:
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""  # the copy is not writable: no advice row, and no warning
        info = show(job_id(done.stdout))
        assert info["UserId"].startswith("nobody(")
        tag = re.search(r"advisor:wrapper,action=set,limit=(\d+)", info["Comment"])
        assert tag, info["Comment"]
        assert parse_duration(info["TimeLimit"]) == int(tag.group(1)) * 60
    finally:
        run(["scancel", f"--name={name}"])


def test_a_users_advice_reaches_the_cache_through_the_spool(site: Site, tmp_path: Path) -> None:
    """The copy is read-only: nobody's wrapper appends to its own spool file, which root's
    'advisor update --spool' brings into the working cache as nobody's advice row."""
    spool = _spool(site, "nobody")
    env = {**site.env, "ADVISOR_SPOOL": str(spool)}
    name = f"{TASK}-spooled"
    done = run(["runuser", "-u", "nobody", "--", *site.python, "-m", "advisor", "--db",
                str(site.copy), "sbatch", "--advisor-task", TASK, "-H", "-J", name, "--output=/dev/null",
                "--wrap", "true"], env=env, cwd=site.root)  # fmt: skip
    try:
        assert done.returncode == 0 and done.stderr == "", done.stderr
        job = job_id(done.stdout)
    finally:
        run(["scancel", f"--name={name}"])
    folder = spool / str(pwd.getpwnam("nobody").pw_uid)
    (own,) = folder.iterdir()  # today's segment
    assert (own.stat().st_uid, own.stat().st_mode & 0o777) == (pwd.getpwnam("nobody").pw_uid, 0o600)
    peek = run(["runuser", "-u", "daemon", "--", "cat", str(own)])
    listing = run(["runuser", "-u", "daemon", "--", "ls", str(folder)])
    assert peek.returncode != 0 and listing.returncode != 0  # another user sees neither
    excerpt = REPO / "tests" / "data" / "traces" / "kth-sp2-excerpt.swf"
    ingested = advisor("--db", site.working, "update", "--swf", excerpt, "--spool", spool,
                       "--format", "json")  # fmt: skip
    assert ingested.returncode == 0, ingested.stderr
    counts = json.loads(ingested.stdout)["spool"]
    assert (counts["files"], counts["rows"], counts["skipped_lines"], counts["refused_files"]) == (
        1,
        1,
        0,
        0,
    )
    with Store.open(site.working, readonly=True) as store:
        rows = store.query("SELECT user, task, outcome, limit_s FROM advice WHERE job_id = ?",
                           (job,))  # fmt: skip
    assert len(rows) == 1 and rows[0]["user"] == "nobody" and rows[0]["task"] == TASK
    assert rows[0]["outcome"] == "submitted" and rows[0]["limit_s"]
    again = advisor("--db", site.working, "update", "--swf", excerpt, "--spool", spool,
                    "--format", "json")  # fmt: skip
    assert json.loads(again.stdout)["spool"]["rows"] == 0  # each line once


def test_another_user_finds_no_secret_in_the_copy_or_the_export_and_both_still_decide(
    site: Site, tmp_path: Path
) -> None:
    """Issue 16, finding 6: the copy (0644) held every user's argv, --export tokens, --wrap
    commands, job names, comments and accounts; issue 31, N4: it (and the export) still told
    every user each user's runtimes and advised jobs.  Here they are planted for nobody;
    daemon reads what it can of the copies and the export (nobody's file, the export and its
    key it cannot); nobody's wrapper and the plugin still give nobody their limits.

    Each its own (issue 30): the wrapper's is the live rule (the risk that frees most at the
    partition's price, up to max_risk times the budget: its kills are recorded and raise the
    price), the plugin's the export's (the cell's margin at the budget itself: its limits have
    no advice row, so their kills never move the price, and the promise holds by the cell's
    coverage alone), found under nobody's keyed digest.  At this partition's low price the
    wrapper may take more risk than the plugin; both stay within MaxTime."""
    secret = secrets.token_hex(6)
    planted = {"token": f"API_TOKEN=tok{secret}", "wrap": f"curl https://x.invalid/{secret}w",
               "name": f"{TASK}-{secret}n", "comment": f"grant-{secret}c", "account": f"acct{secret}"}  # fmt: skip
    working = train_cache(tmp_path / "cache.db", TASK)
    start = datetime.now() - timedelta(days=1)
    jobs = [
        JobRecord("advisor", str(70000 + i), 70000 + i, planted["name"], "nobody", planted["account"],
                  "cpu", ("c1",), 1, 100.0, 600, 3600, None, "COMPLETED", None, 0, 0, start, start,
                  start + timedelta(seconds=600 + i), planted["comment"])
        for i in range(6)
    ]  # fmt: skip
    dump = tmp_path / "nobody.txt"
    dump.write_text(
        "|".join(SACCT_FIELDS) + "\n" + "".join(f"{format_sacct_row(j)}\n" for j in jobs)
    )
    assert advisor("--db", working, "update", "--sacct-file", dump).returncode == 0
    with Store.open(working) as store:
        earned(store, "cpu")
        argv = [
            f"--export=ALL,{planted['token']}",
            "-J",
            planted["name"],
            "--wrap",
            planted["wrap"],
        ]
        record_advice(store, Advice(user="nobody", policy="history", argv=argv, outcome="submitted",
                                    task=planted["name"], partition="cpu", limit_s=4200,
                                    job_id=70000, cluster="advisor"))  # fmt: skip
        expected = history_limit(store, "nobody", planted["name"], "cpu")
        found, max_time = history_advice(store, "nobody", planted["name"], "cpu")
        plugin_s = exported_limit_s(store, "nobody", planted["name"], "cpu")
    assert expected is not None and isinstance(found, Proposal) and max_time is not None
    assert found.risk <= DEFAULT_CONFIG.max_risk * found.budget
    assert 60 <= expected[0] <= max_time and 60 <= plugin_s <= max_time
    public = site.root / f"public-{secret}"
    public.mkdir(mode=0o755)
    copy, export = public / "copies", public / "limits.json"
    copy.mkdir(mode=0o755)
    for command in (("publish", "--out", copy), ("export", "--out", export)):
        done = advisor("--db", working, *command)
        assert done.returncode == 0, done.stderr
    theirs = copy / f"{pwd.getpwnam('nobody').pw_uid}.db"
    assert sorted(p.name for p in copy.iterdir()) == sorted(["shared.db", theirs.name])
    for path in (copy / "shared.db", theirs, export, Path(f"{export}.key")):
        read = subprocess.run(["runuser", "-u", "daemon", "--", "cat", str(path)],
                              capture_output=True, check=False, timeout=60)  # fmt: skip
        data = read.stdout  # what another user reads
        if path.name != "shared.db":
            assert read.returncode != 0 and b"Permission denied" in read.stderr, path
            continue
        assert read.returncode == 0 and data == path.read_bytes(), path
        assert b"nobody" not in data, path  # no user's name, so no user's row
        tables = {row[0] for row in sqlite3.connect(path).execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}  # fmt: skip
        assert not tables & {"advice", "accounting_jobs", "history_keys", "watermarks"}, tables
        for what, value in planted.items():
            assert value.encode() not in data, (path.name, what)
        assert secret.encode() not in data, path.name  # in no form
    mine = subprocess.run(["runuser", "-u", "nobody", "--", "cat", str(theirs)],
                          capture_output=True, check=False, timeout=60)  # fmt: skip
    assert mine.returncode == 0 and planted["name"].encode() in mine.stdout  # nobody reads its own
    dry = advisor_as(site, "nobody", "--db", str(copy), "sbatch", "--advisor-dry-run", "-J", planted["name"],
                     "-p", "cpu", "--wrap", "true")  # fmt: skip
    assert dry.returncode == 0 and dry.stderr == "", dry.stderr
    assert f"--time={format_duration(expected[0])}" in dry.stdout.split()
    before = EXPORT.read_bytes() if EXPORT.exists() else None
    install_plugin()
    document, key = json.loads(export.read_text()), export_key_of(export)
    # the plugin's limit: nobody's own entry under the keyed digest, the export's margin at the
    # kill budget's level (exported_limit_s): it knows neither the price nor the jobs running
    entry = document["users"]["nobody"]["tasks"][name_key("nobody", planted["name"], key)]
    assert entry["partitions"]["cpu"]["limit_min"] * 60 == plugin_s
    install_export(document, key)
    try:
        _, info, err = plain_sbatch(site, "nobody", "-J", planted["name"], "-p", "cpu")
        assert parse_duration(info["TimeLimit"]) == plugin_s
        assert "advisor: no --time given" in err
        _, info, _ = plain_sbatch(site, "daemon", "-J", planted["name"], "-p", "cpu")
        assert info["TimeLimit"] == "00:30:00"  # nobody's entry is nobody's only
    finally:
        remove_export()
        if before is not None:
            EXPORT.write_bytes(before)


def exported_limit_s(store: Store, user: str, name: str, partition: str) -> int:
    """The export's limit of a user's job name in a partition (export_limits' docstring).

    The key's longest run plus the widest margin of its kind's cells at their partitions'
    budget levels (partitions with kills left in their budget), within this one's MaxTime.
    """
    key = HistoryKey("user+name", user, name, "")
    state = load_key_states(store, [key])[key]
    margins = []
    for part, budget in load_budgets(store).items():
        scores = load_quantiles(store, key_cell(part, key.kind))
        at = [s for level, s in zip(LEVELS, scores or (), strict=False) if level <= budget.budget]
        if budget.credit > 0 and at and math.isfinite(at[0]):
            margins.append(at[0])  # the largest level at or under the budget
    max_time = {p.name: p.max_time_s for p in load_partitions(store)}[partition]
    return clamp(margin_limit_s(state.basis_s, max(margins)), request_s=None, max_time_s=max_time)


def _spool(site: Site, *users: str) -> Path:
    """The spool of contrib/site/README.md: root's 0755 directory, a 0700 one per user."""
    spool = site.root / "spool"
    spool.mkdir(mode=0o755, exist_ok=True)
    for user in users:
        uid = pwd.getpwnam(user).pw_uid
        folder = spool / str(uid)
        folder.mkdir(mode=0o700, exist_ok=True)
        os.chown(folder, uid, -1)
    return spool


def test_no_user_can_take_another_users_place_in_the_spool(site: Site) -> None:
    """Issue 16, finding 5: in the old 1733 spool nobody created <daemon's uid>.jsonl first, and
    every submission of daemon's then printed 'advice not recorded' (and skipped its budget)."""
    spool = _spool(site, "nobody", "daemon")
    victim = pwd.getpwnam("daemon").pw_uid
    for target in (f"{victim}.jsonl", f"0{victim}.jsonl", f"{victim}/2026-12-01.jsonl",
                   f"{victim}/x", "new-dir/"):  # fmt: skip
        path = spool / target
        made = (as_user(site, "nobody", "mkdir", str(path)) if target.endswith("/")
                else as_user(site, "nobody", "touch", str(path)))  # fmt: skip
        assert made.returncode != 0 and "Permission denied" in made.stderr, target
    assert sorted(p.name for p in spool.iterdir()) == sorted(
        [str(victim), str(pwd.getpwnam("nobody").pw_uid)]
    )
    name = f"{TASK}-victim"
    env = {**site.env, "ADVISOR_SPOOL": str(spool)}
    done = run(["runuser", "-u", "daemon", "--", *site.python, "-m", "advisor", "--db",
                str(site.copy), "sbatch", "--advisor-task", TASK, "-H", "-J", name, "--output=/dev/null",
                "--wrap", "true"], env=env, cwd=site.root)  # fmt: skip
    try:
        assert done.returncode == 0 and done.stderr == "", done.stderr  # recorded, no warning
    finally:
        run(["scancel", f"--name={name}"])
    (segment,) = (spool / str(victim)).iterdir()
    assert segment.stat().st_uid == victim
    # a file in daemon's place that is not daemon's (root makes one here, as a user with a
    # 0777 directory of their own could): one line, and the job is still submitted
    os.chown(segment, pwd.getpwnam("nobody").pw_uid, -1)
    again = run(["runuser", "-u", "daemon", "--", *site.python, "-m", "advisor", "--db",
                 str(site.copy), "sbatch", "--advisor-task", TASK, "-H", "-J", name, "--output=/dev/null",
                 "--wrap", "true"], env=env, cwd=site.root)  # fmt: skip
    try:
        assert again.returncode == 0 and "Submitted batch job" in again.stdout
        lines = again.stderr.strip().splitlines()
        assert lines == [f"advisor: warning: advice not recorded: advice spool {segment} belongs "
                         f"to uid {pwd.getpwnam('nobody').pw_uid}, not to you (uid {victim}); "
                         "nothing written: tell the administrator"], again.stderr  # fmt: skip
    finally:
        run(["scancel", f"--name={name}"])


def test_a_user_can_change_neither_cache_nor_the_export(site: Site) -> None:
    before = fingerprint(site.root)
    plugin_file = EXPORT.read_bytes() if EXPORT.exists() else None
    attempts = {
        "learn on the copy": ("--db", str(site.copy), "learn"),
        "learn on the working cache": ("--db", str(site.working), "learn"),
        "publish next to the copy": ("--db", str(site.copy), "publish", "--out",
                                     str(site.root)),
        "export over the plugin's file": ("--db", str(site.working), "export", "--out", str(EXPORT)),
        "export from the copy": ("--db", str(site.copy), "export", "--out", str(EXPORT)),
    }  # fmt: skip
    attempts["learn without a home for the default cache"] = ("learn",)
    for what, args in attempts.items():
        done = advisor_as(site, "nobody", *args)
        code = 2 if what == "export from the copy" else 1  # its names are digests: input error
        assert done.returncode == code, f"{what}: {done.stdout}{done.stderr}"
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("advisor: error:"), f"{what}: {done.stderr}"
    assert fingerprint(site.root) == before
    assert (EXPORT.read_bytes() if EXPORT.exists() else None) == plugin_file


def test_readers_never_see_half_a_transaction(site: Site) -> None:
    """Root rewrites the working cache (10 rows and a counter per transaction) and publishes
    after each; nobody reads the copy and root the WAL cache itself, all at the same time.

    The readers read until root says stop, and root writes at least 10 versions and for at
    least 4 s after every reader is ready, so a loaded machine slows the test, never fails it.
    """
    reader = site.root / "reader.py"
    reader.write_text(READER)
    reader.chmod(0o644)
    stop = site.root / "readers-stop"
    stop.unlink(missing_ok=True)
    readers = [
        subprocess.Popen(
            [
                "runuser",
                "-u",
                "nobody",
                "--",
                *site.python,
                str(reader),
                str(site.copy),
                str(stop),
                WRITER,
            ],
            env=site.env,
            cwd=site.root,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    readers.append(subprocess.Popen([sys.executable, str(reader), str(site.working), str(stop),
                                     WRITER], stdout=subprocess.PIPE, text=True))  # fmt: skip
    for process in readers:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
    generation, start = 0, time.monotonic()
    with Store.open(site.working) as store:
        while generation < 10 or time.monotonic() - start < 4:
            generation += 1
            with store.write():
                save_key_states(store, {HistoryKey("user+name", WRITER, f"{generation}-{i}", ""):
                                        KeyState() for i in range(10)})  # fmt: skip
            publish_copies(store, site.copy)
    stop.touch()
    results = [json.loads(process.communicate(timeout=60)[0]) for process in readers]
    stop.unlink()
    print(f"torn reads: {sum(r['torn'] for r in results)} of {sum(r['reads'] for r in results)} "
          f"reads by 3 readers over {generation} published versions")  # fmt: skip
    for result in results:
        assert result["errors"] == 0, result["last_error"]
        assert result["torn"] == 0, results
        assert result["reads"] >= 20 and result["generations"] >= 3, result


@pytest.fixture(scope="module")
def exported(site: Site) -> Iterator[dict[str, int]]:
    """The repository's plugin installed, and an export with per-user entries and BIG.

    Yields the task's own cpu limit (what a user without an entry gets).
    """
    install_plugin()
    with Store.open(site.working, readonly=True) as store:
        snapshot = load_snapshot(store, None)
    users = {
        "root": UserLimits({TASK: {"cpu": 3}}, {}),
        "nobody": UserLimits({TASK: {"cpu": 4}}, {}),
    }
    key = secrets.token_bytes(32)
    doc = export_document(snapshot, quantile=0.95, margin=0.1, generated_at="now", users=users,
                          key=key)  # fmt: skip
    doc["tasks"][BIG] = {
        "input_bytes": 0,
        "partitions": {p: {"limit_min": 10**6, "predicted_s": 6e7} for p in doc["partitions"]},
    }
    validate(doc, "export", source="test export")
    install_export(doc, key)
    try:
        yield {"cpu": doc["tasks"][TASK]["partitions"]["cpu"]["limit_min"]}
    finally:
        remove_export()


def plain_sbatch(site: Site, user: str, *options: str) -> tuple[int, dict[str, str], str]:
    """A held job submitted with plain sbatch as user: its id, scontrol view and stderr."""
    done = as_user(site, user, "sbatch", "-H", "--output=/dev/null", *options, "--wrap", "true")
    assert done.returncode == 0, f"{user} {options}: {done.stderr}"
    job = job_id(done.stdout)
    try:
        return job, show(job), done.stderr
    finally:
        run(["scancel", str(job)])


def test_the_plugin_gives_each_user_their_own_entry_or_the_tasks_limit(
    site: Site, exported: dict[str, int]
) -> None:
    expected = {"root": 3, "nobody": 4, "daemon": exported["cpu"]}
    for user, minutes in expected.items():
        _, info, err = plain_sbatch(site, user, "-J", TASK)
        assert parse_duration(info["TimeLimit"]) == minutes * 60, user
        assert info["Comment"] == f"advisor:lua,action=set,limit={minutes},task={TASK}", user
        assert "advisor: no --time given" in err
    # nobody forges a tag: it gets its own limit, the forged comment stays its own
    forged = f"advisor:lua,action=set,limit=1,task={TASK}"
    _, info, _ = plain_sbatch(site, "nobody", "-J", TASK, "--comment", forged)
    assert parse_duration(info["TimeLimit"]) == 4 * 60
    _, info, _ = plain_sbatch(site, "root", "-J", TASK)  # and root's limit has not moved
    assert parse_duration(info["TimeLimit"]) == 3 * 60


@pytest.mark.parametrize(
    "name",
    ["root", "users", "tasks", "nobody", "partitions", f"root.tasks.{TASK}",
     f"users/root/tasks/{TASK}", 'users["root"]', f"{TASK} ", TASK.upper(), f"{TASK}\\"],
    # ids without the run's random TASK: every xdist worker must collect the same test ids
    ids=lambda name: name.replace(TASK, "TASK").replace(TASK.upper(), "TASK.upper()"),
)  # fmt: skip
def test_job_names_that_look_like_keys_get_no_limit(
    site: Site, exported: dict[str, int], name: str
) -> None:
    _, info, err = plain_sbatch(site, "nobody", "-J", name)
    assert info["TimeLimit"] == "00:30:00"  # cpu's DefaultTime: the plugin left it alone
    assert "advisor" not in info.get("Comment", "") + err


def test_the_plugin_clamps_every_limit_to_the_partitions_maxtime(
    site: Site, exported: dict[str, int]
) -> None:
    partitions, _ = fetch_cluster(CliBackend())
    max_time = {p.name: p.max_time_s for p in partitions}
    for name, limit in max_time.items():
        assert limit is not None
        _, info, _ = plain_sbatch(site, "nobody", "-J", BIG, "-p", name)
        assert parse_duration(info["TimeLimit"]) == limit, name
    # one limit for both: long's MaxTime would make slurmctld reject the job (EnforcePartLimits)
    _, info, _ = plain_sbatch(site, "nobody", "-J", BIG, "-p", "cpu,long")
    assert parse_duration(info["TimeLimit"]) == max_time["cpu"]


def test_the_wrapper_clamps_to_maxtime_and_falls_back_on_a_stale_maxtime(
    slurm_cluster: None, tmp_path: Path
) -> None:
    task = f"{TASK}-huge"
    cache = train_cache(tmp_path / "huge.db", task, base_s=86400.0)  # runs of days
    partitions, nodes = fetch_cluster(CliBackend())
    name = f"{task}-job"
    try:
        for part in partitions:
            assert part.max_time_s is not None
            done = advisor("--db", cache, "sbatch", "--advisor-task", task, "-H", "-J", name, "-p",
                           part.name, "--output=/dev/null", "--wrap", "true")  # fmt: skip
            assert done.returncode == 0, done.stderr
            info = show(job_id(done.stdout))
            assert info["TimeLimit"] == format_duration(part.max_time_s), part.name
            assert f"limit={part.max_time_s // 60}," in info["Comment"]
        both = advisor("--db", cache, "sbatch", "--advisor-task", task, "-H", "-J", name, "-p",
                       "cpu,long", "--output=/dev/null", "--wrap", "true")  # fmt: skip
        assert both.returncode == 0 and both.stderr == "", both.stderr
        cpu = next(p.max_time_s for p in partitions if p.name == "cpu")
        assert show(job_id(both.stdout))["TimeLimit"] == format_duration(cpu or 0)
        with Store.open(cache) as store:  # MaxTime lowered since 'advisor cluster --save'
            save_cluster(store, [p._replace(max_time_s=30 * 86400) for p in partitions], nodes)
        stale = advisor("--db", cache, "sbatch", "--advisor-task", task, "-H", "-J", name, "-p", "cpu",
                        "--output=/dev/null", "--wrap", "true")  # fmt: skip
        assert stale.returncode == 0, stale.stderr
        lines = stale.stderr.strip().splitlines()
        assert len(lines) == 1 and "sbatch rejected the advised options" in lines[0]
        info = show(job_id(stale.stdout))
        assert info["TimeLimit"] == "00:30:00"  # the user's own arguments: cpu's DefaultTime
    finally:
        run(["scancel", f"--name={name}"])


def _exported(cache: Path, out: Path) -> dict[str, Any]:
    done = advisor("--db", cache, "export", "--out", out, "--format", "json")
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(out.read_text())
    validate(document, "export", source=str(out))
    return document


def _cpu_minutes(entry: dict[str, Any]) -> int:
    return int(entry["partitions"]["cpu"]["limit_min"])


def test_another_users_jobs_of_the_same_name_do_not_move_my_limit(
    slurm_cluster: None, tmp_path: Path
) -> None:
    """Issue #8's finding: 200 one-second jobs of mallory's took another task's limit 14 -> 4 min."""
    cache = train_cache(tmp_path / "cache.db", TASK)
    before = _cpu_minutes(_exported(cache, tmp_path / "before.json")["tasks"][TASK])
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH -p cpu\ntrue\n")
    mine = advisor("--db", cache, "sbatch", "--advisor-task", TASK, "--advisor-dry-run", script)
    assert mine.returncode == 0 and f"--time={format_duration(before * 60)}" in mine.stdout
    start = datetime(2026, 1, 1)
    jobs = [
        JobRecord("advisor", str(900 + i), 900 + i, TASK, "mallory", "x", "cpu", ("c1",), 1,
                  100.0, 1, 600, None, "COMPLETED", None, 0, 0, start, start,
                  start + timedelta(seconds=i + 1), "")
        for i in range(200)
    ]  # fmt: skip
    dump = tmp_path / "mallory.txt"
    dump.write_text(
        "|".join(SACCT_FIELDS) + "\n" + "".join(f"{format_sacct_row(j)}\n" for j in jobs)
    )
    done = advisor("--db", cache, "update", "--sacct-file", dump)
    assert done.returncode == 0, done.stderr
    for step in ("update", "learn"):  # online, then refitted from every observation
        if step == "learn":
            assert advisor("--db", cache, "learn").returncode == 0
        doc = _exported(cache, tmp_path / f"after-{step}.json")
        assert _cpu_minutes(doc["tasks"][TASK]) == before, step  # what everyone else gets
        mallorys = doc["users"]["mallory"]["tasks"]
        key = export_key_of(tmp_path / f"after-{step}.json")
        assert _cpu_minutes(mallorys[name_key("mallory", TASK, key)]) < before, step  # hers
        assert sorted(doc["users"]) == ["mallory"]
        again = advisor(
            "--db", cache, "sbatch", "--advisor-task", TASK, "--advisor-dry-run", script
        )
        assert again.stdout == mine.stdout, step  # the wrapper, for this (other) user
