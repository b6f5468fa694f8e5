"""The limits file slurm/job_submit.lua reads (schemas/export.json), written atomically.

Users who call plain ``sbatch`` get the same limits from slurmctld's Lua plugin.  The plugin
knows a job's name, user and partitions but not its input: the export predicts for the largest
training input of each task, as the wrapper does without ``--advisor-input``.  ``tasks`` holds what
the shared models say; ``users[NAME]`` what is that user's own: ``tasks`` refined by the user's
runs, or the history policy's limit for a job name without a model, ``families`` the history
policy's limit for a name family (the name with its numbers masked, advisor.history.keys), and
``partitions`` its limit for the user's other jobs (user + partition, else user).  The plugin
looks in that order (users.tasks, tasks, users.families, users.partitions), as ``advisor
sbatch`` decides (model, then the history keys, most specific first); what it cannot see is the
history policy's at-risk budget (jobs still running under an advised limit), which only the
wrapper applies; ``partitions[P].credit``, the kills the budget allowed at export time, lets
the plugin leave a job array with more tasks than that to ``advisor readvise``.  Keys that
users choose (task names, user names) are always object keys one level below a fixed key, so
a task called ``partitions`` cannot collide with anything.

It tells each user's own limits, which follow from that user's runtimes, so only slurmctld may
read it: mode 0640, group slurmctld's (``SlurmUser``'s group in slurm.conf, or ``--group``), as
``sacct`` shows a user no other user's jobs at a site with ``PrivateData=jobs``.  Nor are users'
job names in it: the keys of ``users[NAME].tasks`` are digests of (user, name) under a secret
key kept beside it (``<export>.key``, the same mode; store/names.py), which the plugin reads to
compute them from the job: a guess of a name cannot be tested offline.  And it is bounded,
because slurmctld decodes it under its locks (Lua
5.1 hashes only some bytes of a long string: 50,000 long job names that differ elsewhere took
cjson.decode 28.9 s): no name over Slurm's 1024-byte limit (no job can have it), at most
USER_NAMES names per user (the most used), and at most EXPORT_BYTES in all (fewer names per
user until it fits).  The file is written to a temporary file in the same directory, fsync'ed
and renamed into place, so slurmctld never reads half a file.
"""

from __future__ import annotations

import grp
import json
import math
import os
import pwd
import secrets
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.advice.advice import partition_limits
from advisor.advice.memory_export import memory_export
from advisor.advice.settings import AdvisorOptions
from advisor.advice.snapshot import Snapshot, load_snapshot
from advisor.errors import AdvisorError, InputError, UsageError
from advisor.history.cache import load_budgets
from advisor.history.lookup import export_limits
from advisor.lite import NamedTuple
from advisor.output_target import check_output, open_target, write_file
from advisor.slurm.conf import DEFAULT_CONF, conf_settings
from advisor.slurm.records import DEFAULT_QOS, SiteLimits
from advisor.store.cluster import load_site_limits
from advisor.store.connection import Store
from advisor.store.names import KEY_BYTES, NAME_SCHEME, key_id, name_key
from advisor.store.task_models import load_user_models

#: 2: users' job names are digests (store/names.py); 3: keyed digests, the file 0640.
EXPORT_VERSION = 3
#: Readable by the writer and slurmctld's group (issue 31, N4: 0644 told every user each
#: user's limits, that is their runtimes).
FILE_MODE = 0o640
#: Slurm 22.05 refuses a job name (or comment) over 1024 bytes: no job can have a longer one.
NAME_BYTES = 1024
#: At most this many job names per user (model refinements and history), the most used kept.
USER_NAMES = 512
#: At most this big in all: lua-cjson decodes 16 MiB in about a quarter of a second.
EXPORT_BYTES = 16 << 20


class UserLimits(NamedTuple):
    """One user's own limits in minutes: per job name or name family and partition, per partition."""

    tasks: Mapping[str, Mapping[str, int]]
    partitions: Mapping[str, int]
    families: Mapping[str, Mapping[str, int]] = {}


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
    key: bytes = b"",
    memory: Mapping[str, Any] | None = None,
    limits: SiteLimits | None = None,
    credits: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Per task (and optionally per user), each partition's limit in whole minutes.

    users: what export_from_cache finds of each user's own (module docstring), each user's
    task names (and name families) most used first: past user_names of each (halved until the
    file fits max_bytes), the rest is left out and counted in ``dropped`` (as names no job can
    have: over NAME_BYTES, or not UTF-8, which lua-cjson refuses).  left_out: (unusable, over
    the cap) names the caller left out before (export_from_cache reads only what can be kept),
    counted with them.
    key: what users' job names are digested with (store/names.py); its id goes in the file.
    memory: the ``memory`` section (advisor.advice.memory_export, its users' names digested
    with the same key), when the cache has one.  credits: per partition, the kills its budget
    still allows (at least 1), past which the plugin leaves a job array's tasks to readvise.
    """
    tasks = task_limits(snapshot, snapshot.tasks, AdvisorOptions(quantile=quantile, margin=margin))
    document = {
        "version": EXPORT_VERSION,
        "names": NAME_SCHEME,
        "key_id": key_id(key),
        "generated_at": generated_at,
        "quantile": quantile,
        "margin": margin,
        "partitions": {
            name: {
                "max_time_min": p.max_time_s // 60 if p.max_time_s is not None else -1,
                "default": p.is_default,
                **({"qos": p.qos} if p.qos else {}),
                **({"credit": credits[name]} if credits and name in credits else {}),
            }
            for name, p in sorted(snapshot.partitions.items())
        },
        "tasks": tasks,
        **({"memory": dict(memory)} if memory is not None else {}),
        "limits": limits_document(limits or SiteLimits.unknown()),
    }
    mine = {user: limits for user, limits in (users or {}).items() if _utf8(user)}
    usable = sum(1 for limits in mine.values() for name in _names(limits) if _fits(name))
    unusable = sum(len(_names(limits)) for limits in mine.values()) - usable
    while True:
        document["users"], kept = _users(mine, user_names, key)
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


def limits_document(limits: SiteLimits) -> dict[str, Any]:
    """What job_submit.lua needs to keep a limit within QoS and association MaxWall.

    Per user: the default account and, per account (and per partition where an association
    names one), the association's MaxWall and the QoS a job without --qos gets (the same
    choice as advisor.slurm.records.Association.job_qos, made here so the plugin only looks it up).  Users
    and QoS are what sacctmgr shows every user by default; minutes, rounded down.
    """
    if not limits.known:
        return {"known": False}
    users: dict[str, Any] = {}
    for a in limits.associations:
        mine = users.setdefault(a.user, {"accounts": {}})
        entry: dict[str, Any] = {"qos": a.job_qos()}
        if a.max_wall_s is not None:
            entry["max_wall_min"] = a.max_wall_s // 60
        account = mine["accounts"].setdefault(a.account, {})
        if a.partition:
            account.setdefault("partitions", {})[a.partition] = entry
        else:
            account.update(entry)
    for user, account in limits.default_accounts.items():
        if user in users:
            users[user]["default_account"] = account
    return {
        "known": True,
        "associations_required": "associations" in limits.enforce,
        "default_qos": DEFAULT_QOS,
        "qos": {
            q.name: {"max_wall_min": q.max_wall_s // 60}
            for q in limits.qos.values()
            if q.max_wall_s is not None
        },
        "associations": {user: users[user] for user in sorted(users) if _utf8(user)},
    }


def _users(users: Mapping[str, UserLimits], cap: int, key: bytes) -> tuple[dict[str, Any], int]:
    """The users' entries with at most cap names each, keyed by digest; and how many kept."""
    found: dict[str, Any] = {}
    kept = 0
    for user, mine in sorted(users.items()):
        entry: dict[str, Any] = {"partitions": _minutes(mine.partitions)}
        for section, limits in (("tasks", mine.tasks), ("families", mine.families)):
            names = [name for name in limits if _fits(name)][:cap]
            kept += len(names)
            if names or section == "tasks":
                entry[section] = {
                    name_key(user, name, key): {"partitions": _minutes(limits[name])}
                    for name in names
                }
        found[user] = entry
    return found, kept


def _names(limits: UserLimits) -> list[str]:
    return [*limits.tasks, *limits.families]


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
    store: Store, *, quantile: float, margin: float, generated_at: str, key: bytes = b""
) -> dict[str, Any]:
    """The export of a cache: shared limits, and per user the tasks their own runs refined."""
    _not_published(store)
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
        memory = memory_export(
            store, {name: p.nodes for name, p in shared.partitions.items()}, key, usable=_fits
        )
        site = load_site_limits(store)
        credits = {p: max(1, math.floor(b.credit)) for p, b in load_budgets(store).items()}
    max_min = {
        name: p.max_time_s // 60 if p.max_time_s is not None else None
        for name, p in shared.partitions.items()
    }
    partitions: dict[str, dict[str, int]] = {}
    families: dict[str, dict[str, dict[str, int]]] = {}
    # a user's refinements first, then the history names they use most
    for entry in sorted(history.rows, key=lambda k: (k["kind"] != "user", -k["jobs"], k["name"])):
        user, minutes = str(entry["user"]), int(entry["limit_s"]) // 60
        if entry["kind"] == "user+name":
            if entry["name"] not in shared.tasks:  # a model decides for a task that has one
                tasks.setdefault(user, {})[str(entry["name"])] = _everywhere(minutes, max_min)
        elif entry["kind"] == "user+family":
            families.setdefault(user, {})[str(entry["name"])] = _everywhere(minutes, max_min)
        elif entry["kind"] == "user+partition" and entry["partition"] in max_min:
            partitions.setdefault(user, {})[str(entry["partition"])] = minutes
        elif entry["kind"] == "user":
            partitions.setdefault(user, {}).update(_everywhere(minutes, max_min))
    users = {
        user: UserLimits(tasks.get(user, {}), partitions.get(user, {}), families.get(user, {}))
        for user in sorted({*tasks, *partitions, *families})
    }
    return export_document(
        shared, quantile=quantile, margin=margin, generated_at=generated_at, users=users,
        left_out=(history.unusable, history.over_cap), key=key, memory=memory, limits=site,
        credits=credits,
    )  # fmt: skip


def _not_published(store: Store) -> None:
    if store.published:
        raise InputError(
            f"cache {store.path} is a published copy: it holds no other user's history",
            hint="export from the working cache",
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


def write_atomically(path: str | os.PathLike[str], text: str, *, mode: int | None = None) -> Path:
    """Write text to path so that readers see the old file or the new one, never a mix.

    mode None: the mode and group of the file it replaces (FILE_MODE for a new one): a
    rewrite (the guard's heartbeat) keeps the export as private as ``advisor export`` made it.
    """
    target = Path(path)
    group = None
    if mode is None:
        try:
            info = os.stat(target)
            mode = stat.S_IMODE(info.st_mode)
            if os.geteuid() == 0 or info.st_gid in os.getgroups():  # one the writer may give
                group = info.st_gid
        except OSError:
            mode = FILE_MODE
    return write_file(target, text.encode("utf-8"), mode=mode, group=group)


def write_export(
    path: str | os.PathLike[str],
    document: Mapping[str, Any],
    *,
    cache: str | None = None,
    group: int | None = None,
) -> Path:
    """The export as compact JSON, atomically, where no one else can replace it (never the cache).

    Mode 0640 with the given group (default: the writer's).
    """
    text = json.dumps(document, sort_keys=True, allow_nan=False) + "\n"
    with open_target(path, cache=cache) as target:
        target.write(text.encode("utf-8"), mode=FILE_MODE, group=group)
    return Path(path)


def export_key(path: str | os.PathLike[str], *, cache: str | None, group: int | None) -> bytes:
    """The key of the export at path (``<path>.key``), made on first use.

    Made with the export's mode and group (0640: the writer and slurmctld).  An existing one
    must be a file of the writer's or root's that others cannot read, else InputError.
    """
    with open_target(f"{os.fspath(path)}.key", cache=cache) as target:
        try:
            fd = os.open(target.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC,
                         dir_fd=target.dir_fd)  # fmt: skip
        except FileNotFoundError:
            key = secrets.token_bytes(KEY_BYTES)
            target.write(key.hex().encode() + b"\n", mode=FILE_MODE, group=group)
            return key
        except OSError as error:
            raise AdvisorError(f"cannot read {target.shown}: {error.strerror}") from None
        try:
            info = os.fstat(fd)
            text = os.read(fd, 4 * KEY_BYTES)
        finally:
            os.close(fd)
    if info.st_uid not in (0, os.geteuid()) or info.st_mode & (
        stat.S_IROTH | stat.S_IWOTH | stat.S_IWGRP
    ):
        raise InputError(
            f"{target.shown}: the export's key is readable or writable by others "
            f"(mode {stat.S_IMODE(info.st_mode):04o}, uid {info.st_uid})",
            hint=f"remove it (a new one is made) or chmod 0640 {target.shown}",
        )
    try:
        key = bytes.fromhex(text.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise InputError(f"{target.shown}: not a key of {KEY_BYTES} bytes in hex",
                         hint="remove it: a new one is made")  # fmt: skip
    return key


def slurm_group(conf: str | os.PathLike[str] | None = None) -> int:
    """The group slurmctld reads as: SlurmUser's (slurm.conf), else the writer's own group."""
    try:
        where = conf or os.environ.get("SLURM_CONF") or DEFAULT_CONF
        user = conf_settings(Path(where)).get("slurmuser")
    except OSError:
        user = None
    if user:
        try:
            return pwd.getpwnam(user).pw_gid
        except KeyError:
            pass
    return os.getegid()


def group_id(name: str) -> int:
    """A group's id by name or number (UsageError when there is no such group)."""
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        if name.isascii() and name.isdigit():
            return int(name)
        raise UsageError(f"--group: there is no group {name!r}") from None


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
    store: Store,
    out: str | os.PathLike[str],
    *,
    quantile: float,
    margin: float,
    generated_at: str,
    group: int | None = None,
) -> Exported:
    """Check the target, build the export from the cache, write it (and its key) atomically.

    group: slurmctld's (default: slurm_group()).
    """
    check_output(out, cache=store.path)  # before the work, and again when writing
    _not_published(store)
    gid = slurm_group() if group is None else group
    key = export_key(out, cache=store.path, group=gid)
    document = export_from_cache(store, quantile=quantile, margin=margin,
                                 generated_at=generated_at, key=key)  # fmt: skip
    return Exported(write_export(out, document, cache=store.path, group=gid), document)
