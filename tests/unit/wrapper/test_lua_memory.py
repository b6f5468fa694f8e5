"""slurm/job_submit.lua's memory (docs/memory.md): --mem for plain sbatch, from the export.

The export is the one ``advisor export`` writes of a real cache (its memory section); the
plugin runs under stand-alone Lua 5.1 and 5.4 with a stub ``slurm`` table (tests.helpers.
lua_plugin), as in test_lua.py.  On the real cluster: tests/integration/test_memory.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from advisor.services.export import export_from_cache
from advisor.slurm.records import MemoryLimits
from advisor.store import Store
from advisor.store.cluster import save_cluster
from advisor.store.memory_models import (
    KeyRuns,
    MemoryKey,
    save_keys,
    save_memory_budgets,
    save_memory_limits,
    save_memory_mode,
)
from advisor.store.names import name_key
from advisor.validate import validate
from tests.helpers.caches import NODES, PARTITIONS
from tests.helpers.lua_plugin import PARTS, TEST_KEY, run_cases

MEM_PER_CPU = 2**63


def _export(tmp_path: Path, mode: str, *, factor_log: float = 0.0) -> tuple[str, dict[str, Any]]:
    """A cache: 'align' shared peaks at ~1 GB, alice's own 'align' at ~2 GB; fat capped at 1500 MB."""
    path = tmp_path / f"{mode}.db"
    with Store.open(path) as store:
        save_cluster(store, PARTITIONS, NODES)
        save_memory_limits(store, {"cpu": MemoryLimits(def_per_cpu_mb=500),
                                   "fat": MemoryLimits(max_per_node_mb=1500)})  # fmt: skip
        save_keys(store, {
            MemoryKey("", "align"): KeyRuns(tuple((p, None, False) for p in (1000.0, 1010.0, 990.0)), 3),
            MemoryKey("alice", "align"): KeyRuns(tuple((p, None, False) for p in (2000.0, 2010.0, 1990.0)), 3),
        })  # fmt: skip
        save_memory_mode(store, mode)
        if factor_log:
            save_memory_budgets(store, {"cpu": (0.01, factor_log, 5, 1)})
        document = export_from_cache(
            store, quantile=0.95, margin=0.1, generated_at="now", key=TEST_KEY
        )
    validate(document, "export", source="export")
    return json.dumps(document), document["memory"]


def _log(result: dict[str, Any]) -> str:
    return "\n".join(result["logs"])


def _cases(text: str, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    first, *rest = jobs
    return [{"export_text": text, "job": first, "parts": PARTS},
            *({"job": job, "parts": PARTS} for job in rest)]  # fmt: skip


def test_the_export_says_what_the_wrapper_would_set(tmp_path: Path) -> None:
    _, memory = _export(tmp_path, "fill")
    assert memory["mode"] == "fill" and set(memory["tasks"]) == {"align"}
    shared = memory["tasks"]["align"]["mem_mb"]
    # keyed by the keyed digest of (alice, align), as the time limits are: no name in clear
    assert list(memory["users"]["alice"]) == [name_key("alice", "align", TEST_KEY)]
    (mine,) = memory["users"]["alice"].values()
    assert 1010 <= shared < 1500 and 2010 <= mine["mem_mb"] < 4000
    assert memory["partitions"]["fat"] == {"max_mb": 1500, "max_per_cpu_mb": -1, "factor": 1.0}
    assert memory["partitions"]["cpu"]["max_mb"] == 4000  # its largest node


def test_fill_sets_pn_min_memory_and_tags_it(lua: str, tmp_path: Path) -> None:
    text, memory = _export(tmp_path, "fill")
    shared = memory["tasks"]["align"]["mem_mb"]
    results = run_cases(lua, tmp_path, _cases(text, [
        {"name": "align"},
        {"name": "align", "user_name": "alice"},
        {"name": "align", "time_limit": 10, "comment": "mine"},  # its own --time stands
        {"name": "other"},
        {"name": "align", "time_limit": 10, "comment": "advisor:lua,action=set,limit=1,task=x"},
    ]))  # fmt: skip
    assert [r["rc"] for r in results] == [0, 0, 0, 0, 0]
    assert results[0]["pn_min_memory"] == shared
    assert results[0]["comment"].endswith(f",mem={shared}")  # the time tag gets the memory
    assert "no memory asked; --mem=" in _log(results[0])
    assert results[1]["pn_min_memory"] > 2000  # alice's own jobs
    assert results[2]["pn_min_memory"] == shared and results[2]["time_limit"] == 10
    assert results[2]["comment"] == f"mine advisor:lua,action=none,limit=0,task=align,mem={shared}"
    assert results[3]["pn_min_memory"] == -1 and results[3]["comment"] == ""
    # a tag the comment brought is not the plugin's: its memory goes into a tag of its own
    assert not results[4]["comment"].startswith("advisor:lua,action=set,limit=1,task=x,mem=")


def test_a_request_of_the_user_stands_unless_the_site_lowers(lua: str, tmp_path: Path) -> None:
    for mode, lowered in (("fill", False), ("lower", True)):
        text, memory = _export(tmp_path, mode)
        shared = memory["tasks"]["align"]["mem_mb"]
        results = run_cases(lua, tmp_path, _cases(text, [
            {"name": "align", "time_limit": 10, "pn_min_memory": 8000},
            {"name": "align", "time_limit": 10, "pn_min_memory": 500},
            {"name": "align", "time_limit": 10, "pn_min_memory": MEM_PER_CPU + 2000},
            {"name": "align", "time_limit": 10, "mem_per_tres": "gres/gpu:2048"},
        ]))  # fmt: skip
        assert results[0]["pn_min_memory"] == (shared if lowered else 8000), mode
        assert results[1]["pn_min_memory"] == 500  # never raised
        assert results[2]["pn_min_memory"] == pytest.approx(MEM_PER_CPU)  # per CPU: its own
        assert results[3]["pn_min_memory"] == -1
        assert ("lowered to" in _log(results[0])) == lowered


def test_advise_mode_only_tells(lua: str, tmp_path: Path) -> None:
    text, memory = _export(tmp_path, "advise")
    (result,) = run_cases(lua, tmp_path, _cases(text, [{"name": "align"}]))
    assert result["pn_min_memory"] == -1 and result["comment"].count("mem=") == 0
    shared = memory["tasks"]["align"]["mem_mb"]
    assert f"would set --mem={shared}M for 'align' (the site advises only)" in _log(result)


def test_never_above_what_a_partition_allows(lua: str, tmp_path: Path) -> None:
    text, _ = _export(tmp_path, "fill")
    results = run_cases(lua, tmp_path, _cases(text, [
        {"name": "align", "partition": "fat"},  # ~1 GB fits under 1500 MB
        {"name": "align", "partition": "fat", "user_name": "alice"},  # ~2 GB does not
        {"name": "align", "partition": "cpu,fat", "user_name": "alice"},  # nor in both
        {"name": "align", "partition": "gpu"},  # a partition the export does not know
    ]))  # fmt: skip
    assert results[0]["pn_min_memory"] > 0
    assert [r["pn_min_memory"] for r in results[1:]] == [-1, -1, -1]


def test_the_kill_budget_multiplies_the_value(lua: str, tmp_path: Path) -> None:
    _, memory = _export(tmp_path, "fill")
    raised, _ = _export(tmp_path, "lower", factor_log=0.5)
    base = memory["tasks"]["align"]["mem_mb"]
    (result,) = run_cases(lua, tmp_path, _cases(raised, [{"name": "align"}]))
    assert result["pn_min_memory"] == math.ceil(base * round(math.exp(0.5), 6))


@pytest.mark.parametrize(
    "broken",
    ['{"mode": "fill"}', '{"mode": "fill", "tasks": {"align": {"mem_mb": "x"}}, "partitions": {}}'],
)
def test_a_broken_memory_section_passes_the_job(lua: str, tmp_path: Path, broken: str) -> None:
    text, _ = _export(tmp_path, "fill")
    document = json.loads(text)
    document["memory"] = json.loads(broken)
    (result,) = run_cases(lua, tmp_path, _cases(json.dumps(document), [{"name": "align"}]))
    assert result["rc"] == 0 and result["pn_min_memory"] == -1
