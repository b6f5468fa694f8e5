"""slurm/job_submit.lua under hostile exports and hostile jobs (issue 16, findings 7 and 8).

Each example writes one limits file (what ``advisor export`` writes from hostile names and
limits, then possibly with hostile values spliced in anywhere) and runs a batch of jobs through
the real plugin in Lua 5.1 with lua-cjson: any name (up to 5,000 bytes, any bytes), comment (up
to 1,100 bytes), --time-min, -p list and user.  The plugin must never raise (it logs
'job_submit.lua: ...' when it does), must leave a job alone whose name or comment slurmctld
refuses anyway (over 1,024 bytes), and must never make a job that slurmctld 22.05 refuses: a
comment over 1,024 bytes, a limit above the smallest MaxTime of the job's partitions, a limit below the
job's --time-min or a TimeMin above the limit.  For a file that export wrote, each job also gets
exactly the limit its entry says (its user's digest, else the task, else the user's partitions).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from advisor.advice.forecast import Forecast
from advisor.advice.snapshot import Snapshot
from advisor.services.export import UserLimits, export_document
from advisor.slurm.records import Partition
from advisor.store.names import name_key
from advisor.validate import validate
from tests.helpers.hostile import HOSTILE_STRINGS, budget, count, mutated_json
from tests.helpers.lua_plugin import TEST_KEY
from tests.helpers.paths import REPO

pytestmark = pytest.mark.fuzz

LUA = shutil.which("lua5.1")
NO_VAL = 4294967294
INFINITE = 4294967295
PARTS = {"cpu": {"flag_default": 1, "max_time": 1440}, "fat": {"flag_default": 0, "max_time": 60},
         "inf": {"flag_default": 0, "max_time": INFINITE}}  # fmt: skip
#: slurmctld 22.05's _test_job_desc_fields: strlen(comment) > 1024 is refused.
COMMENT_MAX = 1024

DRIVER = r"""
slurm = { SUCCESS = 0, ERROR = -1, NO_VAL = 4294967294 }
local logs = {}
function slurm.log_user(fmt, ...) end
function slurm.log_error(fmt, ...) logs[#logs + 1] = string.format(fmt, ...) end
dofile(arg[1])
local cjson = require("cjson")
local parts = cjson.decode(arg[2])
local function unhex(text)
  return (text:gsub("%x%x", function(pair) return string.char(tonumber(pair, 16)) end))
end
local function hex(text)
  return (text:gsub(".", function(c) return string.format("%02x", string.byte(c)) end))
end
for line in io.lines() do
  local user, name, comment, partition, limit, tmin = line:match("^(%x*) (%x*) (%x*) (%S*) (%d+) (%d+)$")
  local job = { user_name = unhex(user), name = unhex(name), time_limit = tonumber(limit),
                time_min = tonumber(tmin) }
  if comment ~= "" then job.comment = unhex(comment) end
  if partition ~= "-" then job.partition = partition end
  logs = {}
  local rc = slurm_job_submit(job, parts, 1000)
  print(rc, job.time_limit, job.time_min, hex(job.comment or ""), hex(table.concat(logs, "\n")))
end
"""


class Flat:
    """Every task runs seconds[task] everywhere."""

    def __init__(self, seconds: dict[str, float]) -> None:
        self.seconds = seconds

    def default_input_bytes(self, task: str) -> int | None:
        return None

    def forecast(
        self, task: str, input_bytes: int | None, node_class: str, quantile: float
    ) -> Forecast | None:
        s = self.seconds[task]
        return Forecast(node_class, s, s, s, s, quantile, s, 50, "fake")


PARTITIONS = {
    "cpu": Partition("cpu", ("c1",), 86400, 1800, True, "UP"),
    "fat": Partition("fat", ("f1",), 3600, 3600, False, "UP"),
}

byte_names = st.binary(min_size=1, max_size=40).map(lambda b: b.decode("utf-8", "surrogateescape"))
long_names = st.tuples(st.sampled_from(["a", "é", "%", "x"]), st.integers(900, 2600)).map(
    lambda p: p[0] * p[1]
)
job_names = st.one_of(st.sampled_from([s for s in HOSTILE_STRINGS if s]), byte_names, long_names,
                      st.text(min_size=1, max_size=30))  # fmt: skip
users = st.sampled_from(["alice", "bob", "users", "é", ""])


@st.composite
def exports(draw: st.DrawFn) -> tuple[dict[str, Any], str, list[str]]:
    """What export writes from hostile names and limits (and, half the time, the text spoiled),
    and the names it was made of."""
    tasks = draw(st.lists(job_names, min_size=1, max_size=4, unique=True))
    seconds = {t: float(draw(st.integers(1, 10**7))) for t in tasks}
    snapshot = Snapshot(PARTITIONS, {"c1": "small", "f1": "big"}, Flat(seconds), tuple(tasks))
    mine, used = {}, list(tasks)
    for user in draw(
        st.lists(
            st.sampled_from(["alice", "bob", "users", "é"]), min_size=1, max_size=2, unique=True
        )
    ):
        names = draw(st.lists(job_names, max_size=4, unique=True))
        used += names
        minutes = st.integers(1, 10**6)
        mine[user] = UserLimits(
            {n: {"cpu": draw(minutes), "fat": draw(minutes)} for n in names},
            draw(st.dictionaries(st.sampled_from(["cpu", "fat"]), minutes, max_size=2)),
        )
    doc = export_document(snapshot, quantile=0.95, margin=0.0, generated_at="now", users=mine,
                          key=TEST_KEY)  # fmt: skip
    validate(doc, "export", source="export")
    text = json.dumps(doc, sort_keys=True)
    if draw(st.booleans()):
        return doc, text, used
    return {}, draw(mutated_json([doc], keys=("limit_min", "partitions", "tasks", "users"))), used


@st.composite
def jobs(draw: st.DrawFn, known: list[str]) -> dict[str, Any]:
    name = draw(st.sampled_from(known) if known and draw(st.integers(0, 3)) else job_names)
    tag = len("advisor:lua,action=set,limit=1440,task=")
    comment = draw(st.one_of(st.just(""), st.text(max_size=40),
                             st.integers(0, 1100).map(lambda n: "c" * n),
                             st.integers(-8, 8).map(lambda d: "c" * max(0, COMMENT_MAX - tag - d))))  # fmt: skip
    return {
        "user": draw(st.sampled_from(["alice", "bob"]) if draw(st.integers(0, 3)) else users),
        "name": name,
        "comment": comment,
        "partition": draw(
            st.sampled_from(["-", "-", "cpu", "fat", "cpu,fat", "fat,cpu", "inf", "gpu", "cpu,inf"])
        ),
        "time_limit": draw(st.sampled_from([NO_VAL, NO_VAL, NO_VAL, 5])),
        "time_min": draw(
            st.sampled_from([NO_VAL, NO_VAL, 1, 30, 59, 60, 61, 600, 1440, 1441, 5000])
        ),
    }


def run_plugin(tmp: Path, text: str, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    missing = pytest.fail if os.environ.get("ADVISOR_TEST_CLUSTER") == "1" else pytest.skip
    if LUA is None:
        missing("lua5.1 is not installed")
    export = tmp / "limits.json"
    Path(f"{export}.key").write_text(TEST_KEY.hex() + "\n")
    tmp_export = tmp / "limits.json.tmp"
    tmp_export.write_text(text)
    os.replace(tmp_export, export)  # a new inode: the plugin reads it again
    plugin = tmp / "job_submit.lua"
    if not plugin.exists():
        source = (REPO / "slurm" / "job_submit.lua").read_text()
        plugin.write_text(
            source.replace('"/etc/slurm/advisor-limits.json"', json.dumps(str(export)))
        )
        (tmp / "driver.lua").write_text(DRIVER)

    def hexed(value: str) -> str:
        return value.encode("utf-8", "surrogateescape").hex()

    lines = "".join(
        f"{hexed(j['user'])} {hexed(j['name'])} {hexed(j['comment'])} {j['partition']} "
        f"{j['time_limit']} {j['time_min']}\n"
        for j in batch
    )
    done = subprocess.run([LUA, str(tmp / "driver.lua"), str(plugin), json.dumps(PARTS)],
                          input=lines, capture_output=True, text=True, check=False)  # fmt: skip
    if "module 'cjson' not found" in done.stderr:
        missing("lua-cjson is not installed")
    assert done.returncode == 0, done.stderr
    out = []
    for line in done.stdout.splitlines():
        rc, limit, tmin, comment, logs = [*line.split("\t"), ""][:5]
        out.append({"rc": int(rc), "time_limit": int(limit), "time_min": int(tmin),
                    "comment": bytes.fromhex(comment), "logs": bytes.fromhex(logs).decode("utf-8", "replace")})  # fmt: skip
    assert len(out) == len(batch)
    return out


def _over(text: str) -> bool:
    """Longer than slurmctld accepts (a job name or comment): the plugin leaves such jobs."""
    return len(text.encode("utf-8", "surrogateescape")) > COMMENT_MAX


def _expected(doc: dict[str, Any], job: dict[str, Any]) -> int | None:
    """The limit a cpu job gets from a file export wrote (None: left alone)."""
    name, user = job["name"], job["user"]
    raw = name.encode("utf-8", "surrogateescape")
    if job["time_limit"] != NO_VAL or len(raw) > 1024 or not name or _over(job["comment"]):
        return None
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # no entry holds it: lua-cjson reads only UTF-8
        own = shared = None
    else:
        mine = doc["users"].get(user, {})
        own = mine.get("tasks", {}).get(name_key(user, name, TEST_KEY)) if user else None
        shared = doc["tasks"].get(name)
    mine = doc["users"].get(user, {})
    entry = (own or shared or {}).get("partitions") or mine.get("partitions")
    if not entry or "cpu" not in entry:
        return None
    limit = min(int(entry["cpu"]["limit_min"]), 1440)
    if job["time_min"] != NO_VAL and job["time_min"] > limit:
        return None if job["time_min"] > 1440 else job["time_min"]
    return limit


@budget(40)
@given(data=st.data())
@example(data=None)
def test_the_plugin_never_raises_and_never_makes_a_job_slurm_refuses(
    scratch: Path, data: st.DataObject | None
) -> None:
    if data is None:  # the findings' own jobs
        doc = export_document(Snapshot(PARTITIONS, {}, Flat({"align": 900.0}), ("align",)),
                              quantile=0.95, margin=0.0, generated_at="now", key=TEST_KEY)  # fmt: skip
        text = json.dumps(doc)
        batch = [{"user": "alice", "name": "align", "comment": "c" * 1000, "partition": "-",
                  "time_limit": NO_VAL, "time_min": NO_VAL},
                 {"user": "alice", "name": "align", "comment": "", "partition": "-",
                  "time_limit": NO_VAL, "time_min": 600},
                 {"user": "alice", "name": "n" * (4 << 20), "comment": "", "partition": "-",
                  "time_limit": NO_VAL, "time_min": NO_VAL}]  # fmt: skip
    else:
        doc, text, known = data.draw(exports())
        batch = data.draw(st.lists(jobs(known), min_size=1, max_size=8))
    results = run_plugin(scratch, text, batch)
    for job, got in zip(batch, results, strict=True):
        assert got["rc"] == 0
        assert "job_submit.lua:" not in got["logs"], got["logs"]  # the plugin raised
        parts = ["cpu"] if job["partition"] == "-" else job["partition"].split(",")
        caps = [
            PARTS[p]["max_time"] for p in parts if p in PARTS and PARTS[p]["max_time"] != INFINITE
        ]
        changed = got["time_limit"] != job["time_limit"]
        count(f"job_submit.lua: {'limit set' if changed else 'left alone'}")
        if job["time_limit"] != NO_VAL or _over(job["name"]) or _over(job["comment"]):
            assert not changed and got["comment"] == job["comment"].encode(
                "utf-8", "surrogateescape"
            )
        if not changed:
            continue
        # what slurmctld checks after the plugin
        assert got["time_limit"] >= 1 and all(got["time_limit"] <= cap for cap in caps), (job, got)
        assert len(got["comment"]) <= COMMENT_MAX or got["comment"] == job["comment"].encode(
            "utf-8", "surrogateescape"
        )
        if job["time_min"] != NO_VAL:
            assert got["time_limit"] >= job["time_min"] and got["time_min"] == job["time_min"]
        elif got["time_min"] != NO_VAL:
            assert got["time_min"] <= got["time_limit"]
    if doc:  # a file export wrote: each cpu job gets its entry's limit
        for job, got in zip(batch, results, strict=True):
            if job["partition"] in ("-", "cpu"):
                expected = _expected(doc, job)
                assert got["time_limit"] == (job["time_limit"] if expected is None else expected), (
                    job
                )
