"""What ``advisor export`` writes for slurmctld is bounded and names no user's jobs (issue 16,
findings 6 and 7).

The timing of the attack (cjson.decode of many long job names that Lua 5.1 hashes alike, and
the plugin's cost for a 4 MiB name) is measured in benchmarks/bench_plugin.py; these tests pin
the bounds that make it harmless.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.advice.snapshot import load_snapshot
from advisor.errors import AdvisorError, InputError
from advisor.history.cache import save_key_states
from advisor.history.keys import HistoryKey
from advisor.history.policy import KeyState
from advisor.services.export import NAME_BYTES, USER_NAMES, export_document, export_from_cache
from advisor.services.publish import publish_copies
from advisor.slurm.records import Node, Partition
from advisor.store.cluster import save_cluster
from advisor.store.connection import Store
from advisor.store.names import name_key
from advisor.validate import validate
from tests.helpers.jobs import earned


def colliding(number: int, length: int = 1000) -> str:
    """A job name Lua 5.1 hashes like every other of this length: it hashes one byte in 32
    (from the end), and these names differ only in bytes it skips, near their end."""
    return "a" * (length - 10) + f"{number:08d}" + "aa"


def lua51_hash(text: bytes) -> int:
    """luaS_newlstr's hash (Lua 5.1 lstring.c)."""
    h, step = len(text), (len(text) >> 5) + 1
    for l1 in range(len(text), step - 1, -step):
        h = (h ^ ((h << 5) + (h >> 2) + text[l1 - 1])) & 0xFFFFFFFF
    return h


def _cache(path: Path, names: dict[str, int]) -> Path:
    """A cache where mallory has a history key per name (value: how many jobs it learned)."""
    with Store.open(path) as store:
        save_cluster(store, [Partition("cpu", ("c1",), 86400, 1800, True, "UP")],
                     [Node("c1", 2, 4000, (), ("cpu",), "IDLE")])  # fmt: skip
        save_key_states(store, {
            HistoryKey("user+name", "mallory", name, ""): KeyState(((600.0, False),) * 10, jobs, 0)
            for name, jobs in names.items()
        })  # fmt: skip
        earned(store, "cpu")
    return path


def test_many_long_colliding_names_give_a_small_export_of_the_most_used(tmp_path: Path) -> None:
    names = {colliding(i): 5 + i % 997 for i in range(20_000)}
    assert len({lua51_hash(n.encode()) for n in list(names)[:500]}) == 1  # the attack's names
    names["x" * (NAME_BYTES + 1)] = 10**6  # no job can have it, however used
    cache = _cache(tmp_path / "cache.db", names)
    with Store.open(cache, readonly=True) as store:
        doc = export_from_cache(store, quantile=0.95, margin=0.1, generated_at="now")
    validate(doc, "export", source="export")
    mine = doc["users"]["mallory"]["tasks"]
    assert len(mine) == USER_NAMES
    assert doc["dropped"] == {"unusable_names": 1, "over_cap": 20_000 - USER_NAMES}
    kept = sorted(names, key=lambda n: (-names[n], n))[1 : USER_NAMES + 1]  # most used usable
    assert set(mine) == {name_key("mallory", n, b"") for n in kept}
    text = json.dumps(doc)
    assert "aaaaaaaaaa" not in text and len(text) < 200_000
    assert len({lua51_hash(key.encode()) for key in mine}) > 0.99 * USER_NAMES  # no collisions


def test_fewer_names_per_user_until_the_file_fits_its_bound(tmp_path: Path) -> None:
    cache = _cache(tmp_path / "cache.db", {f"job-{i}": 5 for i in range(300)})
    with Store.open(cache, readonly=True) as store:
        whole = export_from_cache(store, quantile=0.95, margin=0.1, generated_at="now")
        snapshot = load_snapshot(store, None)
    from advisor.services.export import UserLimits

    users = {"mallory": UserLimits({f"job-{i}": {"cpu": 70} for i in range(300)}, {})}
    size = len(json.dumps(whole, sort_keys=True))
    bounded = export_document(snapshot, quantile=0.95, margin=0.1, generated_at="now",
                              users=users, max_bytes=size // 3)  # fmt: skip
    assert len(json.dumps(bounded, sort_keys=True)) <= size // 3
    kept = len(bounded["users"]["mallory"]["tasks"])
    assert 0 < kept < 300 and kept in (USER_NAMES >> k for k in range(10))
    assert bounded["dropped"]["over_cap"] == 300 - kept
    with pytest.raises(AdvisorError, match="even without per-user job names"):
        export_document(snapshot, quantile=0.95, margin=0.1, generated_at="now", users=users,
                        max_bytes=100)  # fmt: skip


def test_a_published_copy_is_not_exported(tmp_path: Path) -> None:
    cache = _cache(tmp_path / "cache.db", {"sim": 5})
    copy = tmp_path / "copies"
    copy.mkdir()
    with Store.open(cache, readonly=True) as store:
        publish_copies(store, copy)
    with (
        Store.open(copy, readonly=True) as store,
        pytest.raises(InputError, match="published copy"),
    ):
        export_from_cache(store, quantile=0.95, margin=0.1, generated_at="now")
