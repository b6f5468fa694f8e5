"""The limits file slurm/job_submit.lua reads (schemas/export.json), written atomically.

Users who call plain ``sbatch`` get the same limits from slurmctld's Lua plugin.  The plugin
knows a job's name, user and partitions but not its input: the export predicts for the largest
training input of each task, as the wrapper does without ``--advisor-input``.  ``tasks`` holds what
the shared models say; ``users[NAME]`` what is that user's own: ``tasks`` refined by the user's
runs, or the history policy's limit for a job name without a model, and ``partitions`` the
history policy's limit for the user's other jobs (user + partition, else user).  The plugin
looks in that order (users.tasks, tasks, users.partitions), as ``advisor sbatch`` decides
(model, then history); what it cannot see is the history policy's at-risk budget (jobs still
running under an advised limit), which only the wrapper applies.  Keys that users choose
(task names, user names) are always object keys one level below a fixed key, so a task called
``partitions`` cannot collide with anything.

The file is mode 0644 (user slurm reads it), so a user's job names are never in it: the keys
of ``users[NAME].tasks`` are digests of (user, name) (store/names.py), which the plugin
computes from the job.  And it is bounded, because slurmctld decodes it under its locks (Lua
5.1 hashes only some bytes of a long string: 50,000 long job names that differ elsewhere took
cjson.decode 28.9 s): no name over Slurm's 1024-byte limit (no job can have it), at most
USER_NAMES names per user (the most used), and at most EXPORT_BYTES in all (fewer names per
user until it fits).  The file is written to a temporary file in the same directory, fsync'ed
and renamed into place, so slurmctld never reads half a file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError, InputError
from advisor.history.lookup import export_limits
from advisor.lite import NamedTuple
from advisor.output_target import check_output
from advisor.store.connection import Store
from advisor.store.names import NAME_SCHEME, name_key
from advisor.store.task_models import load_user_models
from advisor.wrapper.advise import partition_limits
from advisor.wrapper.argv import AdvisorOptions
from advisor.wrapper.snapshot import Snapshot, load_snapshot

#: 2: users' job names are digests (store/names.py).
EXPORT_VERSION = 2
FILE_MODE = 0o644
#: Slurm 22.05 refuses a job name (or comment) over 1024 bytes: no job can have a longer one.
NAME_BYTES = 1024
#: At most this many job names per user (model refinements and history), the most used kept.
USER_NAMES = 512
#: At most this big in all: lua-cjson decodes 16 MiB in about a quarter of a second.
EXPORT_BYTES = 16 << 20


class UserLimits(NamedTuple):
    """One user's own limits in minutes: per job name and partition, and per partition."""

    tasks: Mapping[str, Mapping[str, int]]
    partitions: Mapping[str, int]


def export_document(
    snapshot: Snapshot,
    *,
    quantile: float,
    margin: float,
    generated_at: str,
    users: Mapping[str, UserLimits] | None = None,
    user_names: int = USER_NAMES,
    max_bytes: int = EXPORT_BYTES,
    left_out: tuple[int, int] = (0, 0),
) -> dict[str, Any]:
    """Per task (and optionally per user), each partition's limit in whole minutes.

    users: what export_from_cache finds of each user's own (module docstring), each user's
    task names most used first: past user_names (halved until the file fits max_bytes), the
    rest is left out and counted in ``dropped`` (as names no job can have: over NAME_BYTES, or
    not UTF-8, which lua-cjson refuses).  left_out: (unusable, over the cap) names the caller
    left out before (export_from_cache reads only what can be kept), counted with them.
    """
    tasks = task_limits(snapshot, snapshot.tasks, AdvisorOptions(quantile=quantile, margin=margin))
    document = {
        "version": EXPORT_VERSION,
        "names": NAME_SCHEME,
        "generated_at": generated_at,
        "quantile": quantile,
        "margin": margin,
        "partitions": {
            name: {
                "max_time_min": p.max_time_s // 60 if p.max_time_s is not None else -1,
                "default": p.is_default,
            }
            for name, p in sorted(snapshot.partitions.items())
        },
        "tasks": tasks,
    }
    mine = {user: limits for user, limits in (users or {}).items() if _utf8(user)}
    usable = sum(1 for limits in mine.values() for task in limits.tasks if _fits(task))
    unusable = sum(len(limits.tasks) for limits in mine.values()) - usable
    while True:
        document["users"], kept = _users(mine, user_names)
        document["dropped"] = {
            "unusable_names": unusable + left_out[0],
            "over_cap": usable - kept + left_out[1],
        }
        size = len(json.dumps(document, sort_keys=True, allow_nan=False))
        if size <= max_bytes:
            return document
        if user_names == 0:
            raise AdvisorError(
                f"the export would take {size} bytes even without per-user job names "
                f"(the bound is {max_bytes}): {len(tasks)} tasks, {len(mine)} users",
                hint="a bound of the Lua plugin (advisor/services/export.py, EXPORT_BYTES)",
            )
        user_names //= 2


def _users(users: Mapping[str, UserLimits], cap: int) -> tuple[dict[str, Any], int]:
    """The users' entries with at most cap names each, keyed by digest; and how many kept."""
    found, kept = {}, 0
    for user, mine in sorted(users.items()):
        names = [task for task in mine.tasks if _fits(task)][:cap]
        kept += len(names)
        found[user] = {
            "tasks": {
                name_key(user, task): {"partitions": _minutes(mine.tasks[task])} for task in names
            },
            "partitions": _minutes(mine.partitions),
        }
    return found, kept


def _fits(name: str) -> bool:
    """A name some job can have and the plugin can read (UTF-8, at most NAME_BYTES)."""
    return _utf8(name) and len(name.encode("utf-8")) <= NAME_BYTES


def task_limits(
    snapshot: Snapshot, tasks: Iterable[str], options: AdvisorOptions
) -> dict[str, dict[str, Any]]:
    """Per task, each partition's limit in minutes, as the wrapper sets it without an input."""
    names = sorted(snapshot.partitions)
    found: dict[str, Any] = {}
    for task in filter(_fits, tasks):
        size = snapshot.predictor.default_input_bytes(task)
        limits = partition_limits(names, snapshot, task, size, options)
        parts = {
            p.partition: {
                "limit_min": p.limit_s // 60,
                "predicted_s": round(p.predicted_s or 0.0, 1),
            }
            for p in limits
            if p.limit_s is not None
        }
        if parts:
            found[task] = {"input_bytes": size or 0, "partitions": parts}
    return found


def export_from_cache(
    store: Store, *, quantile: float, margin: float, generated_at: str
) -> dict[str, Any]:
    """The export of a cache: shared limits, and per user the tasks their own runs refined."""
    if store.published:
        raise InputError(
            f"cache {store.path} is a published copy: its job names are digests",
            hint="export from the working cache",
        )
    options = AdvisorOptions(quantile=quantile, margin=margin)
    with store.read():
        shared = load_snapshot(store, None)
        refined: dict[str, list[str]] = {}
        for row in load_user_models(store):
            refined.setdefault(row.user, []).append(row.task)
        tasks: dict[str, dict[str, dict[str, int]]] = {}
        for user, names in refined.items():
            mine = load_snapshot(store, tuple(names), user=user)
            tasks[user] = {
                task: {part: entry["limit_min"] for part, entry in doc["partitions"].items()}
                for task, doc in task_limits(mine, mine.tasks, options).items()
            }
        history = export_limits(
            store, names_per_user=USER_NAMES, max_name_bytes=NAME_BYTES, skip=shared.tasks
        )
    max_min = {
        name: p.max_time_s // 60 if p.max_time_s is not None else None
        for name, p in shared.partitions.items()
    }
    partitions: dict[str, dict[str, int]] = {}
    # a user's refinements first, then the history names they use most
    for key in sorted(history.rows, key=lambda k: (k["kind"] != "user", -k["jobs"], k["name"])):
        user, minutes = str(key["user"]), int(key["limit_s"]) // 60
        if key["kind"] == "user+name":
            if key["name"] not in shared.tasks:  # a model decides for a task that has one
                tasks.setdefault(user, {})[str(key["name"])] = _everywhere(minutes, max_min)
        elif key["kind"] == "user+partition" and key["partition"] in max_min:
            partitions.setdefault(user, {})[str(key["partition"])] = minutes
        elif key["kind"] == "user":
            partitions.setdefault(user, {}).update(_everywhere(minutes, max_min))
    users = {
        user: UserLimits(tasks.get(user, {}), partitions.get(user, {}))
        for user in sorted({*tasks, *partitions})
    }
    return export_document(
        shared, quantile=quantile, margin=margin, generated_at=generated_at, users=users,
        left_out=(history.unusable, history.over_cap),
    )  # fmt: skip


def _everywhere(minutes: int, max_min: Mapping[str, int | None]) -> dict[str, int]:
    """The limit in every partition, each clamped to its MaxTime (minutes; None: none)."""
    return {name: minutes if cap is None else min(minutes, cap) for name, cap in max_min.items()}


def _minutes(parts: Mapping[str, int]) -> dict[str, dict[str, int]]:
    return {part: {"limit_min": int(m)} for part, m in sorted(parts.items())}


def _utf8(name: str) -> bool:
    """False for a name holding bytes that are not UTF-8 (surrogates).

    lua-cjson refuses the whole file over one such escape, and no job name the plugin sees
    could match it anyway.
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def write_atomically(path: str | os.PathLike[str], text: str, *, mode: int = FILE_MODE) -> Path:
    """Write text to path so that readers see the old file or the new one, never a mix."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        handle, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as error:
        raise AdvisorError(f"cannot write {target}: {error.strerror}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(tmp, target)
        with contextlib.suppress(OSError):  # the rename is durable once the directory is
            dir_fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise AdvisorError(f"cannot write {target}: {error.strerror}") from None
    return target


def write_export(
    path: str | os.PathLike[str], document: Mapping[str, Any], *, cache: str | None = None
) -> Path:
    """The export as compact JSON, atomically, where no one else can replace it (never the cache)."""
    check_output(path, cache=cache)
    return write_atomically(path, json.dumps(document, sort_keys=True, allow_nan=False) + "\n")


@dataclass(frozen=True)
class TaskLimit:
    """One task's limit on one partition, as the export holds it."""

    task: str
    partition: str
    limit_min: int
    predicted_s: float


@dataclass(frozen=True)
class Exported:
    """The limits file written: where, and the document (schemas/export.json) it holds."""

    path: Path
    document: Mapping[str, Any]

    @property
    def limits(self) -> tuple[TaskLimit, ...]:
        """Every task's limit per partition (the shared ones, not the users' own)."""
        return tuple(
            TaskLimit(task, part, entry["limit_min"], entry["predicted_s"])
            for task, doc in self.document["tasks"].items()
            for part, entry in doc["partitions"].items()
        )

    @property
    def tasks(self) -> int:
        """Tasks with a shared limit."""
        return len(self.document["tasks"])

    @property
    def users(self) -> int:
        """Users with limits of their own."""
        return len(self.document["users"])

    @property
    def unusable_names(self) -> int:
        """Users' job names left out because no job can have them."""
        return int(self.document["dropped"]["unusable_names"])

    @property
    def over_cap(self) -> int:
        """Users' job names left out past the per-user cap."""
        return int(self.document["dropped"]["over_cap"])

    def to_json(self) -> dict[str, Any]:
        """The document written, which the command prints."""
        return dict(self.document)


def export_to_file(
    store: Store, out: str | os.PathLike[str], *, quantile: float, margin: float, generated_at: str
) -> Exported:
    """Check the target, build the export from the cache, write it atomically."""
    check_output(out, cache=store.path)  # before the work, and again when writing
    document = export_from_cache(store, quantile=quantile, margin=margin, generated_at=generated_at)
    return Exported(write_export(out, document, cache=store.path), document)
