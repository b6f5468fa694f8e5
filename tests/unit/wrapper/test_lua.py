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

from advisor.store.names import name_key
from tests.helpers.lua_plugin import (
    HEAD,
    INTERPRETERS,
    NO_VAL,
    PARTS,
    PLUGIN_SO,
    TEST_KEY,
    missing,
    run_cases,
)

EXPORT = {
    **HEAD,
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
    "users": {
        "alice": {
            "tasks": {
                name_key("alice", "align", TEST_KEY): {"partitions": {"cpu": {"limit_min": 20}}}
            }
        }
    },
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
    export["users"]["alice"]["tasks"][name_key("alice", "sim.sh", TEST_KEY)] = {
        "partitions": {"cpu": {"limit_min": 188}}
    }
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


def test_a_numbered_name_finds_its_familys_entry_after_the_names_own(
    lua: str, tmp_path: Path
) -> None:
    """users[u].families[family] after the name's own entries and before users[u].partitions,
    the family masked as advisor.history.keys.name_family masks it."""
    from advisor.history.keys import name_family

    assert name_family("bwa.P23-WB10_1_L1") == "bwa.P#-WB#_#_L#"
    export = json.loads(json.dumps(EXPORT))
    mine = export["users"]["alice"]
    mine["families"] = {
        name_key("alice", "bwa.P#-WB#_#_L#", TEST_KEY): {"partitions": {"cpu": {"limit_min": 33}}},
        name_key("alice", "align#", TEST_KEY): {"partitions": {"cpu": {"limit_min": 44}}},
        name_key("alice", "sim.sh", TEST_KEY): {"partitions": {"cpu": {"limit_min": 55}}},
    }
    mine["tasks"][name_key("alice", "bwa.P1-WB1_1_L1", TEST_KEY)] = {
        "partitions": {"cpu": {"limit_min": 22}}
    }
    mine["partitions"] = {"cpu": {"limit_min": 75}}
    alice = {"user_name": "alice"}
    results = run_cases(
        lua,
        tmp_path,
        [
            {"export_text": json.dumps(export), "job": job("bwa.P23-WB10_1_L1", **alice)}
            | {"parts": PARTS},
            {"job": job("bwa.P1-WB1_1_L1", **alice), "parts": PARTS},  # the name's own entry
            {"job": job("align7", **alice), "parts": PARTS},  # the family
            {"job": job("align7", user_name="bob"), "parts": PARTS},  # not bob's family
            {"job": job("sim.sh", **alice), "parts": PARTS},  # no digits: no family of its own
            {"job": job("bwa.P23-WB10_1_L1x", **alice), "parts": PARTS},  # another family
        ],
    )
    assert [r["time_limit"] for r in results] == [33, 22, 44, NO_VAL, 75, 75]
    assert results[0]["comment"] == "advisor:lua,action=set,limit=33,task=bwa.P23-WB10_1_L1"


def test_a_job_no_entry_knows_is_marked_for_readvise(lua: str, tmp_path: Path) -> None:
    """Without --time and without an entry the job keeps Slurm's default, and its AdminComment
    (which its owner cannot write) says so, for ``advisor readvise``; with --time, an entry,
    or no export, nothing is marked."""
    mark = "advisor:lua,action=waiting,limit=0,task=other"
    results = run_cases(
        lua,
        tmp_path,
        [
            {"job": job("other"), "parts": PARTS},  # no export: the advisor is not set up
            {"export_text": json.dumps(EXPORT), "job": job("other"), "parts": PARTS},
            {"job": job("other", time_limit=30), "parts": PARTS},  # the user's own --time
            {"job": job("align"), "parts": PARTS},  # an entry: a limit, no mark
            {"job": job("align", partition="cpu,gpu"), "parts": PARTS},  # gpu: no entry there
            {"job": job("other", admin_comment="ops"), "parts": PARTS, "uid": 0},
            {"job": job("other", admin_comment=f"x {mark}"), "parts": PARTS, "uid": 65534},
            {"job": job("other", admin_comment="a" * 1020), "parts": PARTS, "uid": 0},
        ],
    )
    assert all(r["rc"] == 0 and r["time_limit"] in (NO_VAL, 30, 15) for r in results)
    assert [r["admin_comment"] for r in results[:4]] == ["", mark, "", ""]
    assert results[1]["time_limit"] == NO_VAL and results[1]["logs"] == []
    assert results[1]["comment"] == ""  # the job's owner sees nothing of it
    assert results[3]["time_limit"] == 15
    assert (results[4]["time_limit"], results[4]["admin_comment"]) == (NO_VAL, "advisor:lua,"
        "action=waiting,limit=0,task=align")  # fmt: skip
    assert results[5]["admin_comment"] == f"ops {mark}"
    assert results[6]["admin_comment"] == mark  # a user's own record is dropped first
    assert results[7]["admin_comment"] == "a" * 1020  # too long with the mark: left as it was


def test_an_array_past_the_partitions_credit_is_left_for_readvise(lua: str, tmp_path: Path) -> None:
    """The export's credit (kills the budget allowed at export time) bounds a job array's tasks,
    counted as advisor.sbatch.request.array_size counts them; past it, the job is marked."""
    from advisor.sbatch.request import array_size

    export = json.loads(json.dumps(EXPORT))
    export["partitions"] = {"cpu": {"max_time_min": 1440, "default": True, "credit": 3}}
    specs = ["1-3", "1-4%2", "0-15:4", "0-8:4", "1,5", "junk", "7"]
    results = run_cases(
        lua,
        tmp_path,
        [
            {
                "export_text": json.dumps(export),
                "job": job("align", array_inx=specs[0]),
                "parts": PARTS,
            }
        ]
        + [{"job": job("align", array_inx=spec), "parts": PARTS} for spec in specs[1:]]
        + [
            {"job": job("align"), "parts": PARTS},  # no array: one job
            {"job": job("align", partition="fat", array_inx="1-10"), "parts": PARTS},  # no credit
        ],
    )
    bounded = [array_size(spec) <= 3 for spec in specs]
    assert bounded == [True, False, False, True, True, True, True]
    assert [r["time_limit"] for r in results] == [15 if b else NO_VAL for b in bounded] + [15, 60]
    marked = "advisor:lua,action=waiting,limit=0,task=align"
    assert [r["admin_comment"] for r in results[:3]] == ["", marked, marked]


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
            {"export_text": '{"version": 3, "tasks": {', "job": job(), "parts": PARTS},
            {"job": job(), "parts": PARTS},  # same corrupt file: logged once only
            {"export_text": json.dumps(changed), "job": job(), "parts": PARTS},
            {
                "export_text": '{"version": 1, "tasks": {"align": {"partitions": {"cpu": {"limit_min": 9}}}}}',
                "job": job(),
                "parts": PARTS,
            },
            {
                "export_text": '{"version": 3, "tasks": {"align": {"partitions": {"cpu": {"limit_min": "x"}}}}}',
                "job": job(),
                "parts": PARTS,
            },
            {"export_text": '{"version": 3, "tasks": {"align": []}}', "job": job(), "parts": PARTS},
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


#: Names whose digests the plugin must compute as Python does: block edges, UTF-8, Slurm's limit.
TWIN_NAMES = ["a", "sim.sh", "a b,c", "é", "🙂 x", "x" * 55, "x" * 56, "x" * 63, "x" * 64,
              "x" * 65, "x" * 128, "ü" * 300, "y" * 1024]  # fmt: skip


def test_name_key_is_hashlibs_keyed_blake2s() -> None:
    import hashlib

    for user, name in [("bob", n) for n in TWIN_NAMES] + [("", ""), ("é", "\udcff")]:
        data = f"{user}\0{name}".encode("utf-8", "surrogateescape").replace(
            b"\xff", "\ufffd".encode()
        )
        for key in (TEST_KEY, b"k", bytes(32)):
            assert (
                name_key(user, name, key)
                == hashlib.blake2s(data, digest_size=12, person=b"advname2", key=key).hexdigest()
            )


def test_the_plugin_finds_each_users_names_by_the_same_digest_as_python(
    lua: str, tmp_path: Path
) -> None:
    export = json.loads(json.dumps(EXPORT))
    export["users"]["bob"] = {
        "tasks": {
            name_key("bob", name, TEST_KEY): {"partitions": {"cpu": {"limit_min": 100 + i}}}
            for i, name in enumerate(TWIN_NAMES)
        },
        "partitions": {},
    }
    cases = [{"job": job(name, user_name="bob"), "parts": PARTS} for name in TWIN_NAMES]
    cases[0]["export_text"] = json.dumps(export)
    cases.append({"job": job(TWIN_NAMES[1], user_name="alice"), "parts": PARTS})  # bob's only
    results = run_cases(lua, tmp_path, cases)
    assert [r["time_limit"] for r in results] == [100 + i for i in range(len(TWIN_NAMES))] + [
        NO_VAL
    ]


def test_a_name_over_slurms_limit_is_left_alone(lua: str, tmp_path: Path) -> None:
    """Finding 7: a 4 MiB name cost 2.46 s of plugin CPU before slurmctld rejected the job."""
    export = json.loads(json.dumps(EXPORT))
    for name in ("n" * 1024, "n" * 1025):
        export["tasks"][name] = {"partitions": {"cpu": {"limit_min": 7}}}
    results = run_cases(
        lua,
        tmp_path,
        [
            {"export_text": json.dumps(export), "job": job("n" * 1024), "parts": PARTS},
            {"job": job("n" * 1025), "parts": PARTS},
            {"job": job("n" * (4 << 20)), "parts": PARTS},
        ],
    )
    assert [r["time_limit"] for r in results] == [7, NO_VAL, NO_VAL]
    assert results[1]["logs"] == results[2]["logs"] == [] and results[2]["comment"] == ""


def test_the_tag_is_left_out_when_the_comment_would_pass_slurms_limit(
    lua: str, tmp_path: Path
) -> None:
    """Finding 8: a 1000-character --comment plus the tag made slurmctld reject the job."""
    tag = "advisor:lua,action=set,limit=15,task=align"
    fits = "c" * (1024 - len(tag) - 1)
    export = json.loads(json.dumps(EXPORT))
    wide = "é" * 400  # 800 bytes, 2400 once percent-encoded in the tag
    export["tasks"][wide] = {"partitions": {"cpu": {"limit_min": 5}}}
    results = run_cases(
        lua,
        tmp_path,
        [
            {"export_text": json.dumps(export), "job": job(comment="c" * 1000), "parts": PARTS},
            {"job": job(comment=fits), "parts": PARTS},
            {"job": job(comment=fits + "c"), "parts": PARTS},
            {"job": job(wide), "parts": PARTS},
        ],
    )
    assert [r["time_limit"] for r in results] == [15, 15, 15, 5]  # the limit holds regardless
    assert results[0]["comment"] == "c" * 1000
    assert results[1]["comment"] == f"{fits} {tag}" and len(results[1]["comment"]) == 1024
    assert results[2]["comment"] == fits + "c"
    assert results[3]["comment"] == ""
    assert all(len(r["comment"].encode()) <= 1024 for r in results)


def test_the_limit_is_never_below_the_jobs_time_min(lua: str, tmp_path: Path) -> None:
    """Finding 8: --time-min=600 without --time got a 15-minute limit (rejected)."""
    results = run_cases(
        lua,
        tmp_path,
        [
            {"export_text": json.dumps(EXPORT), "job": job(time_min=600), "parts": PARTS},
            {"job": job(time_min=10), "parts": PARTS},
            {"job": job(time_min=2000), "parts": PARTS},  # above cpu's MaxTime: Slurm decides
            {"job": job(partition="cpu,fat", time_min=30), "parts": PARTS},
            {"job": job(partition="cpu,fat", time_min=90), "parts": PARTS},
        ],
    )
    got = [(r["time_limit"], r["time_min"]) for r in results]
    assert got == [(600, 600), (15, 10), (NO_VAL, 2000), (60, 30), (NO_VAL, 90)]
    assert results[0]["comment"] == "advisor:lua,action=set,limit=600,task=align"


def test_an_export_over_the_bound_is_not_read(lua: str, tmp_path: Path) -> None:
    padded = json.dumps(EXPORT) + " " * (32 << 20)
    results = run_cases(lua, tmp_path, [{"export_text": padded, "job": job(), "parts": PARTS}])
    assert results[0]["time_limit"] == NO_VAL
    assert results[0]["logs"] == [f"error: advisor: {tmp_path / 'limits.json'} is {len(padded)} "
                                  f"bytes, over {32 << 20}; jobs pass unchanged"]  # fmt: skip


def test_a_comment_over_slurms_limit_is_left_alone(lua: str, tmp_path: Path) -> None:
    results = run_cases(
        lua,
        tmp_path,
        [
            {"export_text": json.dumps(EXPORT), "job": job(comment="c" * 1024), "parts": PARTS},
            {"job": job(comment="c" * 1025), "parts": PARTS},
            {"job": job(comment="c" * (4 << 20)), "parts": PARTS},
        ],
    )
    assert [r["time_limit"] for r in results] == [15, NO_VAL, NO_VAL]
    assert results[0]["comment"] == "c" * 1024  # the limit, without room for the tag


def heartbeat(age_s: int) -> str:
    import time

    return json.dumps({"heartbeat_epoch": int(time.time()) - age_s, "poll_s": 10, "fresh_s": 30})


def test_a_given_time_is_lowered_only_while_the_guards_heartbeat_is_fresh(
    lua: str, tmp_path: Path
) -> None:
    fresh, stale = heartbeat(5), heartbeat(120)
    results = run_cases(
        lua,
        tmp_path,
        [
            {
                "export_text": json.dumps(EXPORT),
                "guard_text": fresh,
                "job": job(time_limit=300),
                "parts": PARTS,
            },
            {"job": job(time_limit=10), "parts": PARTS},  # already within the advice
            {"job": job(time_limit=300, comment="mine"), "parts": PARTS},
            {"job": job(time_limit=4294967295), "parts": PARTS},  # INFINITE: no ceiling
            {"guard_text": stale, "job": job(time_limit=300), "parts": PARTS},
            {"guard_text": "{" * 5000, "job": job(time_limit=300), "parts": PARTS},  # not its file
            {"guard_text": fresh, "job": job(time_limit=300, admin_comment="ops"), "parts": PARTS},
        ],
    )
    assert all(r["rc"] == 0 for r in results)
    tag = "advisor:lua,action=guarded,limit=15,task=align,req=300"
    assert (results[0]["time_limit"], results[0]["comment"]) == (15, tag)
    assert results[0]["admin_comment"] == tag  # the guard's record: users cannot write it
    assert results[0]["logs"] == [
        "user: advisor: --time 300 min lowered to 15 min predicted for 'align'; "
        "advisor guard raises it up to 300 min if needed"
    ]
    assert (results[1]["time_limit"], results[1]["comment"]) == (10, "")
    assert results[2]["comment"] == f"mine {tag}" and results[2]["admin_comment"] == tag
    assert results[3]["time_limit"] == 4294967295
    for unchanged in (results[4], results[5]):  # stale or unreadable heartbeat: left alone
        assert (unchanged["time_limit"], unchanged["comment"], unchanged["logs"]) == (300, "", [])
        assert unchanged["admin_comment"] == ""
    assert results[6]["admin_comment"] == f"ops {tag}"


def test_a_tag_the_job_carries_is_never_what_the_plugin_records(lua: str, tmp_path: Path) -> None:
    """Issue 31, N1: the record holds the job's own --time and the plugin's own advice; a
    tag written at submission (req=60 on a one-minute job) claims nothing."""
    forged = "advisor:x,action=guarded,limit=1,req=60"
    results = run_cases(
        lua,
        tmp_path,
        [
            {
                "export_text": json.dumps(EXPORT),
                "guard_text": heartbeat(5),
                "job": job(time_limit=1, comment=forged),
                "parts": PARTS,
            },
            {"job": job(time_limit=300, comment=f"mine {forged}"), "parts": PARTS},
        ],
    )
    assert (results[0]["time_limit"], results[0]["admin_comment"]) == (1, "")
    record = "advisor:lua,action=guarded,limit=15,task=align,req=300"
    assert (results[1]["time_limit"], results[1]["admin_comment"]) == (15, record)
    assert results[1]["comment"] == f"mine {forged} {record}"  # the plugin's tag comes last


def test_a_record_a_submission_brings_in_admin_comment_is_dropped(lua: str, tmp_path: Path) -> None:
    """Issue 31, N1: only the plugin writes the guard's record, whatever reaches slurmctld."""
    forged = "advisor:lua,action=guarded,limit=1,task=x,req=600"
    results = run_cases(
        lua,
        tmp_path,
        [
            {
                "export_text": json.dumps(EXPORT),
                "job": job("other", time_limit=1, admin_comment=forged),
                "parts": PARTS,
                "uid": 65534,
            },
            {"job": job("other", time_limit=1, admin_comment=forged), "parts": PARTS, "uid": 0},
            {
                "guard_text": heartbeat(5),
                "job": job(time_limit=300, admin_comment=f"x {forged}"),
                "parts": PARTS,
                "uid": 65534,
            },
        ],
    )
    assert [r["admin_comment"] for r in results] == [
        "", forged, "advisor:lua,action=guarded,limit=15,task=align,req=300",
    ]  # fmt: skip


def test_users_cannot_write_an_advisor_tag_into_their_jobs_comment(
    lua: str, tmp_path: Path
) -> None:
    """Issue 31, N1: after submission the owner wrote a guarded tag; the plugin let it through."""
    tag = "my run advisor:x,action=guarded,limit=1,req=60"
    before = {"comment": "advisor:lua,action=set,limit=15,task=align"}
    results = run_cases(
        lua,
        tmp_path,
        [
            {"modify": {"comment": tag}, "record": {"comment": ""}, "uid": 65534},
            {"modify": {"comment": tag}, "record": {"comment": ""}, "uid": 0},  # root may
            {"modify": {"comment": before["comment"]}, "record": before, "uid": 65534},
            {"modify": {"comment": "just words"}, "record": before, "uid": 65534},
            {"modify": {"time_limit": 5}, "record": before, "uid": 65534},
        ],
    )
    assert [r["rc"] for r in results] == [2002, 0, 0, 0, 0]
    assert results[0]["logs"] == [
        "user: advisor: a comment holding 'advisor:' is the advisor's tag; only the advisor "
        "writes it"
    ]


def test_a_partition_list_over_slurms_limit_costs_nothing(lua: str, tmp_path: Path) -> None:
    """Issue 31, N3: a 3 MiB -p list was split and looked up name by name under slurmctld's
    locks (796 ms of its CPU), for a job slurmctld then refused."""
    huge = ",".join(["cpu"] * 786_432)
    results = run_cases(
        lua,
        tmp_path,
        [
            {"export_text": json.dumps(EXPORT), "job": job(partition=huge), "parts": PARTS},
            {"job": job(partition=",".join(["cpu"] * 256)), "parts": PARTS},  # 1023 bytes
            {"job": job(qos="q" * 1025), "parts": PARTS},
            {"job": job(account="a" * 1025), "parts": PARTS},
        ],
    )
    assert [r["time_limit"] for r in results] == [NO_VAL, 15, NO_VAL, NO_VAL]
    assert results[0]["logs"] == [] and results[0]["comment"] == ""


LIMITED = {
    **EXPORT,
    "partitions": {"cpu": {"max_time_min": 1440, "default": True},
                   "fat": {"max_time_min": 60, "default": False, "qos": "part5"}},
    "limits": {
        "known": True, "associations_required": True, "default_qos": "normal",
        "qos": {"advshort": {"max_wall_min": 10}, "part5": {"max_wall_min": 5}},
        "associations": {
            "alice": {"default_account": "research",
                      "accounts": {"research": {"qos": "normal"},
                                   "short": {"qos": "advshort"},
                                   "capped": {"qos": "normal", "max_wall_min": 12,
                                              "partitions": {"cpu": {"qos": "normal",
                                                                     "max_wall_min": 11}}}}},
            "bob": {"default_account": "research", "accounts": {"research": {"qos": "normal"}}},
        },
    },
}  # fmt: skip


def test_limits_stay_within_qos_and_association_max_wall(lua: str, tmp_path: Path) -> None:
    """Issue 30: with a 10-minute QoS the plugin set a 20-minute limit Slurm would not run."""
    mine = {"user_name": "alice"}
    results = run_cases(
        lua,
        tmp_path,
        [
            {"export_text": json.dumps(LIMITED), "job": job(**mine), "parts": PARTS},
            {"job": job(qos="advshort", **mine), "parts": PARTS},
            {"job": job(account="short", **mine), "parts": PARTS},
            {"job": job(account="capped", **mine), "parts": PARTS},
            {"job": job(partition="fat", user_name="bob"), "parts": PARTS},  # the shared limit
            {"job": job(user_name="mallory"), "parts": PARTS},  # no association: refused anyway
            {
                "guard_text": heartbeat(5),
                "job": job(qos="advshort", time_limit=60, **mine),
                "parts": PARTS,
            },
            {"job": job(qos="advshort", time_limit=9, **mine), "parts": PARTS},
        ],
    )
    assert [r["time_limit"] for r in results] == [20, 10, 10, 11, 5, NO_VAL, 60, 9]
    assert results[1]["comment"] == "advisor:lua,action=set,limit=10,task=align"
    assert results[6]["admin_comment"] == ""  # a request over the QoS: no guard may keep it


@pytest.mark.parametrize(
    "value", ["NaN", "Infinity", "-Infinity", "1e300", "4294967295", "4294967293.5"]
)
def test_a_limit_that_is_no_number_of_minutes_is_left_alone(
    lua: str, tmp_path: Path, value: str
) -> None:
    # Regression (found by the 100,000-input campaign of tests/fuzz/test_fuzz_lua.py): cjson
    # reads NaN and Infinity; NaN passed 'limit < 1' and became the job's time limit, and an
    # infinite or huge one stayed above a partition without MaxTime.
    text = json.dumps(EXPORT).replace('"limit_min": 15', f'"limit_min": {value}', 1)
    text = text.replace('"limit_min": 99', f'"limit_min": {value}', 1)
    results = run_cases(
        lua,
        tmp_path,
        [
            {"export_text": text, "job": job(partition=p), "parts": PARTS}
            for p in ("cpu", "inf", "fat")
        ],
    )
    assert [r["time_limit"] for r in results] == [NO_VAL, NO_VAL, 60]  # fat: 90, clamped to MaxTime


@pytest.mark.parametrize(
    "key", [None, bytes(32), b"short"], ids=["no-key", "another-key", "not-a-key"]
)
def test_without_the_exports_own_key_no_users_name_is_looked_up(
    lua: str, tmp_path: Path, key: bytes | None
) -> None:
    """Issue 31 N4: the digests are keyed; the plugin uses users' own entries only with the key
    the export was made with (its key_id), else the shared and partition limits alone."""
    export = json.loads(json.dumps(EXPORT))
    export["users"]["alice"]["partitions"] = {"cpu": {"limit_min": 75}}
    cases = [
        {"export_text": json.dumps(export), "job": job("align", user_name="alice"), "parts": PARTS},
        {"job": job("other", user_name="alice"), "parts": PARTS},
    ]
    results = run_cases(lua, tmp_path, cases, key=key)
    assert [r["time_limit"] for r in results] == [15, 75]  # not alice's own 20 for align
    assert any("users' own limits are not used" in line for line in results[0]["logs"])
    (tmp_path / "with").mkdir()
    assert [r["time_limit"] for r in run_cases(lua, tmp_path / "with", cases)] == [20, 75]
