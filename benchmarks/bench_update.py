"""Throughput and memory of ``advisor update`` (``--swf``, ``--sacct-file``, live sacct) at 100k and 1M rows.

Run it as a user runs the advisor, from a regular (non-editable) install:
``python3 -m venv /tmp/vb && /tmp/vb/bin/pip install . && /tmp/vb/bin/python
benchmarks/bench_update.py [--sizes 100000,1000000] [--kinds swf,sacct,live]``.

Inputs, written to a temporary directory:

* **SWF**: the two real logs (KTH SP2 and CEA Curie, ../shared/data/traces; else the excerpts in
  tests/data/traces) one after the other, again and again, each copy shifted after the last
  (job ids renumbered, submit times moved on, the CEA users kept apart from KTH's); every other
  field is the log's own.
* **sacct**: a dump as ``sacct -a -X --parsable2 --format=<the advisor's fields>`` prints it
  (tests/data/slurm's recordings), each row one real job of the logs (runtime, request,
  outcome, processors, wait) given to one of the logs' users: each user has their own few job
  names (plain names, Nextflow ``nf-PROCESS_(sample)`` jobs, Snakemake runs named by a UUID
  with ``rule_..._wildcards_...`` comments), partitions and host lists; array tasks, CANCELLED
  by a uid, OUT_OF_MEMORY, memory per CPU or node, user comments, a quarter of the users
  submitting through the wrapper (advisor tags, their limit the tag's), and a few rows that
  are no finished job (still running, pending array remainders).
* **live**: the same rows answered by a stand-in for ``sacct`` on PATH, one process per 24-hour
  window as the update asks (each window's rows, in the query's delimiter and fields): the
  live path as a site runs it, from the process's output to the cache.  The child imports
  ``update_from_sacct`` from where its version keeps it, so the same benchmark measures an
  older install too.

The cache is a site's: the Lotaru models of two tasks (fastqc, bwa) and nodes with a class,
so the runs of those tasks (about 3 % of the dump's jobs) update the task models.

Each measurement runs in a fresh process, whose peak RSS (``VmHWM``) is its own:

1. ``update`` of the input into a fresh copy of that cache: rows and jobs stored per second
   of wall time, the CPU seconds it used (its own and its reader process's), peak RSS of the
   process and of its reader process (and, for the largest input, RSS while it stores);
2. the baseline: the ``accounting_jobs`` rows the update stored, read back in batches of the
   update's size and inserted into the same table of another fresh copy by a bare
   ``executemany`` per batch, one transaction each; only the executemany and commit are timed;
3. the floor: the same with the update's observation rows too (one executemany per table per
   batch, one transaction each): what storing what the update must store costs with no
   parsing, learning or history, the most any update of the same rows can reach in one writer.

Printed: the load average before and after; per input and size, jobs/s of the update, of the
baseline and of the floor and the update's ratio to each, CPU seconds, and peak RSS; CPU µs
per stored job of the writer and the reader; then the 1M / 100k ratio of peak RSS per input.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import advisor
from advisor.accounting.sacct_file import format_sacct_row
from advisor.accounting.swf import SwfJob, read_swf
from advisor.advice.tag import Tag, with_tag
from advisor.imports.lotaru import read_lotaru_csv
from advisor.services.learn import learn
from advisor.slurm.parsers import SACCT_FIELDS
from advisor.slurm.records import JobRecord, Node, Partition
from advisor.store import Store
from advisor.store.cluster import save_cluster
from advisor.store.node_classes import save_node_classes
from advisor.store.observations import add_observations

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data" / "traces"
LOGS = ("KTH-SP2-1996-2.1-cln.swf", "CEA-Curie-2011-sample30k.swf")
EXCERPTS = ("kth-sp2-excerpt.swf", "cea-curie-excerpt.swf")
LOTARU = REPO / "tests" / "data" / "imports" / "lotaru_local_eager_excerpt.csv"
#: Partitions: share of the jobs, node prefix, nodes, digits of the node numbers.
PARTITIONS = {
    "cpu": (0.55, "c", 400, 3),
    "long": (0.15, "c", 400, 3),
    "debug": (0.13, "c", 400, 3),
    "gpu": (0.12, "g", 32, 2),
    "fat": (0.05, "f", 8, 1),
}
WORDS = ("run", "sim", "train", "md", "vasp", "gromacs", "lammps", "analysis", "postproc",
         "test", "python", "bash", "wrf", "cp2k", "interactive", "job.sh", "fastqc", "bwa")  # fmt: skip
PROCESSES = ("NFCORE_RNASEQ_FASTQC", "NFCORE_RNASEQ_STAR_ALIGN", "NFCORE_RNASEQ_SALMON_QUANT",
             "NFCORE_EAGER_BWA", "NFCORE_SAREK_GATK4_MARKDUPLICATES", "MULTIQC")  # fmt: skip
RULES = ("bwa_map", "samtools_sort", "call_variants", "plot_quals")


def log_paths() -> list[Path]:
    """The real logs, else the excerpts kept in the repository."""
    paths = [SHARED / name for name in LOGS]
    if all(path.exists() for path in paths):
        return paths
    return [REPO / "tests" / "data" / "traces" / name for name in EXCERPTS]


def write_swf(path: Path, rows: int) -> None:
    """The logs one after the other until rows jobs, each copy shifted after the last."""
    logs = []
    for log in log_paths():
        lines = log.read_text().splitlines()
        header = [line for line in lines if line.startswith(";")]
        body = [line.split() for line in lines if line.strip() and not line.startswith(";")]
        logs.append((header, body))
    with path.open("w", encoding="utf-8") as out:
        out.writelines(line + "\n" for line in logs[0][0])  # the first log's header (its start)
        number, shift = 0, 0
        while number < rows:
            for index, (_, body) in enumerate(logs):
                first = int(body[0][1])
                for fields in body:
                    if number == rows:
                        break
                    number += 1
                    user = int(fields[11])
                    copied = [str(number), str(int(fields[1]) - first + shift), *fields[2:]]
                    copied[11] = str(user + 10_000 * index) if user >= 0 else fields[11]
                    out.write(" ".join(copied) + "\n")
                shift += int(body[-1][1]) - first + 86_400


def real_jobs() -> list[tuple[str, SwfJob]]:
    """(log tag, job) of every job of the logs with a known runtime."""
    return [
        (path.stem[:3].lower(), job)
        for path in log_paths()
        for job in read_swf(path)
        if job.run_s is not None
    ]


class User:
    """What one user submits: their names, partitions, account, and whether the wrapper does."""

    def __init__(self, name: str, rng: random.Random) -> None:
        self.name = name
        self.uid = 1000 + rng.randrange(60_000)
        self.account = f"proj{rng.randrange(120)}"
        self.wrapped = rng.random() < 0.25
        count = rng.choice((1, 2, 3, 5, 8, 12))
        self.names = [self._name(rng) for _ in range(count)]
        self.weights = [1 / (rank + 1) for rank in range(count)]  # Zipf
        self.partitions = rng.sample(list(PARTITIONS), rng.choice((1, 2, 2, 3)))
        self.run = ""  # the Snakemake run in progress

    @staticmethod
    def _name(rng: random.Random) -> str:
        kind = rng.random()
        if kind < 0.15:
            return "nextflow:" + rng.choice(PROCESSES)
        if kind < 0.25:
            return "snakemake:" + rng.choice(RULES)
        word = rng.choice(WORDS)
        return word if rng.random() < 0.5 else f"{word}_{rng.randrange(40)}"


def _hostlist(prefix: str, size: int, digits: int, count: int, rng: random.Random) -> str:
    first = rng.randrange(size - count + 1) + 1
    if count == 1:
        return f"{prefix}{first:0{digits}d}"
    return f"{prefix}[{first:0{digits}d}-{first + count - 1:0{digits}d}]"


def _state(job: SwfJob, rng: random.Random, uid: int) -> tuple[str, int | None, str]:
    """(state, by uid, exit code) of a finished job, from the log's outcome."""
    state = job.state
    if state == "FAILED":
        roll = rng.random()
        if roll < 0.15:
            return "OUT_OF_MEMORY", None, "0:125"
        if roll < 0.17:
            return "NODE_FAIL", None, "0:0"
        return "FAILED", None, f"{rng.choice((1, 1, 2, 127, 139))}:0"
    if state == "CANCELLED":
        return "CANCELLED", rng.choice((uid, uid, 0)), "0:15"
    if state == "TIMEOUT":
        return "TIMEOUT", None, "0:0"
    return "COMPLETED", None, "0:0"


def site_rows(rows: int, seed: int = 7) -> Iterator[str]:
    """The dump's rows (without the header), in submit order."""
    rng = random.Random(seed)
    jobs = real_jobs()
    users: dict[str, User] = {}
    clock = datetime(2025, 1, 1)
    number = 4_100_000
    written = 0
    while written < rows:
        tag, job = rng.choice(jobs)
        login = f"{tag}{job.user if job.user is not None else 0}"
        user = users.get(login) or users.setdefault(login, User(login, rng))
        clock += timedelta(seconds=rng.expovariate(1 / 30))
        number += 1
        written += 1
        roll = rng.random()
        if roll < 0.002:  # a pending array's remainder: no End, not a job yet
            yield f"{number}|{number}_[{rng.randrange(2, 9)}-{rng.randrange(10, 99)}]|arr|{login}|{user.account}|{user.partitions[0]}|None assigned|1|4G|00:00:00|0|01:00:00|60|PENDING|0:0|{clock:%Y-%m-%dT%H:%M:%S}|Unknown|Unknown||bigsite"
            continue
        kind = rng.choices(user.names, user.weights)[0]
        comment = ""
        if kind.startswith("nextflow:"):
            name = f"nf-{kind.split(':', 1)[1]}_(sample_{rng.randrange(500)})"
        elif kind.startswith("snakemake:"):
            if not user.run or rng.random() < 0.02:
                user.run = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            name = user.run
            comment = f"rule_{kind.split(':', 1)[1]}_wildcards_sample=s{rng.randrange(96)}"
        else:
            name = kind
            if rng.random() < 0.05:
                comment = rng.choice(("rerun", "see ticket 4411", "debug run, please ignore"))
        partition = rng.choice(user.partitions)
        _, prefix, size, digits = PARTITIONS[partition]
        procs = job.procs or 1
        node_count = max(1, min(size // 2, procs // 32))
        state, by_uid, exit_code = _state(job, rng, user.uid)
        limit_s = job.request_s or 3600
        elapsed = job.run_s or 0
        if user.wrapped:
            limit_min = (
                max(1, elapsed * 2 // 60 + 10) if state != "TIMEOUT" else max(1, elapsed // 60)
            )
            task = name if not name.startswith("nf-") else None
            comment = with_tag(comment, Tag("wrapper", "set", limit_min, 0.95, task, None))
            limit_s = limit_min * 60
        if state == "TIMEOUT":
            elapsed = max(elapsed, limit_s)
        start = clock + timedelta(seconds=job.wait_s or 0)
        running = roll < 0.005  # still running when the dump was made
        memory = rng.choice(("4G", "16G", "64G", "2000M", "4000Mc", "8Gn", "500M"))
        record = JobRecord(
            cluster="bigsite", job_id=str(number), job_id_raw=number, name=name, user=login,
            account=user.account, partition=partition,
            nodes=(), cpus=procs, req_mem_mb=None, elapsed_s=elapsed, timelimit_s=limit_s,
            timelimit_kind=None, state="RUNNING" if running else state, state_by_uid=by_uid,
            exit_code=0, exit_signal=0, submit=clock, start=start,
            end=None if running else start + timedelta(seconds=elapsed), comment=comment,
        )  # fmt: skip
        values = format_sacct_row(record).split("|")
        if rng.random() < 0.08:  # an array task: JobID base_index, JobIDRaw its own
            values[1] = f"{number - rng.randrange(1, 50)}_{rng.randrange(1, 200)}"
        values[6] = _hostlist(prefix, size, digits, node_count, rng)
        values[8] = memory
        values[14] = exit_code
        yield "|".join(values)


def write_sacct(path: Path, rows: int) -> None:
    """A dump as ``sacct -a -X --parsable2 --format=...`` prints it, with its header line."""
    with path.open("w", encoding="utf-8") as out:
        out.write("|".join(SACCT_FIELDS) + "\n")
        out.writelines(row + "\n" for row in site_rows(rows))


FAKE_SACCT = r"""#!PYTHON
import os, sys
from datetime import datetime, timedelta
options = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
start = datetime.fromisoformat(options["starttime"])
end = datetime.fromisoformat(options["endtime"])
delimiter = options["delimiter"]
folder = os.path.dirname(os.path.abspath(sys.argv[0]))
fields = open(os.path.join(folder, "fields")).read().split(",")
if options["format"].split(",") != fields:
    sys.exit("sacct: error: the stand-in answers the advisor's fields only")
day = start.replace(hour=0, minute=0, second=0)
while day < end:
    try:
        with open(os.path.join(folder, day.strftime("%Y-%m-%d")), encoding="utf-8") as rows:
            sys.stdout.write(rows.read().replace("\x1f", delimiter))
    except FileNotFoundError:
        pass
    day += timedelta(days=1)
"""


def write_live(folder: Path, rows: int) -> None:
    """The rows as a stand-in sacct answers them: one file per day of their end, and the tool."""
    folder.mkdir()
    (folder / "fields").write_text(",".join(SACCT_FIELDS))
    files: dict[str, Any] = {}
    for row in site_rows(rows):
        values = row.split("|")
        if len(values) != len(SACCT_FIELDS):  # a name holding '|': not this benchmark's
            continue
        when = values[17] if values[17] != "Unknown" else values[15]
        day = when[:10]
        out = files.get(day) or files.setdefault(day, (folder / day).open("w", encoding="utf-8"))
        out.write("\x1f".join(values) + "\n")
    for out in files.values():
        out.close()
    tool = folder / "sacct"
    tool.write_text(FAKE_SACCT.replace("PYTHON", sys.executable))
    tool.chmod(0o755)


def site_cache(path: Path) -> None:
    """A site's cache: the Lotaru models of fastqc and bwa, the nodes, cpu nodes classed."""
    with Store.open(path) as store:
        runs = read_lotaru_csv(LOTARU)
        add_observations(store, [run.observation for run in runs])
        learn(store)
        nodes = [
            Node(f"{prefix}{number:0{digits}d}", 32, 192_000, (name,), (name,), "IDLE")
            for name, (_, prefix, size, digits) in PARTITIONS.items()
            if name in ("cpu", "gpu", "fat")
            for number in range(1, size + 1)
        ]
        partitions = [
            Partition(name, tuple(n.name for n in nodes if n.name[0] == prefix), 7 * 86400,
                      3600, name == "cpu", "UP")
            for name, (_, prefix, _size, _digits) in PARTITIONS.items()
        ]  # fmt: skip
        save_cluster(store, partitions, nodes)
        save_node_classes(store, {n.name: "local" for n in nodes if n.name.startswith("c")})
    with Store.open(path) as store:
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


CHILD = r"""
import json, os, resource, sys, time
from pathlib import Path
mode, source, db = sys.argv[1], sys.argv[2], sys.argv[3]

def status(field):
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith(field))
    return int(line.split()[1]) / 1024

import advisor
try:
    from advisor.accounting.saved import BATCH, update_from_file
    from advisor.services.update import update_from_sacct
except ImportError:  # an older install (before issue 32): one module for both
    from advisor.accounting.update import BATCH, update_from_file, update_from_sacct
from advisor.slurm.backend import CliBackend
from advisor.store import Store
trace = []
if mode in ("baseline", "floor"):
    # the rows the update stored, copied batch by batch: the jobs (baseline), and with them
    # their observations (floor; ACCOUNTING_SOURCES: the update's, not the site's imports)
    import sqlite3
    from advisor.store.observations import ACCOUNTING_SOURCES
    tables = [("accounting_jobs", "", ())]
    if mode == "floor":
        where = " OR ".join("source LIKE ?" for _ in ACCOUNTING_SOURCES)
        tables.append(("observations", f" WHERE {where}", tuple(f"{s}%" for s in ACCOUNTING_SOURCES)))
    with Store.open(db) as store:
        read = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
        copies = []
        for table, where, params in tables:
            columns = [r[1] for r in store.conn.execute(f"PRAGMA table_info({table})") if r[1] != "id"]
            insert = (f"INSERT INTO {table} ({', '.join(columns)}) "
                      f"VALUES ({', '.join('?' * len(columns))})")
            cursor = read.execute(f"SELECT {', '.join(columns)} FROM {table}{where} ORDER BY rowid", params)
            copies.append((insert, cursor))
        (_, jobs), others = copies[0], copies[1:]
        seconds, rows = 0.0, 0
        while batch := jobs.fetchmany(BATCH):  # an observation per job: the same count of each
            batches = [batch, *(cursor.fetchmany(len(batch)) for _, cursor in others)]
            start = time.perf_counter()
            store.conn.execute("BEGIN IMMEDIATE")
            for (insert, _), rows_of in zip(copies, batches):
                store.conn.executemany(insert, rows_of)
            store.conn.execute("COMMIT")
            seconds += time.perf_counter() - start
            rows += len(batch)
    result = {"rows": rows, "stored": rows, "seconds": seconds}
else:
    calls = [0]
    def sample(done, total):
        calls[0] += 1
        if calls[0] % 50 == 0:
            trace.append((done, total, status("VmRSS:")))
    start, clock = time.perf_counter(), os.times()
    with Store.open(db) as store:
        if mode == "live":
            os.environ["PATH"] = source + os.pathsep + os.environ["PATH"]
            days = sorted(name for name in os.listdir(source) if name[:1].isdigit())
            done = update_from_sacct(store, CliBackend(), since=days[0] + "T00:00:00",
                                     until=days[-1] + "T23:59:59", progress=sample)
        else:
            done = update_from_file(store, Path(source), kind=mode, progress=sample)
    seconds, used = time.perf_counter() - start, os.times()
    result = {"rows": done.records, "stored": done.stored, "seconds": seconds,
              "cpu_s": used.user + used.system - clock.user - clock.system,
              "reader_cpu_s": used.children_user + used.children_system
                              - clock.children_user - clock.children_system,
              "reader_peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}
# VmHWM: this process image's own peak RSS (ru_maxrss would include the parent's at fork)
print(json.dumps({**result, "peak_mb": status("VmHWM:"), "trace": trace,
                  "advisor": advisor.__file__}))
"""


def measure(mode: str, source: Path, db: Path) -> dict[str, Any]:
    """One fresh process, run outside the repository so that the installed advisor is used."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", CHILD, mode, str(source), str(db)],
                          capture_output=True, text=True, check=False, cwd=db.parent,
                          env={**env, "ADVISOR_PROGRESS": "0"})  # fmt: skip
    if done.returncode:
        raise SystemExit(f"{mode} {source.name} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="input sizes in rows")
    parser.add_argument("--kinds", default="swf,sacct,live", help="inputs: swf, sacct, live")
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))
    kinds = args.kinds.split(",")
    where = Path(advisor.__file__).resolve()
    if REPO in where.parents:
        print(f"note: advisor imported from the source tree ({where}), not an install")
    writers = {"swf": write_swf, "sacct": write_sacct, "live": write_live}
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        template = work / "site.db"
        site_cache(template)
        table = []
        for kind in kinds:
            for size in sizes:
                started = time.perf_counter()
                source = work / (f"{kind}-{size}" if kind == "live" else f"{kind}-{size}.txt")
                writers[kind](source, size)
                mib = sum(p.stat().st_size for p in [source, *source.glob("*")] if p.is_file())
                print(f"{kind} {size:,} rows: {mib / 2**20:.0f} MiB, "
                      f"written in {time.perf_counter() - started:.0f} s", flush=True)  # fmt: skip
                cache, bare = work / f"{kind}-{size}.db", work / f"{kind}-{size}-bare.db"
                both = work / f"{kind}-{size}-floor.db"
                for copy in (cache, bare, both):
                    shutil.copy(template, copy)
                update = measure(kind, source, cache)
                baseline = measure("baseline", cache, bare)
                floor = measure("floor", cache, both)
                table.append((kind, size, update, baseline, floor))
                shutil.rmtree(source) if source.is_dir() else source.unlink()
                for path in work.glob(f"{kind}-{size}*.db*"):
                    path.unlink()
        print(f"advisor from {Path(table[0][2]['advisor']).parent}")
        print(
            f"load average (1, 5, 15 min) before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
            "after: {:.2f} {:.2f} {:.2f} ({} CPUs)".format(*os.getloadavg(), os.cpu_count())
        )
        print(f"{'input':>6s} {'rows':>10s} {'stored':>10s} {'wall s':>7s} {'jobs/s':>8s} "
              f"{'cpu s':>6s} {'reader':>6s} {'bare s':>6s} {'bare/s':>8s} {'ratio':>5s} "
              f"{'peak MiB':>8s} {'reader':>6s} {'floor/s':>8s} {'ratio':>5s}")  # fmt: skip
        for kind, size, update, baseline, floor in table:
            rate = update["stored"] / update["seconds"]
            bare_rate = baseline["stored"] / baseline["seconds"]
            floor_rate = floor["stored"] / floor["seconds"]
            print(
                f"{kind:>6s} {size:>10,} {update['stored']:>10,} {update['seconds']:>7.1f} "
                f"{rate:>8,.0f} {update['cpu_s']:>6.1f} {update['reader_cpu_s']:>6.1f} "
                f"{baseline['seconds']:>6.1f} {bare_rate:>8,.0f} {rate / bare_rate:>5.2f} "
                f"{update['peak_mb']:>8.1f} {update['reader_peak_mb']:>6.1f} "
                f"{floor_rate:>8,.0f} {rate / floor_rate:>5.2f}"
            )
        print(
            "floor: the update's own job and observation rows, one bare executemany of each "
            "per batch, one transaction each (what storing them costs with nothing else)"
        )
        for kind, size, update, _, _ in table:
            print(
                f"{kind} {size:,}: CPU µs per stored job: writer "
                f"{update['cpu_s'] / update['stored'] * 1e6:.1f}, reader "
                f"{update['reader_cpu_s'] / update['stored'] * 1e6:.1f}"
            )
        for kind in kinds:
            runs = [(size, update) for k, size, update, _, _ in table if k == kind]
            if len(runs) >= 2:
                (small, low), (large, high) = runs[0], runs[-1]
                print(f"{kind}: peak RSS {large:,} rows / {small:,} rows: "
                      f"{high['peak_mb'] / low['peak_mb']:.3f}")  # fmt: skip
                trace = ", ".join(f"{done:,}: {mib:.1f}" for done, _, mib in high["trace"][::4])
                print(f"  RSS while updating {large:,} rows (progress: MiB): {trace}")


if __name__ == "__main__":
    main()
