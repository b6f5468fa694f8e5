"""Storing finished jobs and everything they teach, inside the caller's write transaction.

Per batch, in order of their end: the records (a job already stored is skipped, so
re-ingesting changes nothing), their observations, the task models (COMPLETED runs update
them online, TIMEOUTs through the censored update), the history policy's key states and
site budget, and the peaks' memory keys (advisor.models.memory_book).  The caller commits the batch together with its watermark.

What a job contributes that does not depend on the cache (its rows, its tag, its task, its
history name) is worked out first, record by record (``finished``), possibly in another
process; storing a batch then costs one query to find what is stored already, one statement
per table, and the history states of the batch's keys (kept from batch to batch while no
other connection writes the cache).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, NamedTuple

from advisor.accounting.censored import update_censored
from advisor.accounting.mapping import (
    AdviceClaim,
    MemoryClaim,
    advice_claim,
    history_name,
    job_tag,
    memory_claim,
    observation_row,
    recorded_advice,
    was_advised,
)
from advisor.accounting.windows import HeldBack, WindowDone
from advisor.history.book import HistoryBook
from advisor.history.cache import (
    data_version,
    load_budgets,
    load_cells,
    load_key_states,
    save_budgets,
    save_cells,
    save_key_states,
)
from advisor.history.cells import key_cell, request_cell
from advisor.history.keys import KINDS, HistoryKey, keys_for
from advisor.history.policy import DEFAULT_CONFIG, PolicyConfig
from advisor.models.memory_book import learn_online
from advisor.models.memory_budget import learn_budgets
from advisor.models.online import OnlineUpdates
from advisor.models.task_model import Reference
from advisor.slurm.records import JobRecord
from advisor.store.accounting import JOB_COLUMNS, add_job_rows, job_row, stored_job_ids
from advisor.store.advice import applied_limits, applied_memory
from advisor.store.clock import utc_now
from advisor.store.connection import Store
from advisor.store.observations import Observation, add_observation_rows
from advisor.store.task_models import load_task_models, node_classes


class Finished(NamedTuple):
    """A finished job made ready to store: everything that depends on its record alone.

    Plain values only, so that batches of them travel between processes cheaply.
    """

    cluster: str
    job_id: str
    #: The order jobs are learned in: end (ISO text sorts as the times do), raw id, id.
    order: tuple[str, int, str]
    row: tuple[Any, ...]  # store.accounting.job_row
    observation: tuple[Any, ...]  # store.observations.observation_values
    user: str
    name: str  # the name the history policy's keys know the job by
    partition: str
    runtime_s: float
    state: str
    timelimit_s: int | None
    advised: bool  # it ran under a limit the advisor set, as its tag says
    #: What the advisor's record of setting that limit must match (mapping.advice_claim), or
    #: None (not advised, or no record can be the job's).
    claim: AdviceClaim | None
    #: The same of the --mem the advisor set (mapping.memory_claim), or None.
    memory_claim: MemoryClaim | None = None


def finished(job: JobRecord, classes: Mapping[str, str], now: str) -> Finished:
    """The job ready to store.

    classes: the cache's node classes (store.task_models.node_classes); now: utc_now(), when
    the job is stored.
    """
    tag, name, row = job_tag(job), history_name(job), job_row(job, now)
    advised = was_advised(job, tag)
    return Finished(
        job.cluster,
        job.job_id,
        (row[_END] or "", job.job_id_raw, job.job_id),
        row,
        observation_row(job, classes, tag, name, row[_END]),
        job.user,
        name,
        job.partition,
        float(job.elapsed_s),
        job.state,
        job.timelimit_s,
        advised,
        advice_claim(job, tag) if advised else None,
        memory_claim(job, tag),
    )


@dataclass
class IngestStats:
    """What ingestion did so far."""

    stored: int = 0
    already: int = 0
    model_updates: int = 0
    censored_updates: int = 0
    memory_updates: int = 0
    memory_budget_updates: int = 0
    states: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        """For the command's JSON output."""
        return {
            "stored": self.stored,
            "already_stored": self.already,
            "model_updates": self.model_updates,
            "censored_updates": self.censored_updates,
            "memory_updates": self.memory_updates,
            "states": dict(sorted(self.states.items())),
        }


@dataclass(frozen=True)
class Ingested:
    """What an ingestion read, skipped, stored and learned (the update's result, less the spool)."""

    source: str  # 'sacct', 'sacct-file' or 'swf'
    path: str | None  # the file ingested (None for sacct)
    cluster: str | None  # a dump's default cluster (None otherwise)
    records: int  # allocation rows read
    windows: tuple[WindowDone, ...]  # one per sacct query (none for files)
    watermark: str | None
    held_back_by: HeldBack | None
    skipped: Mapping[str, int]  # rows not ingested, by reason (sorted)
    warnings: tuple[str, ...]  # the first rows skipped because they are wrong
    stored: int
    already_stored: int
    model_updates: int
    censored_updates: int
    memory_updates: int  # peaks learned into users' memory keys
    states: Mapping[str, int]  # new jobs by final state (sorted)

    def to_json(self) -> dict[str, Any]:
        """As in schemas/update-output.json (without its spool), keys in this order."""
        return {
            "source": self.source,
            "path": self.path,
            "cluster": self.cluster,
            "records": self.records,
            "windows": [window.to_json() for window in self.windows],
            "watermark": self.watermark,
            "held_back_by": self.held_back_by.to_json() if self.held_back_by else None,
            "skipped": dict(self.skipped),
            "warnings": list(self.warnings),
            "stored": self.stored,
            "already_stored": self.already_stored,
            "model_updates": self.model_updates,
            "censored_updates": self.censored_updates,
            "memory_updates": self.memory_updates,
            "states": dict(self.states),
        }


def skip_counts(skipped: Mapping[str, int]) -> dict[str, int]:
    """Skipped rows by reason as results give them: sorted, without zeros."""
    return {reason: count for reason, count in sorted(skipped.items()) if count}


def modelled_tasks(store: Store) -> dict[str, int]:
    """Tasks with a fitted model, and the input size the wrapper assumes without --advisor-input.

    Only these tasks' runs can update a model online.  A job whose tag records no input size
    teaches the model at that assumed size (the largest training input, the size its limit
    was predicted for); the stored observation keeps the size unknown.
    """
    found = {}
    for row in load_task_models(store):
        if row.method == "lotaru" and row.node_class == "*":
            reference = Reference.from_params(row.params)
            if reference is not None:
                found[row.task] = int(reference.x_max_bytes)
    return found


#: History key states kept from one batch to the next, at most (then the book starts afresh).
MAX_KEPT_STATES = 20_000


class Ingestor:
    """Adds batches of final records to the cache (call ``add`` inside ``store.write()``)."""

    def __init__(
        self, store: Store, *, config: PolicyConfig = DEFAULT_CONFIG, restate: bool = False
    ) -> None:
        """restate: set every partition's kill budget to config's (``update --kill-budget``)."""
        self.store = store
        self.config = config
        self.restate = restate
        self.classes = node_classes(store)
        self.modelled = modelled_tasks(store)
        self.stats = IngestStats()
        self._book: HistoryBook | None = None
        self._loaded: set[HistoryKey] = set()  # keys whose stored state the book holds
        self._cells: set[tuple[str, str]] = set()  # cells whose stored scores the book holds
        self._version = -1
        #: The online updates of the last batch, kept while what they read is what the cache
        #: holds (as the book: no other connection committed, the last batch was committed).
        self._models: OnlineUpdates | None = None
        self._kept = False

    def _book_for(self, jobs: Sequence[Finished]) -> HistoryBook:
        """The policy's book holding the stored states of these jobs' keys.

        What earlier batches read and learned is kept while it is what the cache holds: no
        other connection committed since (PRAGMA data_version), and the last batch was
        committed (the stored kill budgets are the book's).
        """
        version, budgets = data_version(self.store), load_budgets(self.store)
        book = self._book
        self._kept = book is not None and version == self._version and book.budgets == budgets
        if (
            book is None
            or version != self._version
            or book.budgets != budgets
            or len(self._loaded) > MAX_KEPT_STATES
        ):
            book = self._book = HistoryBook(
                budgets=budgets, config=self.config, restate=self.restate
            )
            self._loaded = set()
            self._cells = set()
        self._version = version
        keys = {key for job in jobs for key in keys_for(job.user, job.name, job.partition)}
        keys -= self._loaded
        book.states.update(load_key_states(self.store, keys))
        self._loaded |= keys
        cells = {key_cell(job.partition, kind) for job in jobs for kind in KINDS} | {
            request_cell(job.partition, job.timelimit_s) for job in jobs if job.timelimit_s
        }
        cells -= self._cells
        book.cells.update(load_cells(self.store, cells))
        self._cells |= cells
        return book

    def _new(self, jobs: Sequence[Finished]) -> list[Finished]:
        by_cluster: dict[str, list[str]] = {}
        for job in jobs:
            by_cluster.setdefault(job.cluster, []).append(job.job_id)
        known = {
            (cluster, job_id)
            for cluster, ids in by_cluster.items()
            for job_id in stored_job_ids(self.store, cluster, ids)
        }
        unique = {
            (job.cluster, job.job_id): job for job in jobs if (job.cluster, job.job_id) not in known
        }
        self.stats.already += len(jobs) - len(unique)
        return sorted(unique.values(), key=_ORDER)

    def add(self, jobs: Iterable[JobRecord]) -> int:
        """Store the records not stored yet and learn from them; how many were new."""
        now = utc_now()
        return self.add_finished([finished(job, self.classes, now) for job in jobs])

    def add_finished(self, jobs: Sequence[Finished]) -> int:
        """``add`` for jobs made ready by ``finished`` (with this cache's node classes)."""
        new = self._new(jobs)
        if not new:
            return 0
        book = self._book_for(new)
        claims = [job.claim[0] for job in new if job.claim is not None]
        applied = applied_limits(self.store, claims) if claims else {}
        book.learn_finished(
            (
                job.user,
                job.name,
                job.partition,
                job.runtime_s,
                job.state,
                job.advised,
                recorded_advice(job.user, job.cluster, job.claim, applied),
                job.timelimit_s,
            )
            for job in new
        )
        self.stats.states.update(job.state for job in new)
        add_job_rows(self.store, [job.row for job in new])
        add_observation_rows(self.store, [job.observation for job in new])
        modelled = [job for job in new if job.observation[_TASK] in self.modelled]
        if modelled:
            models = self._online_updates()
            for job in modelled:
                self._learn_model(models, job)
            models.flush()
        self._learn_memory(new)
        self._learn_memory_budgets(new)
        states = book.states
        save_key_states(self.store, {key: states[key] for key in book.changed})
        save_cells(self.store, {cell: book.cells[cell] for cell in book.changed_cells})
        save_budgets(self.store, {part: book.budgets[part] for part in book.changed_budgets})
        book.changed.clear()
        book.changed_cells.clear()
        book.changed_budgets.clear()
        self.stats.stored += len(new)
        return len(new)

    def _learn_memory(self, jobs: Sequence[Finished]) -> None:
        """The peaks of these jobs into their users' memory keys, and their residuals."""
        measured = [
            Observation(*job.observation)
            for job in jobs
            if job.observation[_PEAK] is not None  # the usual case without: decided here
        ]
        if measured:
            self.stats.memory_updates += learn_online(self.store, measured)

    def _learn_memory_budgets(self, jobs: Sequence[Finished]) -> None:
        """The OOM kill budgets of the jobs that ran under a --mem the advisor recorded setting.

        As for time limits, a tag alone proves nothing (anyone can write one): only an advice
        row of the job's own user with that --mem counts (advisor.models.memory_budget).
        """
        claimed = [job for job in jobs if job.memory_claim is not None]
        if not claimed:
            return
        recorded = applied_memory(
            self.store, [job.memory_claim[0] for job in claimed if job.memory_claim]
        )
        outcomes = [
            (job.partition, job.state == "OUT_OF_MEMORY")
            for job in claimed
            if job.memory_claim is not None and any(
                row.user == job.user and row.mem_mb == job.memory_claim[1]
                and (row.cluster is None or row.cluster == job.cluster)
                for row in recorded.get(job.memory_claim[0], ())
            )
        ]  # fmt: skip
        if outcomes:
            self.stats.memory_budget_updates += learn_budgets(
                self.store, outcomes, budget=self.config.budget, restate=self.restate
            )

    def _online_updates(self) -> OnlineUpdates:
        """The last batch's online updates while they hold what the cache holds, else new ones."""
        models = self._models
        if models is None or not self._kept or models.held() > MAX_KEPT_MODELS:
            models = self._models = OnlineUpdates(self.store)
        return models

    def _learn_model(self, models: OnlineUpdates, job: Finished) -> None:
        values = job.observation
        if values[_INPUT] is None:  # the size the wrapper assumed (modelled_tasks)
            values = (*values[:_INPUT], self.modelled[values[_TASK]], *values[_INPUT + 1 :])
        observation = Observation(*values)
        if observation.state == "COMPLETED":
            if models.update(observation) is not None:
                self.stats.model_updates += 1
        elif observation.censored:
            models.flush()  # the censored update reads the models from the cache, and writes them
            models.forget()
            if update_censored(self.store, observation) is not None:
                self.stats.censored_updates += 1


_ORDER = attrgetter("order")
#: Where the end is in a job_row (its ISO text).
_END = JOB_COLUMNS.index("end")
#: Where the task and the input size are in an observation's values.
_TASK = tuple(Observation.__dataclass_fields__).index("task")
_INPUT = tuple(Observation.__dataclass_fields__).index("input_bytes")
_PEAK = tuple(Observation.__dataclass_fields__).index("peak_mem_mb")
#: Records the online updates keep from one batch to the next, at most.
MAX_KEPT_MODELS = 20_000


def ingestor_for(store: Store, kill_budget: float | None) -> Ingestor:
    """An ingestor that restates every partition's kill budget, when one is given."""
    if kill_budget is None:
        return Ingestor(store)
    return Ingestor(store, config=DEFAULT_CONFIG._replace(budget=kill_budget), restate=True)
