"""slurm/job_submit.lua under stand-alone Lua 5.1 and 5.4 with a stub ``slurm`` table.

The real plugin runs inside slurmctld (tests/integration/test_wrapper.py); here the edge cases
run in milliseconds.  Debian's job_submit_lua.so links Lua 5.1 (Slurm 22.05 and 24.11 alike);
sites that build Slurm against Lua 5.3/5.4 (RPM builds on EL9) run the same script there, so
both interpreters run every case.  Skipped where an interpreter or lua-cjson is not installed.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.lua_plugin import INTERPRETERS, NO_VAL, PARTS, PLUGIN_SO, missing, run_cases

EXPORT = {
    "version": 1,
    "generated_at": "now",
    "quantile": 0.95,
    "margin": 0.1,
    "partitions": {},
    "tasks": {
        "align": {
            "partitions": {
                "cpu": {"limit_min": 15},
                "fat": {"limit_min": 90},
                "inf": {"limit_min": 99},
            }
        },
        "a b,c": {"partitions": {"cpu": {"limit_min": 4}}},
    },
    "users": {"alice": {"tasks": {"align": {"partitions": {"cpu": {"limit_min": 20}}}}}},
}


def test_the_interpreters_include_the_one_the_installed_plugin_links() -> None:
    if not PLUGIN_SO.exists():
        missing(f"{PLUGIN_SO} is not installed")
    linked = subprocess.run(["ldd", str(PLUGIN_SO)], capture_output=True, text=True, check=True)
    versions = set(re.findall(r"liblua-?(\d\.\d)", linked.stdout))
    assert versions, linked.stdout
    assert {f"lua{v}" for v in versions} <= set(INTERPRETERS)


def job(name: str | None = "align", **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields} if name is not None else dict(fields)


def test_plugin_sets_clamps_tags_and_otherwise_passes(lua: str, tmp_path: Path) -> None:
    results = run_cases(
        lua,
        tmp_path,
        [
            {"job": job(), "parts": PARTS},  # no file yet
            {"export_text": json.dumps(EXPORT), "job": job(), "parts": PARTS},
            {"job": job(partition="fat"), "parts": PARTS},
            {"job": job(partition="cpu,fat"), "parts": PARTS},
            {"job": job(partition="inf"), "parts": PARTS},
            {"job": job(time_limit=3), "parts": PARTS},
            {"job": job("other"), "parts": PARTS},
            {"job": job(None), "parts": PARTS},
            {"job": job(partition="cpu,gpu"), "parts": PARTS},
            {"job": job(comment="mine"), "parts": PARTS},
            {"job": job(user_name="alice"), "parts": PARTS},
            {"job": job("a b,c"), "parts": PARTS},
        ],
    )
    assert all(r["rc"] == 0 for r in results)
    nothing = {"time_limit": NO_VAL, "time_min": NO_VAL, "comment": "", "logs": []}
    assert {k: results[0][k] for k in nothing} == nothing
    assert results[1]["time_limit"] == 15
    assert results[1]["comment"] == "advisor:lua,action=set,limit=15,task=align"
    assert results[1]["logs"] == [
        "user: advisor: no --time given; time limit 15 min predicted for 'align'"
    ]
    assert results[2]["time_limit"] == 60  # clamped to fat's MaxTime
    assert (results[3]["time_limit"], results[3]["time_min"]) == (60, 15)
    assert results[4]["time_limit"] == 99  # INFINITE MaxTime clamps nothing
    assert results[5]["time_limit"] == 3 and results[5]["comment"] == ""
    for unchanged in (results[6], results[7], results[8]):
        assert (unchanged["time_limit"], unchanged["logs"]) == (NO_VAL, [])
    assert results[9]["comment"] == "mine advisor:lua,action=set,limit=15,task=align"
    assert results[10]["time_limit"] == 20  # the user's own entry first
    assert results[11]["comment"].endswith("task=a%20b%2Cc")


def test_the_users_own_entries_come_in_the_wrappers_order(lua: str, tmp_path: Path) -> None:
    """users[u].tasks[name], else tasks[name] (a model), else users[u].partitions (history)."""
    export = json.loads(json.dumps(EXPORT))
    export["users"]["alice"]["tasks"]["sim.sh"] = {"partitions": {"cpu": {"limit_min": 188}}}
    export["users"]["alice"]["partitions"] = {"cpu": {"limit_min": 75}, "fat": {"limit_min": 40}}
    export["users"]["bob"] = {"tasks": {}, "partitions": {"cpu": {"limit_min": 61}}}
    alice = {"user_name": "alice"}
    results = run_cases(
        lua,
        tmp_path,
        [
            {"export_text": json.dumps(export), "job": job("sim.sh", **alice), "parts": PARTS},
            {"job": job("align", **alice), "parts": PARTS},
            {"job": job("anything", **alice), "parts": PARTS},
            {"job": job("anything", partition="cpu,fat", **alice), "parts": PARTS},
            {"job": job("align", user_name="bob"), "parts": PARTS},  # the shared model
            {"job": job("anything", user_name="bob", partition="fat"), "parts": PARTS},
            {"job": job("anything", user_name="carol"), "parts": PARTS},
        ],
    )
    assert [r["time_limit"] for r in results] == [188, 20, 75, 60, 15, NO_VAL, NO_VAL]
    assert results[3]["time_min"] == 40  # fat's own history limit, under the one for both
    assert results[2]["comment"] == "advisor:lua,action=set,limit=75,task=anything"


@pytest.mark.parametrize("lfs", [True, False], ids=["lua-filesystem", "bytes-compared"])
def test_corrupt_or_changed_files_are_noticed_and_never_break_a_job(
    lua: str, tmp_path: Path, lfs: bool
) -> None:
    changed = json.loads(json.dumps(EXPORT))
    changed["tasks"]["align"]["partitions"]["cpu"]["limit_min"] = 33
    results = run_cases(
        lua,
        tmp_path,
        [
            {"export_text": json.dumps(EXPORT), "job": job(), "parts": PARTS},
            {"export_text": '{"version": 1, "tasks": {', "job": job(), "parts": PARTS},
            {"job": job(), "parts": PARTS},  # same corrupt file: logged once only
            {"export_text": json.dumps(changed), "job": job(), "parts": PARTS},
            {"export_text": '{"version": 2}', "job": job(), "parts": PARTS},
            {
                "export_text": '{"version": 1, "tasks": {"align": {"partitions": {"cpu": {"limit_min": "x"}}}}}',
                "job": job(),
                "parts": PARTS,
            },
            {"export_text": '{"version": 1, "tasks": {"align": []}}', "job": job(), "parts": PARTS},
            {"delete": True, "job": job(), "parts": PARTS},
        ],
        lfs=lfs,
    )
    assert [r["rc"] for r in results] == [0] * 8
    assert [r["time_limit"] for r in results] == [
        15,
        NO_VAL,
        NO_VAL,
        33,
        NO_VAL,
        NO_VAL,
        NO_VAL,
        NO_VAL,
    ]
    assert results[1]["logs"] == [
        "error: advisor: "
        + str(tmp_path / "limits.json")
        + " is not a valid limits file; jobs pass unchanged"
    ]
    assert results[2]["logs"] == []
