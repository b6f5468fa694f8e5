"""What one user's job names cost slurm/job_submit.lua: an older version against this one.

Run: ``.venv/bin/python benchmarks/bench_plugin.py [--before f8a52fd] [--names 20000 50000]``
(``--before 3bc35c2``: the version before issue 31, for the 3 MiB partition list of its N3).

Lua 5.1 hashes at most 32 bytes of a string (one in every len/32 + 1, from the end), so long
names that differ only in the other bytes all share one hash: interning each one compares it
with all the others.  A user who gives many jobs such names gets as many history keys, and the
older export wrote them as keys of ``users[user].tasks``; lua-cjson then decodes the file inside
slurmctld, under its locks, after every export.  Measured here, with lua5.1 and lua-cjson as
installed (the plugin's own Lua), in one run:

1. cjson.decode of the file each version's ``advisor export`` writes from the same cache: one
   user with N history keys of 1000-byte colliding names, against N random 1000-byte names
   (the baseline);
2. the plugin's CPU time (os.clock) for one submission with a 4 MiB job name (of 'é', which the
   tag percent-encodes) by a user who has an entry, against a 10-byte name, per version.  (The
   cost slurmctld pays to hand the 4 MiB string to Lua is the same for both and not counted.)

Both versions are extracted with ``git archive`` and run from there with this interpreter.

With ``--cluster`` (as root, on the test cluster, under its lock:
``flock /tmp/advisor-cluster.lock .venv/bin/python benchmarks/bench_plugin.py --cluster``) it
instead installs each version's plugin in turn, with a limits file of that version's format,
submits the jobs of findings 7 and 8 held, and prints what slurmctld made of each and its CPU
time for a 3 MiB name; the plugin and the limits file are put back afterwards.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LUA = shutil.which("lua5.1") or "lua5.1"

#: Run with each version's code: a cache where one user has N history keys, and its export.
EXPORT = r"""
import json, sys
from advisor.history.keys import HistoryKey
from advisor.history.policy import KeyState
from advisor.slurm.records import Node, Partition
from advisor.store.cluster import save_cluster
from advisor.store.connection import Store
from advisor.history.cache import save_key_states
from advisor.services.export import export_from_cache
cache, names, out = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
with Store.open(cache) as store:
    save_cluster(store, [Partition("cpu", ("c1",), 86400, 1800, True, "UP")],
                 [Node("c1", 2, 4000, (), ("cpu",), "IDLE")])
    runs = ((600.0, False),) * 10
    states = {HistoryKey("user+name", "mallory", n, ""): KeyState(runs=runs, completed=10)
              for n in names}
    states[HistoryKey("user+partition", "mallory", "", "cpu")] = KeyState(runs=runs, completed=10)
    save_key_states(store, states)
    try:  # since issue 30 a partition exports limits once its kill budget has earned some
        import math
        from advisor.history.budget import KillBudget
        from advisor.history.cache import save_budgets, save_cells
        from advisor.history.cells import BELOW, ScoreCell, key_cell
        from advisor.history.keys import KINDS
    except ImportError:
        pass
    else:
        save_budgets(store, {"cpu": KillBudget(0.01, math.log(1000.0), 20.0, 5000)})
        calm = ScoreCell.of(tuple([BELOW] * 1000 + [-2.0] * 1000))
        save_cells(store, {key_cell("cpu", kind): calm for kind in KINDS})
with Store.open(cache, readonly=True) as store:
    doc = export_from_cache(store, quantile=0.95, margin=0.1, generated_at="now")
open(out, "w").write(json.dumps(doc, sort_keys=True))
"""

DECODE = r"""
local cjson = require("cjson")
local text = io.open(arg[1], "rb"):read("*a")
local best = math.huge
for _ = 1, tonumber(arg[2]) do
  collectgarbage("collect")
  local start = os.clock()
  local doc = cjson.decode(text)
  best = math.min(best, os.clock() - start)
  doc = nil
end
print(best)
"""

SUBMIT = r"""
slurm = { SUCCESS = 0, ERROR = -1, NO_VAL = 4294967294 }
function slurm.log_user(fmt, ...) local _ = string.format(fmt, ...) end
function slurm.log_error(fmt, ...) end
dofile(arg[1])
local name = arg[2] == "long" and string.rep("\195\169", 2 * 1024 * 1024) or "short-name"
-- "plist": the 3 MiB partition list of issue 31, N3 (786,432 times cpu)
local partition = arg[2] == "plist" and string.rep("cpu,", 786432):sub(1, -2) or "cpu"
local parts = { cpu = { flag_default = 1, max_time = 1440 } }
local function job()
  local fields = { name = name, user_name = "mallory", time_limit = slurm.NO_VAL,
                   time_min = slurm.NO_VAL, partition = partition }
  return setmetatable({}, { __index = fields, __newindex = fields })  -- like slurmctld's userdata
end
slurm_job_submit(job(), parts, 1000)  -- parse the limits file once
local best = math.huge
for _ = 1, tonumber(arg[3]) do
  local desc = job()
  local start = os.clock()
  slurm_job_submit(desc, parts, 1000)
  best = math.min(best, os.clock() - start)
end
print(best)
"""


def colliding(number: int) -> str:
    return "a" * 990 + f"{number:08d}" + "aa"


def extract(rev: str, into: Path) -> Path:
    into.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    (into / "advisor" / "schemas").symlink_to("../schemas")
    return into


def lua(script: Path, *args: object) -> float:
    done = subprocess.run(
        [LUA, str(script), *map(str, args)], capture_output=True, text=True, check=True
    )
    return float(done.stdout.strip())


def _slurmctld_cpu_s() -> float:
    pid = int(Path("/run/slurm/slurmctld.pid").read_text())
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _submit(*options: str, script: str | None = None) -> tuple[str, float]:
    """What slurmctld made of a held job, and its CPU seconds for the submission."""
    argv = ["sbatch", "-H", "--output=/dev/null", *options, *([] if script else ["--wrap", "true"])]
    before = _slurmctld_cpu_s()
    done = subprocess.run(argv, input=script, capture_output=True, text=True, check=False)
    spent = _slurmctld_cpu_s() - before
    match = re.search(r"Submitted batch job (\d+)", done.stdout)
    if match is None:
        why = (
            done.stderr.strip()
            .splitlines()[-1]
            .replace("sbatch: error: Batch job submission failed: ", "")
        )
        return f"refused: {why}", spent
    shown = subprocess.run(
        ["scontrol", "show", "job", "-o", match.group(1)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    subprocess.run(["scancel", match.group(1)], check=False)
    limit, tmin = re.search(r"TimeLimit=(\S+)", shown), re.search(r"TimeMin=(\S+)", shown)
    return (
        f"accepted, TimeLimit={limit.group(1) if limit else '?'} TimeMin={tmin.group(1) if tmin else '?'}",
        spent,
    )


def cluster(versions: dict[str, Path]) -> None:
    """Findings 7 and 8 on the real slurmctld, each version's plugin in turn."""
    plugin, export = Path("/etc/slurm/job_submit.lua"), Path("/etc/slurm/advisor-limits.json")
    saved, saved_export = plugin.read_bytes(), export.read_bytes() if export.exists() else None
    task = "bench-plugin"
    limits = {"cpu": {"limit_min": 15}, "long": {"limit_min": 15}, "fat": {"limit_min": 5}}
    try:
        for label, tree in versions.items():
            shutil.copy(tree / "slurm" / "job_submit.lua", plugin)
            stamp = time.time() + 2  # slurmctld notices a new mtime, in whole seconds
            os.utime(plugin, (stamp, stamp))
            time.sleep(2.2)
            text = plugin.read_text()
            version = next((n for n in (3, 2) if f"EXPORT_VERSION = {n}" in text), 1)
            doc = {"version": version, "names": "blake2s-96:advname1", "generated_at": "now",
                   "quantile": 0.95, "margin": 0.1, "partitions": {}, "tasks": {task: {"partitions": limits}},
                   "users": {"root": {"tasks": {}, "partitions": {"cpu": {"limit_min": 70}}}}}  # fmt: skip
            if version == 3:  # keyed names (issue 31 N4): the key beside the file
                key_id = hashlib.blake2s(bytes(32), digest_size=4, person=b"advkeyid").hexdigest()
                doc.update(names="blake2s-96-keyed:advname2", key_id=key_id)
                Path(f"{export}.key").write_text(bytes(32).hex() + "\n")
            tmp = export.with_suffix(".bench")
            tmp.write_text(json.dumps(doc))
            tmp.chmod(0o644)
            tmp.replace(export)
            print(f"{label}:")
            for what, options in (("-J T", ("-J", task)), ("-J T --comment <1000 bytes>", ("-J", task, "--comment", "c" * 1000)),
                                  ("-J T --time-min=600", ("-J", task, "--time-min=600")),
                                  ("-J T -p long --time-min=200", ("-J", task, "-p", "long", "--time-min=200")),
                                  ("-J other -p long --time-min=200", ("-J", "bench-other", "-p", "long", "--time-min=200"))):  # fmt: skip
                print(f"  {what:<34} {_submit(*options)[0]}")
            ordinary = min(_submit("-J", f"{task}-x")[1] for _ in range(5))
            huge = (
                "#!/bin/sh\n#SBATCH -J " + "\u00e9" * (3 << 19) + "\ntrue\n"
            )  # sbatch's limit: 4 MiB scripts
            results = [_submit(script=huge) for _ in range(3)]
            print(f"  3 MiB name: {results[0][0]}; slurmctld CPU {min(r[1] for r in results):.2f} s "
                  f"(an ordinary job: {ordinary:.2f} s)")  # fmt: skip
    finally:
        plugin.write_bytes(saved)
        stamp = time.time() + 2
        os.utime(plugin, (stamp, stamp))
        if saved_export is None:
            export.unlink(missing_ok=True)
        else:
            export.write_bytes(saved_export)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--before",
        default="f8a52fd",
        help="the older version (git rev; default: main before issue 16)",
    )
    parser.add_argument("--after", default="HEAD", help="this version (git rev)")
    parser.add_argument("--names", type=int, nargs="+", default=[20_000, 50_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cluster", action="store_true", help="on the real slurmctld (see above)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-plugin-"))
    try:
        (work / "decode.lua").write_text(DECODE)
        (work / "submit.lua").write_text(SUBMIT)
        versions = {
            label: extract(rev, work / label)
            for label, rev in (("before", args.before), ("after", args.after))
        }
        if args.cluster:
            cluster(versions)
            return
        rng = random.Random(0)
        print(f"cjson.decode of the export of one user's N history keys (best of {args.repeat}):")
        print(f"{'N':>7} {'names':>10} {'before s':>9} {'after s':>8} {'entries before/after':>21} "
              f"{'MB before/after':>16} {'ratio':>7}")  # fmt: skip
        for count in args.names:
            for kind in ("random", "colliding"):
                names = ([colliding(i) for i in range(count)] if kind == "colliding" else
                         ["".join(rng.choices("abcdefghij", k=1000)) for _ in range(count)])  # fmt: skip
                (work / "names.json").write_text(json.dumps(names))
                row = {}
                for label, tree in versions.items():
                    out = work / f"{label}.json"
                    for leftover in work.glob("cache.db*"):
                        leftover.unlink()
                    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
                    subprocess.run([sys.executable, "-c", EXPORT, str(work / "cache.db"), str(work / "names.json"), str(out)],
                                   env=env, check=True, cwd=work)  # fmt: skip
                    entries = len(json.loads(out.read_text())["users"]["mallory"]["tasks"])
                    row[label] = (
                        lua(work / "decode.lua", out, args.repeat),
                        entries,
                        out.stat().st_size,
                    )
                before, after = row["before"][0], row["after"][0]
                print(f"{count:>7} {kind:>10} {before:>9.3f} {after:>8.4f} "
                      f"{row['before'][1]:>14}/{row['after'][1]:<6} "
                      f"{row['before'][2] / 1e6:>10.1f}/{row['after'][2] / 1e6:<5.2f} "
                      f"{before / max(after, 1e-6):>6.0f}x")  # fmt: skip
        print("\nplugin CPU per submission (best of 20), the user has an entry:")
        for label, tree in versions.items():
            doc = work / f"{label}.json"
            plugin = work / f"{label}.lua"
            text = (tree / "slurm" / "job_submit.lua").read_text()
            plugin.write_text(
                text.replace('"/etc/slurm/advisor-limits.json"', json.dumps(str(doc)))
            )
            short = lua(work / "submit.lua", plugin, "short", 20)
            long = lua(work / "submit.lua", plugin, "long", 20)
            plist = lua(work / "submit.lua", plugin, "plist", 5)
            print(
                f"  {label:>6}: 10-byte name {short * 1e3:8.4f} ms, 4 MiB name {long * 1e3:10.4f} ms, "
                f"3 MiB -p list {plist * 1e3:10.4f} ms"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
