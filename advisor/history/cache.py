"""The history policy's state in the cache: key states, score cells, kill budgets.

One row per key (history_keys), per score cell (history_cells, with the cell's margins per level
worked out when it is written, so that a submission reads a dozen numbers, not its scores) and
per partition (history_budget).  Reads are what the sbatch wrapper does at submit time (a few
primary-key lookups, standard library only); writes happen inside accounting ingestion's
transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from advisor.history.budget import KillBudget
from advisor.history.cells import ScoreCell
from advisor.history.keys import HistoryKey
from advisor.history.policy import KeyState, shared_run
from advisor.lite import NamedTuple
from advisor.store.clock import utc_now
from advisor.store.connection import Store

Cell = tuple[str, str]


def load_key_states(store: Store, keys: Iterable[HistoryKey]) -> dict[HistoryKey, KeyState]:
    """The stored states of these keys (keys never seen are absent), in one query."""
    wanted = {key: key for key in keys}
    rows = store.conn.execute(
        "SELECT kind, user, name, partition, runs, completed, kills FROM history_keys "
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


def _state(row: tuple[str, int, int]) -> KeyState:
    runs = tuple(
        shared_run(float(runtime), bool(censored)) for runtime, censored in json.loads(row[0])
    )
    return KeyState(runs, int(row[1]), int(row[2]))


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
        (*key, runs_json(state.runs), state.completed, state.kills, now)
        for key, state in states.items()
    ]
    with store.write():
        store.conn.executemany(
            "INSERT INTO history_keys (kind, user, name, partition, runs, completed, kills, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (kind, user, name, partition) DO UPDATE SET runs = excluded.runs, "
            "completed = excluded.completed, kills = excluded.kills, "
            "updated_at = excluded.updated_at",
            rows,
        )


_BUDGET_COLUMNS = "budget, log_price, credit, completed, killed, advised_completed"


def _budget(row: Sequence[float]) -> KillBudget:
    budget, log_price, credit, completed, killed, advised = row
    return KillBudget(
        budget=float(budget),
        log_price=float(log_price),
        credit=float(credit),
        completed=int(completed),
        killed=int(killed),
        advised_completed=int(advised),
    )


def load_budget(store: Store, partition: str) -> KillBudget | None:
    """A partition's kill budget ('' for jobs without one); None before any of its jobs ended."""
    row = store.conn.execute(
        f"SELECT {_BUDGET_COLUMNS} FROM history_budget WHERE partition = ?",  # noqa: S608 - constant
        (partition,),
    ).fetchone()
    return None if row is None else _budget(row)


def load_budgets(store: Store) -> dict[str, KillBudget]:
    """Every partition's kill budget, by partition."""
    rows = store.conn.execute(
        f"SELECT partition, {_BUDGET_COLUMNS} FROM history_budget ORDER BY partition"  # noqa: S608 - constant
    )
    return {str(row[0]): _budget(row[1:]) for row in rows}


def save_budgets(store: Store, budgets: Mapping[str, KillBudget]) -> None:
    """Upsert kill budgets (joins the caller's transaction)."""
    now = utc_now()
    with store.write():
        store.conn.executemany(
            f"INSERT INTO history_budget (partition, {_BUDGET_COLUMNS}, updated_at) "  # noqa: S608 - constant
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (partition) DO UPDATE SET "
            "budget = excluded.budget, log_price = excluded.log_price, "
            "credit = excluded.credit, completed = excluded.completed, "
            "killed = excluded.killed, advised_completed = excluded.advised_completed, "
            "updated_at = excluded.updated_at",
            [(partition, *budget, now) for partition, budget in budgets.items()],
        )


def load_cells(store: Store, cells: Iterable[Cell]) -> dict[Cell, ScoreCell]:
    """These cells' scores (cells without any are absent), in one query."""
    rows = store.conn.execute(
        "SELECT partition, cell, scores FROM history_cells WHERE (partition, cell) IN "
        "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))",
        (json.dumps(list(set(cells))),),
    )
    return {(str(p), str(c)): ScoreCell.of(json.loads(scores)) for p, c, scores in rows}


def load_quantiles(store: Store, cell: Cell) -> tuple[float, ...] | None:
    """A cell's margins per level (advisor.history.cells.LEVELS; inf: none), or None."""
    row = store.conn.execute(
        "SELECT quantiles FROM history_cells WHERE partition = ? AND cell = ?", cell
    ).fetchone()
    if row is None:
        return None
    return tuple(float("inf") if q is None else float(q) for q in json.loads(row[0]))


def save_cells(store: Store, cells: Mapping[Cell, ScoreCell]) -> None:
    """Upsert cells with their margins (joins the caller's transaction)."""
    now = utc_now()
    rows = []
    for (partition, cell), found in cells.items():
        quantiles = [q if q != float("inf") else None for q in found.quantiles()]
        rows.append((partition, cell, json.dumps(list(found.scores)), json.dumps(quantiles), now))
    with store.write():
        store.conn.executemany(
            "INSERT INTO history_cells (partition, cell, scores, quantiles, updated_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (partition, cell) DO UPDATE SET "
            "scores = excluded.scores, quantiles = excluded.quantiles, "
            "updated_at = excluded.updated_at",
            rows,
        )


class Running(NamedTuple):
    """One job running under a history limit the advisor recorded."""

    #: The job's name as the advice row has it (its task key; a digest in a published copy).
    task: str | None
    partition: str | None
    #: The user's own --time.
    request_s: int | None
    #: The estimated probability that it runs past its limit (None: recorded before 7).
    risk: float | None
    #: The jobs it made: a job array's tasks (until its last one is ingested, all count).
    tasks: int = 1


#: The jobs an advice row ``a`` counts for in a partition's reserved risk: a job array's tasks,
#: but one for a spool line, whose claim of tasks is its user's own text.
COUNTED_TASKS = "(CASE WHEN a.origin = 'direct' THEN COALESCE(a.tasks, 1) ELSE 1 END)"

#: History advice rows of jobs accounting has not ingested yet (their job may still run).
_RUNNING = """FROM advice AS a
     WHERE {where} AND a.created_at >= ? AND a.policy = 'history'
       AND a.outcome = 'submitted' AND a.job_id IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM accounting_jobs AS j
                        WHERE j.job_id_raw = a.job_id
                          AND (a.cluster IS NULL OR j.cluster = a.cluster))"""


def running_advised(store: Store, user: str, *, since: str) -> list[Running]:
    """The user's jobs submitted with a history limit since ``since`` that have not finished.

    A job counts until accounting ingests it; ``since`` (an ISO time, e.g. MaxTime ago) keeps
    a lost job from holding a key's place forever.
    """
    rows = store.conn.execute(
        "SELECT a.task, a.partition, a.request_s, 1 - a.quantile, COALESCE(a.tasks, 1) "
        + _RUNNING.format(where="a.user = ?"),
        (user, since),
    )
    return [Running(*row) for row in rows]


def reserved_risk(store: Store, partition: str, *, since: str, unknown: float) -> float:
    """The summed risk of the partition's jobs running under a history limit.

    A job advised for several partitions (``-p a,b``) counts in each, a job array once per task
    (a spool line's claim of tasks only in its user's own count, running_advised, so that no
    user's line can raise everyone's price).  unknown: the risk of an
    advice row that recorded none (the budget: the risk the policy takes on average).  A
    published copy holds only its user's own advice: there the sum over every user's jobs at
    publish time (services/publish.py) stands for it.
    """
    if store.published:
        found = store.conn.execute(
            "SELECT value FROM main.publication WHERE key = 'reserved_risk'"
        ).fetchone()
        known, unrecorded = json.loads(found[0]).get(partition, (0.0, 0.0)) if found else (0, 0)
        return float(known) + unknown * float(unrecorded)
    row = store.conn.execute(
        f"SELECT COALESCE(SUM(COALESCE(1 - a.quantile, ?) * {COUNTED_TASKS}), 0) "
        + _RUNNING.format(where="instr(',' || a.partition || ',', ',' || ? || ',') > 0"),
        (unknown, partition, since),
    ).fetchone()
    return float(row[0])


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
        "SELECT kind, user, name, partition, runs, completed, kills FROM ("  # noqa: S608 - constant fragments
        "SELECT *, ROW_NUMBER() OVER (PARTITION BY user ORDER BY completed + kills DESC, name, "
        f"partition) AS rank FROM history_keys WHERE {proposes} AND {fits}) "
        "WHERE rank <= :per_user UNION ALL SELECT kind, user, name, partition, runs, "
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
