"""Storing finished jobs and everything they teach, inside the caller's write transaction.

Per batch, in order of their end: the records (a job already stored is skipped, so
re-ingesting changes nothing), their observations, the task models (COMPLETED runs update
them online, TIMEOUTs through the censored update), and the history policy's key states and
site budget.  The caller commits the batch together with its watermark.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from advisor.accounting.censored import update_censored
from advisor.accounting.mapping import (
    advice_job_id,
    history_name,
    job_observation,
    job_tag,
    recorded_advice,
    was_advised,
)
from advisor.history.book import HistoryBook
from advisor.history.keys import HistoryKey, keys_for
from advisor.history.policy import DEFAULT_CONFIG, PolicyConfig
from advisor.models.online import update_online
from advisor.models.reference import ReferenceModel
from advisor.slurm.records import JobRecord
from advisor.store.accounting import add_jobs, stored_job_ids
from advisor.store.advice import AppliedLimit, applied_limits
from advisor.store.connection import Store
from advisor.store.history import load_key_states, load_site, save_key_states, save_site
from advisor.store.observations import Observation, add_observations
from advisor.store.task_models import load_task_models, node_classes


@dataclass
class IngestStats:
    """What ingestion did so far."""

    stored: int = 0
    already: int = 0
    model_updates: int = 0
    censored_updates: int = 0
    states: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        """For the command's JSON output."""
        return {
            "stored": self.stored,
            "already_stored": self.already,
            "model_updates": self.model_updates,
            "censored_updates": self.censored_updates,
            "states": dict(sorted(self.states.items())),
        }


def _end_order(job: JobRecord) -> tuple[datetime, int, str]:
    return (job.end or datetime.min, job.job_id_raw, job.job_id)


def modelled_tasks(store: Store) -> dict[str, int]:
    """Tasks with a fitted model, and the input size the wrapper assumes without --advisor-input.

    Only these tasks' runs can update a model online.  A job whose tag records no input size
    teaches the model at that assumed size (the largest training input, the size its limit
    was predicted for); the stored observation keeps the size unknown.
    """
    return {
        row.task: int(ReferenceModel.from_params(row.params).x_max_bytes)
        for row in load_task_models(store)
        if row.method == "lotaru" and row.node_class == "*"
    }


class Ingestor:
    """Adds batches of final records to the cache (call ``add`` inside ``store.write()``)."""

    def __init__(self, store: Store, *, config: PolicyConfig = DEFAULT_CONFIG) -> None:
        self.store = store
        self.config = config
        self.classes = node_classes(store)
        self.modelled = modelled_tasks(store)
        self.stats = IngestStats()

    def _new(self, jobs: Sequence[JobRecord]) -> list[JobRecord]:
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
        return sorted(unique.values(), key=_end_order)

    def add(self, jobs: Iterable[JobRecord]) -> int:
        """Store the records not stored yet and learn from them; how many were new."""
        new = self._new(list(jobs))
        if not new:
            return 0
        keys = {key for job in new for key in keys_for(job.user, history_name(job), job.partition)}
        book = HistoryBook(
            load_key_states(self.store, sorted(keys)), load_site(self.store), config=self.config
        )
        applied = applied_limits(self.store, filter(None, map(advice_job_id, new)))
        observations = []
        for job in new:
            observations.append(job_observation(job, self.classes))
            self._learn_history(book, job, applied)
            self.stats.states[job.state] += 1
        add_jobs(self.store, new)
        add_observations(self.store, observations)
        for observation in observations:
            self._learn_model(observation)
        save_key_states(self.store, {key: book.states[key] for key in book.changed})
        save_site(self.store, book.site)
        self.stats.stored += len(new)
        return len(new)

    @staticmethod
    def _learn_history(
        book: HistoryBook, job: JobRecord, applied: Mapping[int, Sequence[AppliedLimit]]
    ) -> None:
        tag = job_tag(job)
        advised = was_advised(job, tag)
        name = history_name(job)
        key: HistoryKey | None = None
        if advised:
            key = book.propose_key(keys_for(job.user, name, job.partition))
        book.learn(
            job.user,
            name,
            job.partition,
            runtime_s=float(job.elapsed_s),
            state=job.state,
            advised=advised,
            advised_key=key,
            recorded=advised and recorded_advice(job, tag, applied),
        )

    def _learn_model(self, observation: Observation) -> None:
        assumed = self.modelled.get(observation.task)
        if assumed is None:
            return
        if observation.input_bytes is None:
            observation = replace(observation, input_bytes=assumed)
        if observation.state == "COMPLETED":
            if update_online(self.store, observation) is not None:
                self.stats.model_updates += 1
        elif observation.censored and update_censored(self.store, observation) is not None:
            self.stats.censored_updates += 1
