"""Issue 31's attacks on the guard, on an older version and on this one: the "before" and
"after" columns of docs/reliability.md's rows N1, N2, N12, N14 and N15.

Run (as root; nothing touches the real cluster)::

    .venv/bin/python benchmarks/hostile_guard.py [--before REV]    # default: 3bc35c2, main before issue 31

Both versions are extracted with ``git archive`` and run as a user runs them (``advisor guard
--once``), with the same interpreter, against fake Slurm tools on PATH: ``squeue`` prints the
22.05 recording's job (tests/data/slurm/22.05/squeue_guarded.json) changed per scenario, with
times relative to the moment it runs; ``scontrol`` is a compiled program that appends every
``update`` to a log with the time it was made and sleeps the controller's latency (3.1 ms was
measured on the test cluster in the review), and prints recorded ``show`` outputs; ``sacctmgr``
prints what a site with a 10-minute QoS prints.  Each scenario prints one line per version.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks.hostile_users import extract  # noqa: E402  (one way to lay out a version)

RECORDING = REPO / "tests" / "data" / "slurm" / "22.05" / "squeue_guarded.json"
PARTITIONS = REPO / "tests" / "data" / "slurm" / "22.05" / "scontrol_show_partition.txt"

SCONTROL_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
int main(int argc, char **argv) {
    const char *dir = getenv("FAKE_SLURM");
    char path[4096];
    if (argc > 2 && strcmp(argv[1], "show") == 0) {
        snprintf(path, sizeof path, "%s/show_%s.txt", dir, argv[2]);
        FILE *in = fopen(path, "r");
        if (!in) return 0;
        char buf[65536]; size_t n;
        while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, stdout);
        fclose(in);
        return 0;
    }
    double latency = atof(getenv("FAKE_LATENCY") ? getenv("FAKE_LATENCY") : "0");
    struct timespec pause = { (time_t) latency, (long) ((latency - (long) latency) * 1e9) };
    nanosleep(&pause, NULL);
    struct timespec now; clock_gettime(CLOCK_REALTIME, &now);
    snprintf(path, sizeof path, "%s/updates.log", dir);
    FILE *out = fopen(path, "a");
    fprintf(out, "%ld.%09ld", (long) now.tv_sec, now.tv_nsec);
    for (int i = 1; i < argc; i++) fprintf(out, " %s", argv[i]);
    fprintf(out, "\n");
    fclose(out);
    return 0;
}
"""

SQUEUE_PY = r"""#!/usr/bin/env python3
import json, os, sys, time
fake = os.environ["FAKE_SLURM"]
doc = json.load(open(os.path.join(fake, "recording.json")))
model = next(j for j in doc["jobs"] if j["job_id"] == 4233)
now = int(time.time())
jobs = []
for spec in json.load(open(os.path.join(fake, "jobs.json"))):
    job = dict(model)
    job.update(spec["fields"])
    job["time_limit"] = spec["limit_min"]
    job["end_time"] = now + spec["left_s"]
    job["start_time"] = job["end_time"] - 60 * spec["limit_min"]
    jobs.append(job)
doc["jobs"] = jobs
print(json.dumps(doc))
"""

SACCTMGR_SH = """#!/bin/sh
for word in "$@"; do
  case $word in qos|assoc|user) exec cat "$FAKE_SLURM/sacctmgr_$word.txt" ;; esac
done
"""


class Version:
    """One version of the advisor, run as a user runs it."""

    def __init__(self, label: str, tree: Path, tools: Path) -> None:
        self.label, self.tree, self.tools = label, tree, tools

    def advisor(
        self, fake: Path, *args: object, latency: float = 0.0
    ) -> subprocess.CompletedProcess[str]:
        env = {"PATH": f"{self.tools}:/usr/bin:/bin", "LANG": "C.UTF-8", "FAKE_SLURM": str(fake),
               "FAKE_LATENCY": str(latency), "PYTHONPATH": str(self.tree),
               "SLURM_CONF": str(fake / "slurm.conf"), "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
        argv = [sys.executable, "-m", "advisor", *map(str, args)]
        return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=900,
                              env=env, cwd=fake)  # fmt: skip


def tools(into: Path) -> Path:
    into.mkdir()
    subprocess.run(["gcc", "-O2", "-x", "c", "-o", str(into / "scontrol"), "-"],
                   input=SCONTROL_C.encode(), check=True)  # fmt: skip
    for name, text in (("squeue", SQUEUE_PY), ("sacctmgr", SACCTMGR_SH)):
        (into / name).write_text(text)
        (into / name).chmod(0o755)
    return into


def site(fake: Path, jobs: list[dict[str, object]]) -> Path:
    """The fake cluster: partitions, a 10-minute QoS granted to everyone, the jobs."""
    fake.mkdir()
    text = RECORDING.read_text()
    (fake / "recording.json").write_text(
        "".join(x for x in text.splitlines(True) if not x.startswith("#"))
    )
    parts = PARTITIONS.read_text()
    (fake / "show_partition.txt").write_text(
        "".join(x for x in parts.splitlines(True) if not x.startswith("#"))
    )
    (fake / "show_reservation.txt").write_text("No reservations in the system\n")
    (fake / "show_config.txt").write_text("AccountingStorageEnforce = associations,limits,qos\n")
    (fake / "sacctmgr_qos.txt").write_text("normal||\nshort|00:10:00|\n")
    users = sorted({str(j["fields"].get("user_name", "root")) for j in jobs} | {"root"})  # type: ignore[union-attr]
    (fake / "sacctmgr_assoc.txt").write_text(
        "".join(f"advisor|research|{u}|||normal,short|\n" for u in users)
    )
    (fake / "sacctmgr_user.txt").write_text("".join(f"{u}|research\n" for u in users))
    (fake / "slurm.conf").write_text("ClusterName=advisor\n")
    (fake / "jobs.json").write_text(json.dumps(jobs))
    (fake / "updates.log").write_text("")
    return fake


def updates(fake: Path) -> list[tuple[float, list[str]]]:
    rows = []
    for line in (fake / "updates.log").read_text().splitlines():
        stamp, *argv = line.split()
        rows.append((float(stamp), argv))
    return rows


def tagged(limit: int, req: int, **fields: object) -> dict[str, object]:
    """A job whose comment (before: all the guard read) and AdminComment (after) claim guarded."""
    tag = f"advisor:lua,action=guarded,limit={limit},task=x,req={req}"
    return {"comment": tag, "admin_comment": tag, **fields}


def n1_forged_comment(v: Version, tmp: Path) -> str:
    """nobody's own one-minute job, tagged in its comment only, 20 s before its end."""
    forged = "advisor:x,action=guarded,limit=1,req=60"
    fake = site(tmp / "fake", [{"limit_min": 1, "left_s": 20,
                                "fields": {"user_name": "nobody", "comment": forged}}])  # fmt: skip
    done = v.advisor(fake, "--db", tmp / "cache.db", "guard", "--once")
    raised = [argv[-1] for _, argv in updates(fake)]
    return f"exit {done.returncode}; raises of the forged job: {raised or 'none'}"


def n1_qos(v: Version, tmp: Path) -> str:
    """A guarded job (request 600 min) in a 10-minute QoS, at 7 minutes with 20 s left."""
    fake = site(tmp / "fake", [{"limit_min": 7, "left_s": 20,
                                "fields": tagged(1, 600, user_name="alice", qos="short")}])  # fmt: skip
    done = v.advisor(fake, "--db", tmp / "cache.db", "guard", "--once")
    raised = [argv[-1] for _, argv in updates(fake)]
    return f"exit {done.returncode}; raised to {raised or 'nothing'} (the QoS allows 00:10:00)"


def n2_load(v: Version, tmp: Path, due: int = 5000, latency: float = 0.0031) -> str:
    """mallory's due jobs listed first, alice's genuinely guarded one last, 25 s left."""
    jobs = [{"limit_min": 1, "left_s": 20, "fields": {**tagged(1, 60), "job_id": 10_000 + i,
             "user_name": "mallory"}} for i in range(due)]  # fmt: skip
    jobs.append({"limit_min": 1, "left_s": 25, "fields": {**tagged(1, 60), "job_id": 99,
                 "user_name": "alice"}})  # fmt: skip
    fake = site(tmp / "fake", jobs)
    started = time.time()
    done = v.advisor(fake, "--db", tmp / "cache.db", "guard", "--once", latency=latency)
    poll = time.time() - started
    made = updates(fake)
    alice = next((at for at, argv in made if "JobId=99" in argv), None)
    if alice is None:
        return f"exit {done.returncode}; poll {poll:.1f} s, {len(made)} raises; alice's none"
    left = 25 - (alice - started)
    verdict = "saved" if left > 0 else "killed at her lowered limit"
    return (
        f"exit {done.returncode}; poll {poll:.1f} s, {len(made)} raises; alice's raise "
        f"{alice - started:.2f} s after the start, {left:.1f} s before her end: {verdict}"
    )


def n12_foreign_row(v: Version, tmp: Path) -> str:
    """mallory's advice row naming alice's job id with a 2-minute request."""
    fake = site(tmp / "fake", [{"limit_min": 2, "left_s": 20,
                                "fields": tagged(1, 60, user_name="alice")}])  # fmt: skip
    cache = tmp / "cache.db"
    v.advisor(fake, "--db", cache, "guard", "--once")  # creates the cache
    with sqlite3.connect(cache) as db:
        db.execute("INSERT INTO advice (created_at, user, policy, argv, cluster, job_id, outcome, "
                   "limit_s, request_s) VALUES ('2026-12-04', 'mallory', 'guarded', '[]', 'advisor', "
                   "4233, 'submitted', 60, 120)")  # fmt: skip
    (fake / "updates.log").write_text("")
    done = v.advisor(fake, "--db", cache, "guard", "--once")
    raised = [argv[-1] for _, argv in updates(fake)]
    return (
        f"exit {done.returncode}; alice's job at 2 min (request 60): raised to "
        f"{raised or 'nothing'}"
    )


def n15_export(v: Version, tmp: Path) -> str:
    """One poll with --export: is the export replaced?"""
    fake = site(tmp / "fake", [])
    export = tmp / "advisor-limits.json"
    export.write_text(json.dumps({"version": 2, "tasks": {}, "users": {}}) + "\n")
    before = export.stat().st_ino, export.stat().st_mtime_ns
    done = v.advisor(fake, "--db", tmp / "cache.db", "guard", "--once", "--export", export)
    after = export.stat().st_ino, export.stat().st_mtime_ns
    beside = sorted(p.name for p in tmp.iterdir() if p.name.endswith(".guard.json"))
    return (
        f"exit {done.returncode}; export replaced: {before != after}; heartbeat file: "
        f"{beside or 'none'}"
    )


N14_SCRIPT = r"""
import contextlib, inspect, io, json, sys
from datetime import datetime, timedelta
from advisor.cli import main
from advisor.slurm.records import JobRecord
from advisor.store import Store
from advisor.store.accounting import save_jobs
from advisor.store.advice import Advice, record_advice
start = datetime(2026, 12, 1, 8, 0)
jobs = [JobRecord("advisor", str(150 + i), 150 + i, "sim", "mallory", "lab", "cpu", ("c1",), 1,
                  100.0, 3000, 36000, None, "COMPLETED", None, 0, 0, start, start,
                  start + timedelta(seconds=3000), "") for i in range(10)]
# what root's update --spool stores for ten lines of mallory's own spool file
spool = {"origin": "spool"} if "origin" in inspect.signature(record_advice).parameters else {}
with Store.open(sys.argv[1]) as store:
    save_jobs(store, jobs)
    for job in jobs:
        record_advice(store, Advice("mallory", "fill", ["sbatch"], "submitted", task="sim",
                      partition="cpu", limit_s=36000, predicted_s=35400, cluster="advisor",
                      job_id=job.job_id_raw), **spool)
out = io.StringIO()
with contextlib.redirect_stdout(out):
    main(["--db", sys.argv[1], "report", "limits", "--by", "user", "--format", "json"])
row = json.loads(out.getvalue())["rows"][0]
print(f"advised_jobs {row['advised_jobs']}, advised_limit_h {row['advised_limit_h']}, "
      f"advised_unverified {row.get('advised_unverified', '(no such column)')}")
"""


def n14_forged_rows(v: Version, tmp: Path) -> str:
    """Ten spool lines claiming mallory's own plain jobs (their real 10 h limit)."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(v.tree), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", N14_SCRIPT, str(tmp / "cache.db")],
                          capture_output=True, text=True, check=False, env=env, cwd=tmp)  # fmt: skip
    return f"report limits, mallory: {done.stdout.strip() or done.stderr.strip()[-200:]}"


SCENARIOS: dict[str, Callable[[Version, Path], str]] = {
    "N1": n1_forged_comment,
    "N1-qos": n1_qos,
    "N2": n2_load,
    "N12": n12_foreign_row,
    "N14": n14_forged_rows,
    "N15": n15_export,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="3bc35c2", help="the version to compare with")
    parser.add_argument("--after", default="HEAD", help="this version (git rev)")
    parser.add_argument("--only", nargs="*", default=list(SCENARIOS), choices=list(SCENARIOS))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hostile-guard-"))
    try:
        fake_tools = tools(work / "tools")
        versions = [Version("before", extract(args.before, work / "before"), fake_tools),
                    Version("after", extract(args.after, work / "after"), fake_tools)]  # fmt: skip
        for name in args.only:
            for version in versions:
                tmp = work / f"{name}-{version.label}"
                tmp.mkdir()
                print(f"{name:>6} {version.label:>6}: {SCENARIOS[name](version, tmp)}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    os.umask(0o022)
    main()
