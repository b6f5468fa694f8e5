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
``partitions`` cannot collide with anything.  The file is written to a temporary file in the
same directory, fsync'ed and renamed into place (mode 0644, for user slurm), so slurmctld never
reads half a file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError
from advisor.history.lookup import export_limits
from advisor.lite import NamedTuple
from advisor.store.connection import Store
from advisor.store.task_models import load_user_models
from advisor.wrapper.advise import partition_limits
from advisor.wrapper.argv import AdvisorOptions
from advisor.wrapper.snapshot import Snapshot, load_snapshot

EXPORT_VERSION = 1
FILE_MODE = 0o644


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
) -> dict[str, Any]:
    """Per task (and optionally per user), each partition's limit in whole minutes.

    users: what export_from_cache finds of each user's own (module docstring).
    """
    tasks = task_limits(snapshot, snapshot.tasks, AdvisorOptions(quantile=quantile, margin=margin))
    return {
        "version": EXPORT_VERSION,
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
        "users": {
            user: {
                "tasks": {
                    task: {"partitions": _minutes(parts)}
                    for task, parts in sorted(mine.tasks.items())
                    if _utf8(task)
                },
                "partitions": _minutes(mine.partitions),
            }
            for user, mine in sorted((users or {}).items())
            if _utf8(user)
        },
    }


def task_limits(
    snapshot: Snapshot, tasks: Iterable[str], options: AdvisorOptions
) -> dict[str, dict[str, Any]]:
    """Per task, each partition's limit in minutes, as the wrapper sets it without an input."""
    names = sorted(snapshot.partitions)
    found: dict[str, Any] = {}
    for task in filter(_utf8, tasks):
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
        history = export_limits(store)
    max_min = {
        name: p.max_time_s // 60 if p.max_time_s is not None else None
        for name, p in shared.partitions.items()
    }
    partitions: dict[str, dict[str, int]] = {}
    for key in sorted(history, key=lambda k: k["kind"] != "user"):  # user+partition wins
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
        shared, quantile=quantile, margin=margin, generated_at=generated_at, users=users
    )


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


def write_export(path: str | os.PathLike[str], document: Mapping[str, Any]) -> Path:
    """The export as compact JSON, atomically."""
    return write_atomically(path, json.dumps(document, sort_keys=True, allow_nan=False) + "\n")
