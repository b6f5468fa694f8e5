"""Issue 16's attacks by one user, on an older version and on this one: the "before" and
"after" columns of docs/reliability.md's hostile-users table.

Run (as root: the attacks use the real users nobody and daemon, and files of other uids)::

    .venv/bin/python benchmarks/hostile_users.py [--before REV]      # default: f8a52fd, main before issue 16
    flock -o /tmp/advisor-cluster.lock .venv/bin/python benchmarks/hostile_users.py --only 3-cluster

Both versions are extracted with ``git archive`` into a temporary directory and run from
there with the same interpreter, so only the code differs.  Each scenario prints one line
per version.  The Lua plugin's costs (finding 7) are in benchmarks/bench_plugin.py, and the
attacks that need slurmctld (finding 8) in tests/integration/test_hostile_jobs.py.  The sacct
records of findings 2, 3, 10, 11 and 12 are the regression tests' (tests/unit/accounting/test_hostile_jobs.py:
the captured job 38 with the fields a user controls replaced) in a saved dump; ``3-cluster``
submits a job named ``a<newline>b`` to the real cluster and runs each version's live update
over its window (run it under the cluster lock; it is not in the default list).
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the regression tests' records (tests/helpers/hostile_jobs.py)
from tests.helpers.hostile_jobs import (  # noqa: E402
    FORGED,
    UNICODE_DIGITS,
    alices_history,
    dump,
    job,
    timed_out,
)
from tests.helpers.report_cache import GB  # noqa: E402

SWF = REPO / "tests" / "data" / "traces" / "kth-sp2-excerpt.swf"
SECRETS = ("API_TOKEN=s3cr3t-0f-n0b0dy", "curl-k3y-of-n0b0dy", "patient-4711", "grant-XK-99")


class Version:
    """One version of the advisor, runnable by root and by other users."""

    def __init__(self, label: str, tree: Path) -> None:
        self.label, self.tree = label, tree
        purelib = sysconfig.get_paths()["purelib"]
        self.env = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8",
                    "PYTHONPATH": f"{tree}{os.pathsep}{purelib}", "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
        self.python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
        argv = tree / "advisor" / "sbatch" / "argv.py"  # advisor/wrapper/argv.py before issue 32
        argv = argv if argv.is_file() else tree / "advisor" / "wrapper" / "argv.py"
        renamed = "--advisor-" in argv.read_text()
        self.dry_run = "--advisor-dry-run" if renamed else "--dry-run"  # finding 14 renamed it
        publish = (tree / "advisor" / "services" / "publish.py").read_text()
        self.copies_directory = "shared.db" in publish  # issue 31 N4: one file per user

    def advisor(self, *args: object, user: str | None = None, env: dict[str, str] | None = None,
                cwd: Path | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
        argv = [self.python, "-m", "advisor", *map(str, args)]
        if user is not None:
            argv = ["runuser", "-u", user, "--", *argv]
        return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=600,
                              env={**self.env, **(env or {})}, cwd=cwd or "/")  # fmt: skip


def extract(rev: str, into: Path) -> Path:
    into.mkdir(mode=0o755)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    (into / "advisor" / "schemas").symlink_to("../schemas")  # what the package build maps
    return into


def owned(path: Path, text: str, uid: int) -> None:
    path.write_text(text)
    path.chmod(0o600)
    os.chown(path, uid, -1)


def line(job_id: int, **fields: object) -> str:
    return json.dumps({"created_at": "2026-12-01T10:00:00+00:00", "argv": ["-J", "sim"],
                       "policy": "history", "outcome": "submitted", "task": "sim",
                       "job_id": job_id, **fields}) + "\n"  # fmt: skip


def _count(cache: Path, table: str) -> int:
    return int(sqlite3.connect(cache).execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])  # noqa: S608


def finding_1(v: Version, tmp: Path) -> str:
    spool = tmp / "spool"
    spool.mkdir(mode=0o755)
    owned(spool / "1001.jsonl", line(1, predicted_s=10**400) + line(2), 1001)  # old layout
    (spool / "1002").mkdir(mode=0o700)
    os.chown(spool / "1002", 1002, -1)
    owned(spool / "1002" / "2026-12-01.jsonl", line(3), 1002)  # new layout (unread before)
    owned(spool / "1003.jsonl", line(4), 1003)
    done = v.advisor("--db", tmp / "c.db", "update", "--swf", SWF, "--spool", spool)
    last = (done.stderr.strip().splitlines() or [""])[-1][:70]
    return (f"exit {done.returncode} {last!r}; {_count(tmp / 'c.db', 'accounting_jobs')} jobs, "
            f"{_count(tmp / 'c.db', 'advice')} advice rows stored")  # fmt: skip


def finding_4(v: Version, tmp: Path) -> str:
    spool = tmp / "spool"
    spool.mkdir(mode=0o1733)
    spool.chmod(0o1733)
    three = line(1) + line(2) + line(3)
    for name in ("1001.jsonl", "01001.jsonl", "001001.jsonl", "١٠٠١.jsonl"):
        owned(spool / name, three, 1001)
    for _ in range(4):
        v.advisor("--db", tmp / "c.db", "update", "--swf", SWF, "--spool", spool)
    rows = _count(tmp / "c.db", "advice")
    big = tmp / "big"
    big.mkdir(mode=0o1733)
    body = "".join(line(n, argv=["x" * 1000]) for n in range(16 * 1024))  # ~17 MiB
    for name in ("1001.jsonl", "01001.jsonl"):
        owned(big / name, body, 1001)
    done = v.advisor(
        "--db", tmp / "d.db", "--format", "json", "update", "--swf", SWF, "--spool", big
    )
    read = _count(tmp / "d.db", "advice") * len(line(1, argv=["x" * 1000]))
    return f"3 lines -> {rows} rows after 4 updates; one user's two 17 MiB files: {read / 1e6:.1f} MB read in one run (exit {done.returncode})"


def _trained(v: Version, cache: Path) -> Path:
    """benchmarks/bench_load.py's cache: the live cluster's partitions and a model of 'align'.

    Built by the version's own code (its tree holds benchmarks/ too): an older version refuses
    a cache of a newer schema.
    """
    script = cache.parent / "train.py"
    script.write_text(
        "import sys\nfrom pathlib import Path\nfrom benchmarks.bench_load import train_cache\n"
        "train_cache(Path(sys.argv[1]), 'align')\n"
    )
    subprocess.run(
        [v.python, str(script), str(cache)], env=v.env, check=True, capture_output=True, cwd=v.tree
    )
    return cache


def _site(v: Version, tmp: Path) -> tuple[Path, Path]:
    """A trained working cache with nobody's secrets in it, and its published copy."""
    tmp.chmod(0o755)
    cache = tmp / "private" / "cache.db"
    cache.parent.mkdir(mode=0o700)
    _trained(v, cache)
    sql = sqlite3.connect(cache)
    argv = json.dumps([f"--export=ALL,{SECRETS[0]}", "-J", SECRETS[2], "--wrap", SECRETS[1]])
    sql.execute("INSERT INTO advice (created_at, user, task, policy, argv, outcome, job_id) "
                "VALUES (strftime('%Y-%m-%dT%H:%M:%S+00:00','now'), 'nobody', ?, 'history', ?, "
                "'submitted', 7)", (SECRETS[2], argv))  # fmt: skip
    sql.execute("INSERT INTO accounting_jobs (cluster, job_id, job_id_raw, name, user, account, partition, "
                "nodes, cpus, req_mem_mb, elapsed_s, timelimit_s, state, exit_code, submit, start, end, "
                "comment, ingested_at) VALUES ('advisor', '7', 7, ?, 'nobody', 'acct', 'cpu', "
                "'[]', 1, NULL, 60, 600, 'COMPLETED', 0, NULL, NULL, '2026-12-01T10:00:00', ?, "
                "'2026-12-01T10:00:00')", (SECRETS[2], SECRETS[3]))  # fmt: skip
    runs = "[[600.0, 0], [600.0, 0], [600.0, 0], [600.0, 0], [600.0, 0]]"
    columns = [row[1] for row in sql.execute("PRAGMA table_info(history_keys)")]
    if "cap" in columns:  # the at-risk cap, until issue 30
        sql.execute("INSERT INTO history_keys (kind, user, name, partition, runs, cap, completed, "
                    "kills, updated_at) VALUES ('user+name', 'nobody', ?, '', ?, 1, 5, 0, 'now')",
                    (SECRETS[2], runs))  # fmt: skip
    else:
        sql.execute("INSERT INTO history_keys (kind, user, name, partition, runs, completed, kills, "
                    "updated_at) VALUES ('user+name', 'nobody', ?, '', ?, 5, 0, 'now')",
                    (SECRETS[2], runs))  # fmt: skip
    sql.commit()
    sql.close()
    copy = tmp / ("copies" if v.copies_directory else "copy.db")
    if v.copies_directory:  # publish writes a directory since issue 31
        copy.mkdir(mode=0o755)
    done = v.advisor("--db", cache, "publish", "--out", copy)
    if done.returncode != 0:
        raise SystemExit(f"{v.label}: publish failed: {done.stderr}")
    return cache, copy


def finding_6(v: Version, tmp: Path) -> str:
    cache, copy = _site(v, tmp)
    export = tmp / "limits.json"
    v.advisor("--db", cache, "export", "--out", export)
    found = []
    readable = [*copy.iterdir(), Path(f"{export}.key")] if copy.is_dir() else [copy]
    for path in [*readable, export]:
        read = subprocess.run(
            ["runuser", "-u", "daemon", "--", "cat", str(path)], capture_output=True, check=False
        )
        found += [s for s in SECRETS if s.encode() in read.stdout]
    dry = v.advisor("--db", copy, "sbatch", v.dry_run, "-J", SECRETS[2], "-p", "cpu", "--wrap", "true",
                    user="nobody", cwd=tmp)  # fmt: skip
    limit = next((w for w in dry.stdout.split() if w.startswith("--time=")), "no --time")
    return (f"daemon reads {len(set(found))} of {len(SECRETS)} planted secrets in the copy and "
            f"the export; nobody's wrapper through the copy: {limit}")  # fmt: skip


def finding_5(v: Version, tmp: Path) -> str:
    cache, copy = _site(v, tmp)
    spool = tmp / "spool"
    spool.mkdir()
    spool.chmod(0o1733 if v.label == "before" else 0o755)  # each version's documented layout
    victim = pwd.getpwnam("daemon").pw_uid
    if v.label != "before":
        (spool / str(victim)).mkdir(mode=0o700)
        os.chown(spool / str(victim), victim, -1)
    for target in (spool / f"{victim}.jsonl", spool / str(victim) / "2026-12-01.jsonl"):
        subprocess.run(
            ["runuser", "-u", "nobody", "--", "touch", str(target)],
            capture_output=True,
            check=False,
        )
    nobody = pwd.getpwnam("nobody").pw_uid
    squatted = [p for p in spool.rglob("*") if p.is_file() and p.stat().st_uid == nobody]
    # sbatch itself is not the point (and needs slurmctld): a stand-in that accepts the job
    stand_in = tmp / "bin"
    stand_in.mkdir(mode=0o755)
    (stand_in / "sbatch").write_text("#!/bin/sh\necho Submitted batch job 4242\n")
    (stand_in / "sbatch").chmod(0o755)
    path = f"{stand_in}{os.pathsep}{v.env['PATH']}"
    sent = v.advisor("--db", copy, "sbatch", "-J", "sim", "--wrap", "true", user="daemon",
                     env={"ADVISOR_SPOOL": str(spool), "PATH": path}, cwd=tmp)  # fmt: skip
    warning = sent.stderr.strip()[:110] or "no warning"
    done = v.advisor("--db", cache, "--format", "json", "update", "--swf", SWF, "--spool", spool)
    rows = (
        sqlite3.connect(cache)
        .execute("SELECT COUNT(*) FROM advice WHERE user = 'daemon'")
        .fetchone()[0]
    )
    return (f"files nobody made in daemon's place: {len(squatted)}; daemon's submission: "
            f"{warning!r}; daemon's advice rows after update: {rows} (exit {done.returncode})")  # fmt: skip


def finding_13(v: Version, tmp: Path) -> str:
    tmp.chmod(0o755)
    cache = tmp / "c.db"
    v.advisor("--db", cache, "demo")
    shared = tmp / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    published = v.advisor("--db", cache, "publish", "--out",
                          shared if v.copies_directory else shared / "copy.db")  # fmt: skip
    swap = subprocess.run(["runuser", "-u", "nobody", "--", "sh", "-c",
                           f"echo mine > {shared}/x && mv -f {shared}/x {shared}/copy.db"],
                          capture_output=True, check=False)  # fmt: skip
    replaced = published.returncode == 0 and swap.returncode == 0
    over = v.advisor("--db", cache, "export", "--out", cache)
    intact = cache.read_bytes()[:15] == b"SQLite format 3"
    return (f"publish into a 0777 directory: exit {published.returncode}, "
            f"{'then nobody replaced the copy with a file of theirs' if replaced else 'nothing written'}; "
            f"export --out <the cache>: exit {over.returncode}, cache {'intact' if intact else 'overwritten with JSON'}")  # fmt: skip


def _last(done: subprocess.CompletedProcess[str]) -> str:
    return (done.stderr.strip().splitlines() or [""])[-1][:200]


def _update(v: Version, cache: Path, *args: object) -> tuple[subprocess.CompletedProcess[str], int]:
    """advisor update --format json; (the process, jobs stored)."""
    done = v.advisor(
        "--db", cache, "--format", "json", "update", *args, env={"ADVISOR_PROGRESS": "0"}
    )
    stored = (
        json.loads(done.stdout).get("stored", 0)
        if done.returncode == 0 and done.stdout.strip()
        else 0
    )
    return done, stored


def finding_2(v: Version, tmp: Path) -> str:
    hostile = [job(900 + i, comment=f"advisor:x,action=set,limit=60,task=align,{field}={digit}")
               for i, (field, digit) in enumerate((f, d) for f in ("in", "q", "limit") for d in UNICODE_DIGITS)]  # fmt: skip
    path = dump(tmp / "sacct.txt", [*hostile, job(999, user="alice")])
    done, stored = _update(v, tmp / "c.db", "--sacct-file", path)
    how = "stored by update"
    if not stored:  # the reports read such rows too: put them in by SQL, as update stores them
        how = "put in by SQL"
        sql = sqlite3.connect(tmp / "c.db")
        sql.executemany("INSERT INTO accounting_jobs (cluster, job_id, job_id_raw, name, user, account, "
                        "partition, nodes, cpus, elapsed_s, timelimit_s, state, exit_code, submit, start, "
                        "end, comment, ingested_at) VALUES (?, ?, ?, ?, ?, '', ?, '[]', 1, ?, ?, ?, 0, ?, "
                        "?, ?, ?, '2026-12-01T10:00:00')",
                        [(j.cluster, j.job_id, j.job_id_raw, j.name, j.user, j.partition, j.elapsed_s,
                          j.timelimit_s, j.state, j.submit.isoformat(), j.start.isoformat(), j.end.isoformat(), j.comment)
                         for j in hostile])  # fmt: skip
        sql.commit()
        sql.close()
    reports = [
        v.advisor("--db", tmp / "c.db", "--format", "json", "report", r)
        for r in ("limits", "accuracy")
    ]
    return (f"update of {len(hostile)} tags with Unicode digits (in=², q=١, limit=１, ...) and 1 other job: "
            f"exit {done.returncode}, {stored} stored {_last(done)!r}; over the tagged jobs ({how}), report limits: exit "
            f"{reports[0].returncode} {_last(reports[0])!r}; report accuracy: exit {reports[1].returncode} {_last(reports[1])!r}")  # fmt: skip


SEPARATORS = ("\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u2028", "\u2029")


def finding_3(v: Version, tmp: Path) -> str:
    """The saved-dump path: one job per separator in its name and comment, and a plain one."""
    jobs = [job(700 + i, name=f"a{sep}b", comment=f"c{sep}d") for i, sep in enumerate(SEPARATORS)]
    path = dump(tmp / "sacct.txt", [*jobs, job(799, name="plain")])
    done, stored = _update(v, tmp / "c.db", "--sacct-file", path)
    kept = 0
    if (tmp / "c.db").exists():
        rows = set(
            sqlite3.connect(tmp / "c.db").execute("SELECT name, comment FROM accounting_jobs")
        )
        kept = sum((j.name, j.comment) in rows for j in jobs)
    return (f"a dump of {len(jobs)} jobs with a separator in name and comment and 1 plain: exit {done.returncode}, "
            f"{stored} stored, {kept} of {len(jobs)} names and comments intact {_last(done)!r}")  # fmt: skip


def finding_3_cluster(v: Version, tmp: Path) -> str:
    """The live path on the real cluster: sbatch -J $'a\\nb', then update over its window."""
    global _LIVE_JOB
    if _LIVE_JOB is None:
        since = datetime.now().replace(microsecond=0) - timedelta(seconds=5)
        sent = subprocess.run(["sbatch", "--parsable", "-J", "a\nb", "--output=/dev/null", "-p", "cpu",
                               "-t", "2", "--mem=100M", "--wrap", "true"], capture_output=True, text=True, check=True)  # fmt: skip
        job_id = int(sent.stdout.strip().split(";")[0])
        for _ in range(90):
            state = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "State", "-j", str(job_id)],
                                   capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
            if state in {"COMPLETED", "FAILED"}:
                break
            time.sleep(2)
        time.sleep(1.1)  # sacct has whole seconds and windows are half-open
        _LIVE_JOB = (job_id, since.isoformat(), datetime.now().replace(microsecond=0).isoformat())
    job_id, since, until = _LIVE_JOB
    done, stored = _update(v, tmp / "c.db", "--since", since, "--until", until)
    name = None
    if (tmp / "c.db").exists():
        row = (
            sqlite3.connect(tmp / "c.db")
            .execute("SELECT name FROM accounting_jobs WHERE job_id_raw = ?", (job_id,))
            .fetchone()
        )
        name = row[0] if row else None
    return (f"job {job_id} named 'a\\nb' among the window's jobs: update exit {done.returncode}, {stored} stored, "
            f"job {job_id} {'stored as ' + repr(name) if name is not None else 'not stored'} {_last(done)!r}")  # fmt: skip


_LIVE_JOB: tuple[int, str, str] | None = None


def _dry(v: Version, cache: Path, *argv: object, cwd: Path) -> str:
    """The sbatch command line the wrapper would run (its --dry-run), or its error."""
    done = v.advisor("--db", cache, "sbatch", v.dry_run, *argv, cwd=cwd)
    return (
        " ".join(done.stdout.split())
        if done.returncode == 0
        else f"exit {done.returncode} {_last(done)!r}"
    )


def finding_9(v: Version, tmp: Path) -> str:
    cache = _trained(v, tmp / "c.db")
    out = []
    for lines in (["#PBS -l walltime=48:00:00", "#PBS -q long"], ["#PBS -q fat"]):
        script = tmp / "job.sh"
        script.write_text(
            "#!/bin/sh\n#SBATCH -J align\n" + "".join(f"{x}\n" for x in lines) + "true\n"
        )
        out.append(f"{' + '.join(lines)}: {_dry(v, cache, script, cwd=tmp)!r}")
    plain = tmp / "plain.sh"
    plain.write_text("#!/bin/sh\n#SBATCH -J align\ntrue\n")
    for partition in ("cpu", "fat"):  # the default partition is cpu (node class small), fat another
        out.append(
            f"-p {partition} without #PBS: {_dry(v, cache, '-p', partition, plain, cwd=tmp)!r}"
        )
    return "; ".join(out)


def _limit(v: Version, cache: Path, name: str, tmp: Path) -> str:
    line = _dry(v, cache, "-J", name, "-p", "cpu", "--wrap", "true", cwd=tmp)
    return next((w for w in line.split() if w.startswith("--time=")), line)


def finding_10(v: Version, tmp: Path) -> str:
    """root plays alice (the wrapper asks for its own user's limit); nobody forges the tags."""
    cache = _trained(v, tmp / "c.db")
    mine = [j._replace(user="root") for j in alices_history()]
    _update(v, cache, "--sacct-file", dump(tmp / "alice.txt", mine))
    before = _limit(v, cache, "sim", tmp)
    flood = [timed_out(2000 + i, "nobody", comment=FORGED) for i in range(40)]
    done, stored = _update(v, cache, "--sacct-file", dump(tmp / "flood.txt", flood))
    return (f"root's 5 runs of 'sim' (10 min): {before}; after {stored} of nobody's jobs killed at -t 1 with "
            f"{FORGED!r} (exit {done.returncode}): {_limit(v, cache, 'sim', tmp)}")  # fmt: skip


def _spool_line(v: Version, spool: Path, uid: int, text: str) -> None:
    """A line in uid's own spool file, in the version's layout (flat 1733, or one 0700 directory each)."""
    flat = v.label == "before"
    spool.mkdir(mode=0o755, exist_ok=True)
    spool.chmod(0o1733 if flat else 0o755)
    if flat:
        owned(spool / f"{uid}.jsonl", text, uid)
        return
    (spool / str(uid)).mkdir(mode=0o700)
    os.chown(spool / str(uid), uid, -1)
    owned(spool / str(uid) / f"{datetime.now():%Y-%m-%d}.jsonl", text, uid)


def finding_11(v: Version, tmp: Path) -> str:
    """daemon's job 101 without advice; nobody's spool claims it (and daemon's job 102) as 'stolen'."""
    jobs = [job(101, user="daemon", name="plain.sh"), job(102, user="daemon", name="plain.sh")]
    spool = tmp / "spool"
    claims = "".join(line(n, task="stolen", argv=["stolen.sh"], partition="cpu", limit_s=60,
                          cluster=jobs[0].cluster) for n in (101, 102))  # fmt: skip
    _spool_line(v, spool, pwd.getpwnam("nobody").pw_uid, claims)
    done, stored = _update(
        v, tmp / "c.db", "--sacct-file", dump(tmp / "sacct.txt", jobs), "--spool", spool
    )
    report = v.advisor(
        "--db",
        tmp / "c.db",
        "--format",
        "json",
        "report",
        "limits",
        "--by",
        "task",
        "--user",
        "daemon",
    )
    rows = json.loads(report.stdout)["rows"] if report.returncode == 0 else []
    shown = {row["task"]: row.get("advised_jobs") for row in rows}
    return (f"update exit {done.returncode}, {stored} jobs; report limits --by task --user daemon: "
            f"exit {report.returncode}, tasks (advised jobs) {shown}")  # fmt: skip


def _p95(v: Version, cache: Path) -> str:
    done = v.advisor("--db", cache, "--format", "json", "predict", "--task", "align", "--input-bytes",
                     int(3 * GB), "--node", "c1")  # fmt: skip
    if done.returncode != 0:
        return f"exit {done.returncode} {_last(done)!r}"
    return f"{float(json.loads(done.stdout)['predictions'][0]['p95_s']):.1f} s"


def finding_12(v: Version, tmp: Path) -> str:
    cache = _trained(v, tmp / "c.db")
    before = _p95(v, cache)
    slow = [job(3000 + i, user="", name="align", elapsed_s=5000, timelimit_s=7200,
                comment=f"advisor:wrapper,action=set,limit=120,task=align,in={int(3 * GB)}")
            for i in range(20)]  # fmt: skip
    done, stored = _update(v, cache, "--sacct-file", dump(tmp / "slow.txt", slow))
    online = _p95(v, cache)
    learned = v.advisor("--db", cache, "learn")
    return (f"P95 of align (3 GB on c1) {before}; after {stored} runs of 5000 s without a user (exit "
            f"{done.returncode}): {online} online, {_p95(v, cache)} after learn (exit {learned.returncode})")  # fmt: skip


def finding_14(v: Version, tmp: Path) -> str:
    cache = _trained(v, tmp / "c.db")
    script = tmp / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH -J align\ntrue\n")
    done = v.advisor("--db", cache, "sbatch", v.dry_run, "--task=4", script, cwd=tmp)
    return f"advisor sbatch {v.dry_run} --task=4 job.sh: {' '.join(done.stdout.split())!r} {_last(done)!r}"


SCENARIOS: dict[str, Callable[[Version, Path], str]] = {
    "1": finding_1,
    "2": finding_2,
    "3": finding_3,
    "4": finding_4,
    "5": finding_5,
    "6": finding_6,
    "9": finding_9,
    "10": finding_10,
    "11": finding_11,
    "12": finding_12,
    "13": finding_13,
    "14": finding_14,
}
ON_CLUSTER: dict[str, Callable[[Version, Path], str]] = {"3-cluster": finding_3_cluster}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--before",
        default="f8a52fd",
        help="the version to compare with (git rev; default: main before issue 16)",
    )
    parser.add_argument("--after", default="HEAD", help="this version (git rev)")
    parser.add_argument(
        "--only",
        nargs="*",
        default=list(SCENARIOS),
        choices=[*SCENARIOS, *ON_CLUSTER],
        help="findings to run (3-cluster: on the real cluster, under its lock)",
    )
    args = parser.parse_args()
    compare(SCENARIOS | ON_CLUSTER, args.only, args.before, args.after, label="finding")


def compare(
    scenarios: dict[str, Callable[[Version, Path], str]],
    only: list[str],
    before: str,
    after: str,
    *,
    label: str,
) -> None:
    """Each scenario of only on both versions, one line each (as root: it uses other users)."""
    if os.geteuid() != 0:
        sys.exit("run as root: the attacks use the users nobody and daemon")
    work = Path(tempfile.mkdtemp(prefix="hostile-"))
    work.chmod(0o755)
    try:
        versions = [Version("before", extract(before, work / "before")),
                    Version("after", extract(after, work / "after"))]  # fmt: skip
        for finding in only:
            for version in versions:
                tmp = work / f"{finding}-{version.label}"
                tmp.mkdir(mode=0o755)
                print(f"{label} {finding:>2} {version.label:>6}: "
                      f"{scenarios[finding](version, tmp)}", flush=True)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
