"""``advisor guard``: raise the limits the advisor tightened before a job reaches them.

Each poll asks Slurm for every running job in one ``squeue --json`` call and watches the jobs
whose lowering a record users cannot edit vouches for: the ``advisor:`` tag that job_submit.lua
wrote into the job's **AdminComment** when it lowered the user's own ``--time`` (only slurmctld's
plugins and administrators can set that field), or the advice row the advisor itself wrote
into the cache for that job of that user on this cluster (policy guarded, not a spool line).
The job's own ``--comment`` is never trusted: its owner can write any tag into it at any time.
A task of a job array has an id of its own once it starts: it goes by its array's advice row
(the id sbatch printed) and is raised as ``ARRAY_TASK``, never by the array's id, which would
change the array's other tasks too.

A watched job with at most ``LEAD_S`` left is raised once, to its ceiling
(advisor/guard_schedule.py, shared with the replay, says why): the smallest of
the recorded request, the partition's MaxTime, the MaxWall of its QoS, of its partition's QoS
and of its association (SiteLimits.job_bounds), and the start of the next reservation on its
nodes.  An operator's raise skips every one of Slurm's own checks, so the guard makes them.

Under load the raises of one poll run concurrently (``RAISE_WORKERS``), each with a deadline
(``LEAD_S``, retries included), in order of time left with each user's jobs taken
``USER_ROUND`` at a time, and at most ``USER_RAISES_PER_POLL`` per user per poll: one user's
many due jobs cannot push another user's raise past its limit.

Nothing about jobs is kept between polls: the advised limit, the ceiling and the current
limit all come from Slurm's state (and the cache) each time, so a guard killed at any point and
started again carries on where it was.  Every poll ends with a heartbeat in the cache and, with
``--export``, in a small file beside the export (``heartbeat_file``), which tells ``advisor
sbatch`` and job_submit.lua that lowering a user's own --time is safe now; the export itself is
never rewritten, so slurmctld decodes it only when ``advisor export`` changes it.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from advisor.advice.tag import parse_tag
from advisor.errors import AdvisorError, InputError, SlurmError
from advisor.guard_schedule import LEAD_S, POLL_S, next_limit_s
from advisor.lite import NamedTuple
from advisor.slurm.backend import CliBackend
from advisor.slurm.conf import local_cluster_name
from advisor.slurm.jobs import RunningJob, advised_id, running_jobs, set_time_limit, update_id
from advisor.slurm.records import Bound, Partition, Reservation, SiteLimits
from advisor.slurm.runner import RetryPolicy, SlurmCommands
from advisor.slurm.timefmt import format_duration
from advisor.store.advice import GuardedRequest, guarded_requests
from advisor.store.cluster import load_site_limits
from advisor.store.connection import Store
from advisor.store.guard import Heartbeat, fresh_within_s, write_heartbeat

#: The tag action of a job whose own --time policy guarded lowered.
GUARDED = "guarded"
#: Partition, QoS and association limits are read again after this long (they change rarely;
#: one call each when due).
PARTITIONS_TTL_S = 300.0
#: scontrol updates at once.  Most of one update's 3 ms (the test cluster) is starting the
#: client; slurmctld serialises the updates under its job lock, so more workers buy little.
RAISE_WORKERS = 8
#: Each user's due jobs are taken this many at a time, in order of time left, before the next
#: user's next ones: another user's job waits behind at most this many of one user's.
USER_ROUND = 16
#: At most this many raises per user per poll (the rest wait for the next poll, 10 s later, in
#: front of that user's new ones): at 8 workers and a busy controller's 20 ms per update, a
#: second and a quarter of one poll, while a genuine array of this many tasks due at once
#: still gets through in the two polls its 25 s of lead leave.
USER_RAISES_PER_POLL = 500
#: Seconds one lookup of QoS, associations or reservations may take, without a retry: a tenth
#: of what remains of a due job's limit, so a slurmdbd that hangs costs a poll little.
LOOKUP_S = 2.5


class Watched(NamedTuple):
    """A running job the guard looks after: its advised limit and its ceiling (seconds)."""

    job: RunningJob
    advised_s: int
    ceiling_s: int
    #: What set the ceiling: the request, or the bound below it (for the log).
    bound: str = "the request"


class Extension(NamedTuple):
    """One raise of one job's limit."""

    job_id: int
    user: str
    from_s: int
    to_s: int
    left_s: float
    ceiling_s: int
    #: Seconds the raise landed after the job's end (0: on time).
    late_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The raise as schemas/guard-output.json has it (limits in Slurm's duration form)."""
        return {"job_id": self.job_id, "user": self.user, "from": format_duration(self.from_s),
                "to": format_duration(self.to_s), "left_s": round(self.left_s, 1),
                "ceiling": format_duration(self.ceiling_s)}  # fmt: skip


class Poll(NamedTuple):
    """What one poll saw and did."""

    at_epoch: float
    running: int
    watched: int
    extensions: tuple[Extension, ...]
    failures: tuple[str, ...]
    #: Due raises left for the next poll (USER_RAISES_PER_POLL).
    deferred: int = 0


def trusted_request(
    job: RunningJob, recorded: Mapping[int, GuardedRequest]
) -> GuardedRequest | None:
    """What a record users cannot edit says the advisor lowered the job to, or None.

    The plugin's tag in the AdminComment, and the advisor's own advice row; with both, the
    lower request and the higher advised limit (the stricter reading).  Never ``--comment``.
    """
    found = []
    tag = parse_tag(job.admin_comment) if job.admin_comment else None
    if tag is not None and tag.action == GUARDED and tag.request_min and tag.limit_min >= 1:
        found.append(GuardedRequest(tag.limit_min * 60, tag.request_min * 60))
    if advised_id(job) in recorded:
        found.append(recorded[advised_id(job)])
    if not found:
        return None
    return GuardedRequest(max(f.advised_s for f in found), min(f.request_s for f in found))


def reservation_bound(job: RunningJob, reservations: Sequence[Reservation]) -> Bound | None:
    """The longest limit that keeps the job out of every later reservation on its nodes.

    A job running inside a reservation may run to its end; any other reservation that holds
    one of the job's nodes bounds the job at its start (as slurmctld's scheduler would have).
    """
    if job.end_epoch is None or job.limit_s is None:
        return None
    started = job.end_epoch - job.limit_s  # the start, moved by suspensions as the end is
    nodes = set(job.nodes)
    found = []
    for resv in reservations:
        if job.reservation and resv.name == job.reservation:
            found.append(Bound(resv.end_epoch - started, f"reservation {resv.name} ends"))
        elif resv.end_epoch > started and nodes.intersection(resv.nodes):
            found.append(Bound(max(0, resv.start_epoch - started), f"reservation {resv.name}"))
    return min(found, key=lambda b: b.limit_s, default=None)


def watched_job(
    job: RunningJob,
    recorded: Mapping[int, GuardedRequest],
    partitions: Mapping[str, Partition],
    limits: SiteLimits | None = None,
    reservations: Sequence[Reservation] = (),
) -> Watched | None:
    """The job as the guard watches it, or None (no trusted record, or no limit)."""
    request = trusted_request(job, recorded)
    if request is None or job.limit_s is None or job.end_epoch is None:
        return None
    bounds = [Bound(request.request_s, "the request")]
    part = partitions.get(job.partition)
    found = (limits or SiteLimits.unknown()).job_bounds(
        user=job.user, partition=job.partition,
        max_time_s=part.max_time_s if part else None, partition_qos=part.qos if part else None,
        account=job.account or None, qos=job.qos or None,
    )  # fmt: skip
    bounds.extend(found.bounds)
    resv = reservation_bound(job, reservations)
    if resv is not None:
        bounds.append(resv)
    tight = min(bounds, key=lambda b: b.limit_s)
    return Watched(job, request.advised_s, tight.limit_s // 60 * 60, tight.source)


def due_limit(watched: Watched, now: float) -> int | None:
    """The job's next limit when it is due for a raise now, else None."""
    job = watched.job
    if job.end_epoch is None or job.limit_s is None or job.end_epoch - now > LEAD_S:
        return None
    if job.limit_s < watched.advised_s:
        return None  # lowered below the advice since (by its owner or an operator): theirs
    return next_limit_s(watched.advised_s, job.limit_s, watched.ceiling_s)


def raise_order(due: Sequence[tuple[Watched, int]]) -> tuple[list[tuple[Watched, int]], int]:
    """The due raises in the order they are made, and how many wait for the next poll.

    Time left first, each user's jobs USER_ROUND at a time; past USER_RAISES_PER_POLL of one
    user, the rest wait.
    """
    by_user: dict[str, list[tuple[Watched, int]]] = {}
    for item in sorted(due, key=lambda d: (d[0].job.end_epoch or 0, d[0].job.job_id)):
        by_user.setdefault(item[0].job.user, []).append(item)
    ranked, deferred = [], 0
    for items in by_user.values():
        deferred += max(0, len(items) - USER_RAISES_PER_POLL)
        for rank, item in enumerate(items[:USER_RAISES_PER_POLL]):
            ranked.append(
                (rank // USER_ROUND, item[0].job.end_epoch or 0, item[0].job.job_id, item)
            )
    ranked.sort(key=lambda r: r[:3])
    return [r[3] for r in ranked], deferred


class Guard:
    """The guard's connections: Slurm, the cache, the heartbeat file; no state about jobs."""

    def __init__(
        self,
        store: Store,
        commands: SlurmCommands | None = None,
        *,
        export: str | None = None,
        log: Callable[[str], None] = lambda line: None,
        clock: Callable[[], float] = time.time,
        poll_s: int = POLL_S,
        cluster: str | None = None,
    ) -> None:
        self.store = store
        self.commands = commands or SlurmCommands()
        self.export = export
        self.log = log
        self.clock = clock
        self.poll_s = poll_s
        self.cluster = cluster if cluster is not None else local_cluster_name()
        # A raise is worth making only before the job's limit: time-outs and retries end there.
        self.raises = SlurmCommands(
            self.commands.runner,
            policy=RetryPolicy(attempts=3, max_delay_s=float(LEAD_S), max_wait_s=2.0),
            timeout_s=float(LEAD_S),
            sleep=self.commands.sleep,
        )
        # QoS, associations and reservations are asked once, briefly: a slurmdbd that does not
        # answer must not make a poll late (the cache's copy stands in for sacctmgr).
        self.lookups = SlurmCommands(
            self.commands.runner, policy=RetryPolicy(attempts=1), timeout_s=LOOKUP_S,
            sleep=self.commands.sleep,
        )  # fmt: skip
        self._limits: tuple[float, dict[str, Partition], SiteLimits] | None = None

    def limits(self) -> tuple[dict[str, Partition], SiteLimits]:
        """Partitions, QoS and associations (read at most every PARTITIONS_TTL_S).

        When sacctmgr cannot answer (slurmdbd down), the ones ``cluster --save`` stored.
        """
        from advisor.services.cluster import fetch_site_limits

        now = time.monotonic()
        if self._limits is None or now - self._limits[0] > PARTITIONS_TTL_S:
            partitions = {p.name: p for p in CliBackend(self.commands).partitions()}
            site, problem = fetch_site_limits(CliBackend(self.lookups))
            if problem is not None:
                self.log(f"advisor guard: QoS and associations: {problem}; using the cache's")
                with self.store.read():
                    site = load_site_limits(self.store)
            self._limits = (now, partitions, site)
        return self._limits[1], self._limits[2]

    def reservations(self) -> list[Reservation]:
        """The reservations now (they come and go: read at every poll that has due jobs)."""
        try:
            return CliBackend(self.lookups).reservations()
        except (SlurmError, InputError) as error:
            self.log(f"advisor guard: reservations unreadable: {error.one_line()}")
            return []

    def poll(self) -> Poll:
        """One look at Slurm, the raises it calls for, and the heartbeat."""
        jobs = running_jobs(self.commands)
        with self.store.read():
            recorded = guarded_requests(
                self.store, [(advised_id(j), j.user) for j in jobs], self.cluster
            )
        now = self.clock()
        trusted = [j for j in jobs if trusted_request(j, recorded) is not None]
        # Limits are read only when a job may be due: most polls are one squeue call.
        close = [j for j in trusted if j.end_epoch is not None and j.end_epoch - now <= LEAD_S]
        partitions, site = self.limits() if close else ({}, SiteLimits.unknown())
        reservations = self.reservations() if close else []
        watched = [
            w for j in trusted if (w := watched_job(j, recorded, partitions, site, reservations))
        ]
        due = []
        for item in watched:
            target = due_limit(item, now)
            if target is not None:
                due.append((item, target))
            elif item.job.end_epoch is not None and item.job.end_epoch - now <= LEAD_S:
                self._held(item)
        order, deferred = raise_order(due)
        extensions, failures = self._raise(order, now)
        if deferred:
            self.log(f"advisor guard: {deferred} raise(s) of users past "
                     f"{USER_RAISES_PER_POLL} this poll wait for the next")  # fmt: skip
        result = Poll(now, len(jobs), len(watched), tuple(extensions), tuple(failures), deferred)
        self.beat(result)
        return result

    def _held(self, item: Watched) -> None:
        job = item.job
        if (
            job.limit_s is not None
            and job.limit_s >= item.ceiling_s
            and item.bound != "the request"
        ):
            self.log(
                f"advisor guard: job {job.job_id} (user {job.user}): not raised past "
                f"{format_duration(item.ceiling_s)} ({item.bound})"
            )

    def _raise(
        self, order: Sequence[tuple[Watched, int]], now: float
    ) -> tuple[list[Extension], list[str]]:
        """Make the raises, RAISE_WORKERS at a time, started in order."""

        def one(item: Watched, target: int) -> Extension | str:
            job = item.job
            try:
                set_time_limit(self.raises, update_id(job) or job.job_id, target)
            except SlurmError as error:
                return f"job {job.job_id}: {error.one_line()}"
            done = self.clock()
            end = job.end_epoch or now
            return Extension(job.job_id, job.user, job.limit_s or 0, target, end - now,
                             item.ceiling_s, max(0.0, done - end))  # fmt: skip

        if not order:
            return [], []
        with ThreadPoolExecutor(max_workers=min(RAISE_WORKERS, len(order))) as pool:
            results = list(pool.map(lambda pair: one(*pair), order))
        extensions, failures = [], []
        for result in results:
            if isinstance(result, str):
                failures.append(result)
                self.log(f"advisor guard: {result.replace(':', ': raise failed:', 1)}")
            else:
                extensions.append(result)
                self.log(extension_line(result))
        return extensions, failures

    def beat(self, result: Poll) -> None:
        """The heartbeat: in the heartbeat file (with --export), then in the cache."""
        beat = Heartbeat(
            result.at_epoch, socket.gethostname(), os.getpid(), self.poll_s, result.watched,
            len(result.extensions),
        )  # fmt: skip
        if self.export is not None:
            write_heartbeat_file(heartbeat_file(self.export), result.at_epoch, self.poll_s)
        write_heartbeat(self.store, beat)


def extension_line(done: Extension) -> str:
    """The log line of one raise."""
    late = f"; {done.late_s:.1f} s after its end" if done.late_s else ""
    return (
        f"advisor guard: job {done.job_id} (user {done.user}): time limit "
        f"{format_duration(done.from_s)} -> {format_duration(done.to_s)} "
        f"({done.left_s:.0f} s were left; ceiling {format_duration(done.ceiling_s)}{late})"
    )


def heartbeat_file(export: str | os.PathLike[str]) -> Path:
    """Where the guard beats for job_submit.lua: ``advisor-limits.json`` -> ``advisor-limits.guard.json``.

    A file of its own, beside the export: the export is decoded by slurmctld whenever it is
    replaced (up to 16 MiB), the heartbeat every 10 s (a few bytes).  job_submit.lua derives
    the same name from its EXPORT_PATH.
    """
    path = Path(export)
    stem = path.name[: -len(".json")] if path.name.endswith(".json") else path.name
    return path.with_name(f"{stem}.guard.json")


def write_heartbeat_file(path: str | os.PathLike[str], at_epoch: float, poll_s: int) -> None:
    """Replace the heartbeat file atomically (schemas/guard-heartbeat.json), mode 0644.

    Three numbers, no user's: slurmctld's plugin (user slurm) must read it, whatever group the
    guard runs as (the export's own 0640 would hide it from a guard run as root).
    """
    from advisor.services.export import write_atomically

    doc = {"heartbeat_epoch": int(at_epoch), "poll_s": poll_s, "fresh_s": fresh_within_s(poll_s)}
    write_atomically(path, json.dumps(doc, sort_keys=True) + "\n", mode=0o644)


class GuardRun(NamedTuple):
    """What a guard run did: its polls (the last few kept) and its raises in all."""

    polls: int
    failed_polls: int
    extensions: tuple[Extension, ...]
    last: Poll | None

    @property
    def watched(self) -> int | None:
        """Jobs watched at the last poll (None when no poll succeeded)."""
        return self.last.watched if self.last else None

    def to_json(self) -> dict[str, Any]:
        """The run as schemas/guard-output.json has it (limits in Slurm's duration form)."""
        return {
            "polls": self.polls,
            "failed_polls": self.failed_polls,
            "running": self.last.running if self.last else None,
            "watched": self.watched,
            "extensions": [e.to_json() for e in self.extensions],
        }


def run_guard(
    guard: Guard,
    *,
    once: bool = False,
    max_polls: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> GuardRun:
    """Poll every guard.poll_s until stopped (KeyboardInterrupt/SIGTERM) or once.

    A poll that fails (Slurm down past the retries) is logged and the next one comes on time;
    with once it is raised, so cron sees the failure.
    """
    polls = failed = 0
    extensions: list[Extension] = []
    last: Poll | None = None
    try:
        while max_polls is None or polls < max_polls:
            started = time.monotonic()
            polls += 1
            try:
                last = guard.poll()
                extensions.extend(last.extensions)
            except AdvisorError as error:
                if once:
                    raise
                failed += 1
                guard.log(f"advisor guard: poll failed: {error.one_line()}")
            if once:
                break
            sleep(max(0.0, guard.poll_s - (time.monotonic() - started)))
    except KeyboardInterrupt:
        pass
    return GuardRun(polls, failed, tuple(extensions[-1000:]), last)


__all__: Sequence[str] = (
    "Extension", "Guard", "GuardRun", "Poll", "Watched", "due_limit", "heartbeat_file",
    "raise_order", "reservation_bound", "run_guard", "trusted_request", "watched_job",
    "write_heartbeat_file",
)  # fmt: skip
