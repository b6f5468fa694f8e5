"""Issue 16's attacks by one user, on an older version and on this one: the "before" and
"after" columns of docs/reliability.md's hostile-users table.

Run (as root: the attacks use the real users nobody and daemon, and files of other uids)::

    .venv/bin/python benchmarks/hostile_users.py [--before REV]      # default: f8a52fd, main before issue 16

Both versions are extracted with ``git archive`` into a temporary directory and run from
there with the same interpreter, so only the code differs.  Each scenario prints one line
per version.  The Lua plugin's costs (finding 7) are in benchmarks/bench_plugin.py, and the
attacks that need slurmctld (finding 8) in tests/integration/test_hostile_jobs.py.
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
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
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

    def advisor(self, *args: object, user: str | None = None, env: dict[str, str] | None = None,
                cwd: Path | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
        argv = [self.python, "-m", "advisor", *map(str, args)]
        if user is not None:
            argv = ["runuser", "-u", user, "--", *argv]
        return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=600,
                              env={**self.env, **(env or {})}, cwd=cwd or "/")  # fmt: skip


def extract(rev: str, into: Path) -> Path:
    into.mkdir(mode=0o755)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], capture_output=True, check=True)
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
    done = v.advisor("--db", tmp / "d.db", "--format", "json", "update", "--swf", SWF, "--spool", big)
    read = _count(tmp / "d.db", "advice") * len(line(1, argv=["x" * 1000]))
    return f"3 lines -> {rows} rows after 4 updates; one user's two 17 MiB files: {read / 1e6:.1f} MB read in one run (exit {done.returncode})"


def _site(v: Version, tmp: Path) -> tuple[Path, Path]:
    """A trained working cache with nobody's secrets in it, and its published copy."""
    tmp.chmod(0o755)
    cache = tmp / "private" / "cache.db"
    cache.parent.mkdir(mode=0o700)
    script = tmp / "train.py"
    script.write_text(
        "import sys\nfrom pathlib import Path\nfrom benchmarks.bench_load import train_cache\n"
        "train_cache(Path(sys.argv[1]), 'align')\n"
    )
    subprocess.run([v.python, str(script), str(cache)], env={**v.env, "PYTHONPATH": f"{REPO}{os.pathsep}{v.env['PYTHONPATH']}"},
                   check=True, capture_output=True)  # fmt: skip
    sql = sqlite3.connect(cache)
    argv = json.dumps([f"--export=ALL,{SECRETS[0]}", "-J", SECRETS[2], "--wrap", SECRETS[1]])
    sql.execute("INSERT INTO advice (created_at, user, task, policy, argv, outcome, job_id) "
                "VALUES (strftime('%Y-%m-%dT%H:%M:%S+00:00','now'), 'nobody', ?, 'history', ?, "
                "'submitted', 7)", (SECRETS[2], argv))  # fmt: skip
    sql.execute("INSERT INTO accounting_jobs VALUES ('advisor', '7', 7, ?, 'nobody', 'acct', 'cpu', "
                "'[]', 1, NULL, 60, 600, 'COMPLETED', 0, NULL, NULL, '2026-12-01T10:00:00', ?, "
                "'2026-12-01T10:00:00')", (SECRETS[2], SECRETS[3]))  # fmt: skip
    sql.execute("INSERT INTO history_keys VALUES ('user+name', 'nobody', ?, '', "
                "'[[600.0, 0], [600.0, 0], [600.0, 0], [600.0, 0], [600.0, 0]]', 1, 5, 0, 'now')",
                (SECRETS[2],))  # fmt: skip
    sql.commit()
    sql.close()
    copy = tmp / "copy.db"
    done = v.advisor("--db", cache, "publish", "--out", copy)
    if done.returncode != 0:
        raise SystemExit(f"{v.label}: publish failed: {done.stderr}")
    return cache, copy


def finding_6(v: Version, tmp: Path) -> str:
    cache, copy = _site(v, tmp)
    export = tmp / "limits.json"
    v.advisor("--db", cache, "export", "--out", export)
    found = []
    for path in (copy, export):
        read = subprocess.run(["runuser", "-u", "daemon", "--", "cat", str(path)], capture_output=True, check=False)
        found += [s for s in SECRETS if s.encode() in read.stdout]
    dry = v.advisor("--db", copy, "sbatch", "--advisor-dry-run", "-J", SECRETS[2], "-p", "cpu", "--wrap", "true",
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
        subprocess.run(["runuser", "-u", "nobody", "--", "touch", str(target)], capture_output=True, check=False)
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
    rows = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM advice WHERE user = 'daemon'").fetchone()[0]
    return (f"files nobody made in daemon's place: {len(squatted)}; daemon's submission: "
            f"{warning!r}; daemon's advice rows after update: {rows} (exit {done.returncode})")  # fmt: skip


def finding_13(v: Version, tmp: Path) -> str:
    tmp.chmod(0o755)
    cache = tmp / "c.db"
    v.advisor("--db", cache, "demo")
    shared = tmp / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    published = v.advisor("--db", cache, "publish", "--out", shared / "copy.db")
    swap = subprocess.run(["runuser", "-u", "nobody", "--", "sh", "-c",
                           f"echo mine > {shared}/x && mv -f {shared}/x {shared}/copy.db"],
                          capture_output=True, check=False)  # fmt: skip
    replaced = published.returncode == 0 and swap.returncode == 0
    over = v.advisor("--db", cache, "export", "--out", cache)
    intact = cache.read_bytes()[:15] == b"SQLite format 3"
    return (f"publish into a 0777 directory: exit {published.returncode}, "
            f"{'then nobody replaced the copy with a file of theirs' if replaced else 'nothing written'}; "
            f"export --out <the cache>: exit {over.returncode}, cache {'intact' if intact else 'overwritten with JSON'}")  # fmt: skip


SCENARIOS: dict[str, Callable[[Version, Path], str]] = {
    "1": finding_1, "4": finding_4, "5": finding_5, "6": finding_6, "13": finding_13,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="f8a52fd", help="the version to compare with (git rev; default: main before issue 16)")
    parser.add_argument("--after", default="HEAD", help="this version (git rev)")
    parser.add_argument("--only", nargs="*", default=list(SCENARIOS), help="findings to run")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: the attacks use the users nobody and daemon")
    work = Path(tempfile.mkdtemp(prefix="hostile-users-"))
    work.chmod(0o755)
    try:
        versions = [Version("before", extract(args.before, work / "before")),
                    Version("after", extract(args.after, work / "after"))]  # fmt: skip
        for finding in args.only:
            for version in versions:
                tmp = work / f"{finding}-{version.label}"
                tmp.mkdir(mode=0o755)
                print(f"finding {finding:>2} {version.label:>6}: {SCENARIOS[finding](version, tmp)}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
