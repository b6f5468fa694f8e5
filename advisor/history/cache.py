"""The history policy's state in the cache: one row per key, one row for the site budget.

Reads are what the sbatch wrapper does at submit time (a few primary-key lookups, standard
library only); writes happen inside accounting ingestion's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from advisor.history.keys import HistoryKey
from advisor.history.policy import KeyState, SiteBudget, shared_run
from advisor.store.clock import utc_now
from advisor.store.connection import Store


def load_key_states(store: Store, keys: Iterable[HistoryKey]) -> dict[HistoryKey, KeyState]:
    """The stored states of these keys (keys never seen are absent), in one query."""
    wanted = {key: key for key in keys}
    rows = store.conn.execute(
        "SELECT kind, user, name, partition, runs, cap, completed, kills FROM history_keys "
        "WHERE (kind, user, name, partition) IN (SELECT json_extract(value, '$[0]'), "
        "json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]') "
        "FROM json_each(?))",
        (json.dumps(list(wanted)),),
    )
    return {wanted[HistoryKey(*row[:4])]: _state(row[4:]) for row in rows}


def data_version(store: Store) -> int:
    """A number that changes when another connection commits to the cache.

    ``PRAGMA data_version``: what this connection read stays true while it does not change.
    """
    return int(store.conn.execute("PRAGMA data_version").fetchone()[0])


def _state(row: tuple[str, float, int, int]) -> KeyState:
    runs = tuple(
        shared_run(float(runtime), bool(censored)) for runtime, censored in json.loads(row[0])
    )
    return KeyState(runs, float(row[1]), int(row[2]), int(row[3]))


#: Each run's JSON, as json.dumps writes it in a list of runs: a site's runtimes repeat, and a
#: key's window is saved again after every batch that adds one run to it.  Runs hold a float
#: and a bool (KeyState.learned, _state), so equal runs have one text.
_RUN_TEXT: dict[tuple[float, bool], str] = {}
_RUN_TEXT_SIZE = 65536


def runs_json(runs: Sequence[tuple[float, bool]]) -> str:
    """``json.dumps([[runtime, int(censored)], ...])``, from each run's text."""
    try:
        return "[" + ", ".join(map(_RUN_TEXT.__getitem__, runs)) + "]"
    except KeyError:
        if len(_RUN_TEXT) > _RUN_TEXT_SIZE:
            _RUN_TEXT.clear()
        for run in runs:
            if run not in _RUN_TEXT:
                _RUN_TEXT[run] = json.dumps([run[0], int(run[1])])
        return "[" + ", ".join(map(_RUN_TEXT.__getitem__, runs)) + "]"


def save_key_states(store: Store, states: Mapping[HistoryKey, KeyState]) -> None:
    """Upsert states (joins the caller's transaction)."""
    now = utc_now()
    rows = [
        (
            *key,
            runs_json(state.runs),
            state.cap,
            state.completed,
            state.kills,
            now,
        )
        for key, state in states.items()
    ]
    with store.write():
        store.conn.executemany(
            "INSERT INTO history_keys (kind, user, name, partition, runs, cap, completed, kills, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (kind, user, name, partition) DO UPDATE SET runs = excluded.runs, "
            "cap = excluded.cap, completed = excluded.completed, kills = excluded.kills, "
            "updated_at = excluded.updated_at",
            rows,
        )


def load_site(store: Store) -> SiteBudget:
    """The site-wide kill budget (the initial one before any job was learned)."""
    row = store.conn.execute(
        "SELECT kill_rate, widen, jobs FROM history_site WHERE id = 1"
    ).fetchone()
    return SiteBudget() if row is None else SiteBudget(float(row[0]), float(row[1]), int(row[2]))


def save_site(store: Store, site: SiteBudget) -> None:
    """Store the site budget (joins the caller's transaction)."""
    with store.write():
        store.conn.execute(
            "INSERT INTO history_site (id, kill_rate, widen, jobs, updated_at) VALUES (1, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET kill_rate = excluded.kill_rate, "
            "widen = excluded.widen, jobs = excluded.jobs, updated_at = excluded.updated_at",
            (site.kill_rate, site.widen, site.jobs, utc_now()),
        )


#: Advice rows that match a key, by kind: the wrapper records the job name in ``task``.
_MATCH = {
    "user+name": "a.user = ? AND a.task = ?",
    "user+partition": "a.user = ? AND a.partition = ?",
    "user": "a.user = ?",
}


def advised_in_flight(store: Store, key: HistoryKey, *, since: str) -> int:
    """Jobs of the key submitted with a history limit since ``since`` that have not finished.

    A job counts until accounting ingests it; ``since`` (an ISO time, e.g. MaxTime ago) keeps
    a lost job from holding a key's budget forever.
    """
    params: tuple[str, ...] = {
        "user+name": (key.user, key.name),
        "user+partition": (key.user, key.partition),
        "user": (key.user,),
    }[key.kind]
    row = store.conn.execute(
        f"""SELECT COUNT(*) FROM advice AS a
             WHERE {_MATCH[key.kind]} AND a.created_at >= ? AND a.policy = 'history'
               AND a.outcome = 'submitted' AND a.job_id IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM accounting_jobs AS j
                                WHERE j.job_id_raw = a.job_id
                                  AND (a.cluster IS NULL OR j.cluster = a.cluster))""",  # noqa: S608 - constant fragments
        (*params, since),
    ).fetchone()
    return int(row[0])


def prune_keys(store: Store, *, before: str, names_per_user: int) -> int:
    """Delete stale keys, and each user's job-name keys past the newest names_per_user; how many.

    Stale: not updated since before.  Past the newest: the least recently updated go first.
    Joins the caller's transaction.  Every distinct job name makes a key: a user who puts a
    sample id in each name makes a million of them without trying, and nothing else ever
    removes one.
    """
    with store.write():
        stale = store.conn.execute("DELETE FROM history_keys WHERE updated_at < ?", (before,))
        crowded = [
            str(row[0])
            for row in store.conn.execute(
                "SELECT user FROM history_keys WHERE kind = 'user+name' GROUP BY user "
                "HAVING COUNT(*) > ?",
                (names_per_user,),
            )
        ]
        surplus = 0
        for user in crowded:
            surplus += store.conn.execute(
                "DELETE FROM history_keys WHERE rowid IN (SELECT rowid FROM history_keys "
                "WHERE kind = 'user+name' AND user = ? "
                "ORDER BY updated_at DESC, completed + kills DESC, name LIMIT -1 OFFSET ?)",
                (user, names_per_user),
            ).rowcount
    return int(stale.rowcount) + surplus


def top_name_states(
    store: Store,
    *,
    per_user: int,
    max_name_bytes: int,
    min_runs: int,
    skip: Iterable[str] = (),
) -> tuple[dict[HistoryKey, KeyState], int, int]:
    """The key states the export can use, and how many name keys it cannot.

    Each user's per_user most used job-name keys that can propose a limit (by jobs learned,
    then name) and every other kind of key; and how many name keys that could propose were
    left out past per_user, and over max_name_bytes.  Chosen in SQL: loading every key took
    28 s and 983 MB at a million keys of one user.  A key proposes with min_runs completed
    runs in its window (policy.propose); names in skip (tasks a model decides) are never chosen.
    """
    proposes = (
        "kind = 'user+name' AND completed >= :runs AND name NOT IN (SELECT value FROM "
        "json_each(:skip)) AND (SELECT COUNT(*) FROM json_each(runs) "
        "WHERE json_extract(value, '$[1]') = 0) >= :runs"
    )
    fits = "LENGTH(CAST(name AS BLOB)) <= :bytes"
    params = {"runs": min_runs, "skip": json.dumps(sorted(set(skip))), "bytes": max_name_bytes,
              "per_user": per_user}  # fmt: skip
    chosen_keys = (
        "SELECT kind, user, name, partition, runs, cap, completed, kills FROM ("  # noqa: S608 - constant fragments
        "SELECT *, ROW_NUMBER() OVER (PARTITION BY user ORDER BY completed + kills DESC, name, "
        f"partition) AS rank FROM history_keys WHERE {proposes} AND {fits}) "
        "WHERE rank <= :per_user UNION ALL SELECT kind, user, name, partition, runs, cap, "
        "completed, kills FROM history_keys WHERE kind != 'user+name' ORDER BY 1, 2, 3, 4"
    )
    rows = store.conn.execute(chosen_keys, params)
    found = {HistoryKey(*row[:4]): _state(row[4:]) for row in rows}
    usable, unusable = store.conn.execute(
        f"SELECT COALESCE(SUM({fits}), 0), COALESCE(SUM(NOT ({fits})), 0) FROM history_keys "  # noqa: S608 - constant fragments
        f"WHERE {proposes}",
        params,
    ).fetchone()
    chosen = sum(1 for key in found if key.kind == "user+name")
    return found, int(usable) - chosen, int(unusable)
