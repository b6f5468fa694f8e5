"""``advisor guard``: raise the limits the advisor tightened before a job reaches them.

Each poll asks Slurm for every running job in one ``squeue --json`` call, picks those whose
comment tag says policy ``guarded`` lowered them (action ``guarded``, the user's own request
in ``req``), and raises the limit of each job with at most ``LEAD_S`` left by the next step of
the schedule (advisor/guard_schedule.py, shared with the replay), never past the user's own
request (the tag's, and the advice row's where the cache has one: the lower wins) nor the
partition's MaxTime.  Nothing is kept between polls: the advised limit, the ceiling and the
current limit all come from Slurm's state (and the cache) each time, so a guard killed at any
point and started again carries on where it was.  Every poll ends with a heartbeat in the
cache and in the export file, which tells ``advisor sbatch`` and job_submit.lua that lowering
a user's own --time is safe now.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from advisor.advice.tag import parse_tag
from advisor.errors import AdvisorError, SlurmError
from advisor.guard_schedule import LEAD_S, POLL_S, next_limit_s
from advisor.lite import NamedTuple
from advisor.slurm.backend import CliBackend
from advisor.slurm.jobs import RunningJob, running_jobs, set_time_limit
from advisor.slurm.runner import SlurmCommands
from advisor.slurm.timefmt import format_duration
from advisor.store.advice import guarded_requests
from advisor.store.connection import Store
from advisor.store.guard import Heartbeat, fresh_within_s, write_heartbeat

#: The tag action of a job whose own --time policy guarded lowered.
GUARDED = "guarded"
#: Partition limits are read again after this long (they change rarely; one call when due).
PARTITIONS_TTL_S = 300.0


class Watched(NamedTuple):
    """A running job the guard looks after: its advised limit and its ceiling (seconds)."""

    job: RunningJob
    advised_s: int
    ceiling_s: int


class Extension(NamedTuple):
    """One raise of one job's limit."""

    job_id: int
    user: str
    from_s: int
    to_s: int
    left_s: float
    ceiling_s: int

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


def watched_job(
    job: RunningJob, requests: Mapping[int, int], max_time_s: Mapping[str, int | None]
) -> Watched | None:
    """The job as the guard watches it, or None (not tightened by guarded, or no limit)."""
    tag = parse_tag(job.comment)
    if tag is None or tag.action != GUARDED or tag.request_min is None or tag.limit_min < 1:
        return None
    if job.limit_s is None or job.end_epoch is None:
        return None
    ceiling = tag.request_min * 60
    if job.job_id in requests:
        ceiling = min(ceiling, requests[job.job_id])
    cap = max_time_s.get(job.partition)
    if cap is not None:
        ceiling = min(ceiling, cap)
    return Watched(job, tag.limit_min * 60, ceiling)


def due_limit(watched: Watched, now: float) -> int | None:
    """The job's next limit when it is due for a raise now, else None."""
    job = watched.job
    if job.end_epoch is None or job.limit_s is None or job.end_epoch - now > LEAD_S:
        return None
    if job.limit_s < watched.advised_s:
        return None  # lowered below the advice since (by its owner or an operator): theirs
    return next_limit_s(watched.advised_s, job.limit_s, watched.ceiling_s)


class Guard:
    """The guard's connections: Slurm, the cache, the export file; no state about jobs."""

    def __init__(
        self,
        store: Store,
        commands: SlurmCommands | None = None,
        *,
        export: str | None = None,
        log: Callable[[str], None] = lambda line: None,
        clock: Callable[[], float] = time.time,
        poll_s: int = POLL_S,
    ) -> None:
        self.store = store
        self.commands = commands or SlurmCommands()
        self.export = export
        self.log = log
        self.clock = clock
        self.poll_s = poll_s
        self._max_time: tuple[float, dict[str, int | None]] | None = None

    def max_time_s(self) -> dict[str, int | None]:
        """Each partition's MaxTime (read at most every PARTITIONS_TTL_S: limits, not state)."""
        now = time.monotonic()
        if self._max_time is None or now - self._max_time[0] > PARTITIONS_TTL_S:
            found = CliBackend(self.commands).partitions()
            self._max_time = (now, {p.name: p.max_time_s for p in found})
        return self._max_time[1]

    def poll(self) -> Poll:
        """One look at Slurm, the raises it calls for, and the heartbeat."""
        jobs = running_jobs(self.commands)
        tagged = [j for j in jobs if (t := parse_tag(j.comment)) and t.action == GUARDED]
        with self.store.read():
            requests = guarded_requests(self.store, [j.job_id for j in tagged]) if tagged else {}
        now = self.clock()
        # MaxTime is read only when a job may be due: most polls are one squeue call.
        close = [j for j in tagged if j.end_epoch is not None and j.end_epoch - now <= LEAD_S]
        caps = self.max_time_s() if close else {}
        watched = [w for j in tagged if (w := watched_job(j, requests, caps))]
        extensions, failures = [], []
        for item in watched:
            target = due_limit(item, now)
            if target is None or item.job.limit_s is None:
                continue
            try:
                set_time_limit(self.commands, item.job.job_id, target)
            except SlurmError as error:
                failures.append(f"job {item.job.job_id}: {error.one_line()}")
                self.log(f"advisor guard: job {item.job.job_id}: raise failed: {error.one_line()}")
                continue
            done = Extension(
                item.job.job_id, item.job.user, item.job.limit_s, target,
                (item.job.end_epoch or now) - now, item.ceiling_s,
            )  # fmt: skip
            extensions.append(done)
            self.log(extension_line(done))
        result = Poll(now, len(jobs), len(watched), tuple(extensions), tuple(failures))
        self.beat(result)
        return result

    def beat(self, result: Poll) -> None:
        """The heartbeat: in the cache, then in the export file (when there is one)."""
        beat = Heartbeat(
            result.at_epoch, socket.gethostname(), os.getpid(), self.poll_s, result.watched,
            len(result.extensions),
        )  # fmt: skip
        write_heartbeat(self.store, beat)
        if self.export is not None:
            write_export_heartbeat(self.export, result.at_epoch, self.poll_s)


def extension_line(done: Extension) -> str:
    """The log line of one raise."""
    return (
        f"advisor guard: job {done.job_id} (user {done.user}): time limit "
        f"{format_duration(done.from_s)} -> {format_duration(done.to_s)} "
        f"({done.left_s:.0f} s were left; ceiling {format_duration(done.ceiling_s)})"
    )


def write_export_heartbeat(path: str, at_epoch: float, poll_s: int) -> None:
    """Set the export's ``guard`` entry, keeping the rest; no file: nothing (no limits to apply).

    The file is replaced atomically; if ``advisor export`` replaced it meanwhile, the new
    export is kept and gets its heartbeat at the next poll.
    """
    from advisor.services.export import write_atomically

    target = Path(path)
    try:
        before = target.stat()
        doc = json.loads(target.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except (OSError, ValueError) as error:
        raise AdvisorError(f"export {path}: cannot read it for the heartbeat: {error}") from None
    if not isinstance(doc, dict):
        raise AdvisorError(f"export {path}: not a limits file")
    doc["guard"] = {
        "heartbeat_epoch": int(at_epoch),
        "poll_s": poll_s,
        "fresh_s": fresh_within_s(poll_s),
    }
    text = json.dumps(doc, sort_keys=True, allow_nan=False) + "\n"
    after = target.stat()
    if (after.st_ino, after.st_mtime_ns) != (before.st_ino, before.st_mtime_ns):
        return
    write_atomically(target, text)


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
    "Extension", "Guard", "GuardRun", "Poll", "Watched", "due_limit", "run_guard", "watched_job",
)  # fmt: skip
