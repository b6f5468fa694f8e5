"""The limits Slurm accepts (issue 30): SiteLimits.job_bounds, the export that
carries them, and job_submit.lua reading them back to the same bound.

The sacctmgr and scontrol outputs are the test cluster's, recorded with a 10-minute QoS granted
(tests/data/slurm/22.05/sacctmgr_*.txt, scontrol_show_reservation.txt).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from advisor.errors import InputError
from advisor.services.export import export_from_cache
from advisor.slurm.limits import (
    parse_associations,
    parse_default_accounts,
    parse_qos,
    parse_reservations,
)
from advisor.slurm.records import Association, Node, Partition, Qos, SiteLimits
from advisor.store.cluster import load_site_limits, save_cluster, save_site_limits
from advisor.store.connection import Store
from advisor.validate import validate
from tests.helpers.captures import SLURM_DATA, VERSIONS, capture
from tests.helpers.lua_plugin import NO_VAL, run_cases

CLUSTER = "advisor"
LIMITS = SiteLimits(
    {"normal": Qos("normal", None), "short": Qos("short", 600), "part": Qos("part", 300, True)},
    (
        Association(CLUSTER, "research", "alice", "", None, ("normal", "short"), ""),
        Association(CLUSTER, "lab", "alice", "", 1200, ("short",), ""),
        Association(CLUSTER, "lab", "alice", "fat", 900, ("normal",), "normal"),
        Association(CLUSTER, "research", "bob", "", None, ("normal", "short"), "short"),
    ),
    {"alice": "research", "bob": "research"},
    True,
    frozenset({"associations", "limits", "qos"}),
)
PARTITIONS = [
    Partition("cpu", ("c1",), 86400, 1800, True, "UP"),
    Partition("fat", ("f1",), 7200, 3600, False, "UP", qos="part"),
]


@pytest.mark.parametrize(
    ("user", "partition", "account", "qos", "expected"),
    [
        ("alice", "cpu", None, None, (86400, "partition cpu MaxTime")),  # normal: no MaxWall
        ("alice", "cpu", None, "short", (600, "QoS short MaxWall")),
        ("alice", "cpu", "lab", None, (600, "QoS short MaxWall")),  # its only QoS
        ("alice", "fat", "lab", None, (300, "partition QoS part MaxWall")),
        ("bob", "cpu", None, None, (600, "QoS short MaxWall")),  # the default QoS
        ("alice", "cpu", "lab", "normal", (1200, "association lab/alice MaxWall")),
    ],
)
def test_the_smallest_bound_applies(
    user: str, partition: str, account: str | None, qos: str | None, expected: tuple[int, str]
) -> None:
    part = next(p for p in PARTITIONS if p.name == partition)
    found = LIMITS.job_bounds(user=user, partition=partition, max_time_s=part.max_time_s,
                       partition_qos=part.qos, account=account, qos=qos)  # fmt: skip
    assert found.problem is None and found.tightest is not None
    assert (found.tightest.limit_s, found.tightest.source) == expected


def test_no_association_is_a_problem_only_where_slurm_requires_one() -> None:
    found = LIMITS.job_bounds(user="mallory", partition="cpu", max_time_s=86400)
    assert found.problem == "no association for user mallory in account (no default account)"
    lax = LIMITS._replace(enforce=frozenset({"limits"}))
    assert lax.job_bounds(user="mallory", partition="cpu", max_time_s=86400).problem is None
    unknown = SiteLimits.unknown().job_bounds(user="x", partition="cpu", max_time_s=60)
    assert unknown.limit_s == 60 and unknown.problem is None


def test_slurm_picks_the_qos_of_a_job_without_qos() -> None:
    assert LIMITS.associations[0].job_qos() == "normal"  # several, no default
    assert LIMITS.associations[1].job_qos() == "short"  # its only one
    assert LIMITS.associations[3].job_qos() == "short"  # the default
    assert LIMITS.associations[3].job_qos("x") == "x"


#: The versions with a recording of the limits (slurm/capture-fixtures.sh does not make them:
#: they were recorded with a QoS and a reservation made for the purpose, see each header).
RECORDED = [v for v in VERSIONS if (SLURM_DATA / v / "sacctmgr_qos.txt").exists()]


@pytest.mark.parametrize("version", RECORDED)
def test_recorded_sacctmgr_and_scontrol_outputs_are_read(version: str) -> None:
    assert "22.05" in RECORDED  # the shared cluster's recording is there
    qos = {q.name: q for q in parse_qos(capture("sacctmgr_qos.txt", version).body)}
    assert qos["advshort"].max_wall_s == 600 and qos["normal"].max_wall_s is None
    assocs = parse_associations(capture("sacctmgr_assoc.txt", version).body)
    nobody = next(a for a in assocs if a.user == "nobody")
    assert (nobody.cluster, nobody.account, nobody.partition) == (CLUSTER, "research", "")
    assert nobody.qos == ("advshort", "normal") and nobody.max_wall_s is None
    inherited = parse_associations(capture("sacctmgr_assoc_inherited.txt", version).body)
    assert {a.user: a.max_wall_s for a in inherited if a.account == "research"} == {
        "daemon": 7200, "nobody": 7200, "root": 7200, "slurm": 7200,
    }  # fmt: skip
    accounts = parse_default_accounts(capture("sacctmgr_user.txt", version).body)
    assert accounts["nobody"] == "research"
    (maint,) = parse_reservations(capture("scontrol_show_reservation.txt", version).body)
    assert (maint.name, maint.nodes, maint.end_epoch - maint.start_epoch) == (
        "advmaint", ("c1",), 1800,
    )  # fmt: skip
    assert "MAINT" in maint.flags
    assert parse_reservations(capture("scontrol_show_reservation_none.txt", version).body) == []
    limits = SiteLimits(qos, tuple(assocs), accounts, True, frozenset({"associations"}))
    found = limits.job_bounds(user="nobody", partition="cpu", max_time_s=86400, qos="advshort")
    assert found.tightest is not None and found.tightest.source == "QoS advshort MaxWall"


def test_sacctmgr_lines_that_do_not_fit_are_named() -> None:
    with pytest.raises(InputError, match="line 2: 2 fields, expected 3"):
        parse_qos("normal||\nshort|00:10:00\n")
    with pytest.raises(InputError, match=r"line 1 \(QoS x\): MaxWall"):
        parse_qos("x|soon|\n")
    assert parse_default_accounts("alice|research\n\n") == {"alice": "research"}
    rows = parse_associations("advisor|root||||normal|\nadvisor|lab|alice||20:00|short,normal|\n")
    assert rows == [Association(CLUSTER, "lab", "alice", "", 1200, ("normal", "short"), "")]


def test_the_cache_keeps_them_and_the_export_carries_them_to_the_plugin(
    lua: str, tmp_path: Path
) -> None:
    path = tmp_path / "cache.db"
    with Store.open(path) as store:
        save_cluster(store, PARTITIONS, [Node("c1", 2, 4000, (), ("cpu",), "IDLE"),
                                         Node("f1", 8, 64000, (), ("fat",), "IDLE")])  # fmt: skip
        save_site_limits(store, LIMITS)
        loaded = load_site_limits(store)
        assert loaded._replace(associations=()) == LIMITS._replace(associations=())
        assert sorted(loaded.associations) == sorted(LIMITS.associations)
        assert load_site_limits(store, user="bob").associations == (LIMITS.associations[3],)
        doc = export_from_cache(store, quantile=0.95, margin=0.1, generated_at="now")
    validate(doc, "export", source="export")
    assert doc["limits"]["qos"] == {"short": {"max_wall_min": 10}, "part": {"max_wall_min": 5}}
    assert doc["partitions"]["fat"]["qos"] == "part"
    # A shared task whose limit is above every bound: the plugin's limit must be the bound.
    doc["tasks"]["big"] = {"partitions": {"cpu": {"limit_min": 5000}, "fat": {"limit_min": 5000}}}
    combos = list(itertools.product(("alice", "bob"), ("cpu", "fat"), (None, "lab"),
                                    (None, "short", "normal")))  # fmt: skip
    parts = {
        "cpu": {"flag_default": 1, "max_time": 1440},
        "fat": {"flag_default": 0, "max_time": 120},
    }
    cases = [{"job": {"name": "big", "user_name": user, "partition": partition,
                      **({"account": account} if account else {}), **({"qos": qos} if qos else {})},
              "parts": parts} for user, partition, account, qos in combos]  # fmt: skip
    cases[0]["export_text"] = json.dumps(doc)
    results = run_cases(lua, tmp_path, cases)
    for (user, partition, account, qos), result in zip(combos, results, strict=True):
        part = next(p for p in PARTITIONS if p.name == partition)
        found = LIMITS.job_bounds(user=user, partition=partition, max_time_s=part.max_time_s,
                           partition_qos=part.qos, account=account, qos=qos)  # fmt: skip
        expected = NO_VAL if found.problem or found.limit_s is None else found.limit_s // 60
        assert result["time_limit"] == expected, (user, partition, account, qos, found)
