"""``advisor doctor``: is the advisor set up for the site?  One line per check, with what to do.

Each check looks at files only (the cache, the published copy, the limits export, slurm.conf and
the Lua plugin beside it); nothing is changed and Slurm is not asked.  A check fails when jobs
would go without advice, and warns when the advice is getting old.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from advisor.errors import AdvisorError
from advisor.slurm.conf import conf_file, conf_settings, lua_export_path
from advisor.store.connection import SCHEMA_VERSION, SHARED_COPY, Store, db_location

OK, WARN, FAIL = "ok", "warn", "fail"
#: The site layout of contrib/site/README.md.
PUBLISHED = "/var/cache/slurm-advisor"
EXPORT = "/etc/slurm/advisor-limits.json"
#: A user with no rights of its own: what every user can read, it can.
ANY_USER = "nobody"


class Check(NamedTuple):
    """One line of the doctor's answer."""

    check: str
    status: str
    detail: str
    todo: str = ""


@dataclass(frozen=True)
class DoctorRequest:
    """Where the site's files are, and how old is too old."""

    db: str | None = None
    published: str = PUBLISHED
    export: str = EXPORT
    slurm_conf: str | None = None  # None: $SLURM_CONF, else Slurm's default, as Slurm reads it
    slurm_user: str = "slurm"
    max_export_age_s: float = 2 * 86400
    max_update_age_s: float = 86400
    now: Callable[[], datetime] = datetime.now


def unreadable_for(path: Path, user: str) -> str | None:
    """Why user cannot read path (a directory on the way, or the file's mode), or None."""
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return f"there is no user {user!r}"
    if entry.pw_uid == 0:
        return None
    groups = {entry.pw_gid, *(g.gr_gid for g in grp.getgrall() if user in g.gr_mem)}

    def allowed(where: Path, owner: int, group: int, other: int) -> bool:
        info = where.stat()
        if info.st_uid == entry.pw_uid:
            return bool(info.st_mode & owner)
        if info.st_gid in groups:
            return bool(info.st_mode & group)
        return bool(info.st_mode & other)

    resolved = path.resolve()
    for parent in reversed(resolved.parents):
        if not allowed(parent, stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH):
            return f"{user} cannot enter {parent}"
    if not allowed(resolved, stat.S_IRUSR, stat.S_IRGRP, stat.S_IROTH):
        return f"{user} may not read it (mode {stat.filemode(resolved.stat().st_mode)})"
    return None


def _age(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _cache(request: DoctorRequest) -> list[Check]:
    """The working cache, its schema version and the update watermark."""
    from advisor.services.update import WATERMARK_SOURCE
    from advisor.store.accounting import get_watermark

    path = db_location(request.db)
    if not os.path.exists(path):
        return [Check("cache", FAIL, f"no cache at {path}",
                      "run 'advisor update' (or give --db / $ADVISOR_DB)")]  # fmt: skip
    try:
        with Store.open(path, readonly=True, busy_timeout_s=5.0) as store:
            version = store.version
            mark = get_watermark(store, WATERMARK_SOURCE)
    except AdvisorError as error:
        return [
            Check("cache", OK, f"{path} exists"),
            Check("schema version", FAIL, error.one_line(), getattr(error, "hint", "") or ""),
        ]
    checks = [
        _private(path),
        Check("schema version", OK, f"{version} (this advisor's: {SCHEMA_VERSION})"),
    ]
    if mark is None:
        checks.append(Check("advisor update", WARN, "has never ingested sacct into this cache",
                            "run 'advisor update' (contrib/systemd: advisor-update.timer)"))  # fmt: skip
        return checks
    when = datetime.fromisoformat(mark)
    now = request.now().astimezone(when.tzinfo) if when.tzinfo else request.now()
    age = (now - when).total_seconds()
    if age > request.max_update_age_s:
        checks.append(Check("advisor update", WARN, f"last ingested up to {mark} ({_age(age)} ago)",
                            "run 'advisor update'; is advisor-update.timer enabled?"))  # fmt: skip
    else:
        checks.append(Check("advisor update", OK, f"ingested up to {mark} ({_age(age)} ago)"))
    return checks


def _private(path: str) -> Check:
    """The working cache: it and its journals readable by their owner only.

    It holds every user's argv (--export values, --wrap commands), job names, comments and
    accounts: a cache others can read, or a directory that lets them in to one, gives all of it
    away (issue 31, N5).
    """
    open_to = [
        f"{name} (mode {stat.S_IMODE(info.st_mode):04o})"
        for name in (path, f"{path}-wal", f"{path}-shm", f"{path}-journal")
        if (info := _stat(name)) is not None and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO)
    ]
    if open_to:
        return Check("cache", FAIL, f"others may read {', '.join(open_to)}",
                     f"chmod 0600 {path}*; chmod 0700 {os.path.dirname(path) or '.'}")  # fmt: skip
    return Check("cache", OK, f"{path}, readable by its owner only")


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _published(request: DoctorRequest) -> Check:
    """The copies users' wrappers read: shared.db for all, each user's file for that user only."""
    path = Path(request.published)
    todo = f"run 'advisor publish --out {path}' after each update"
    if path.is_file():
        return Check("published copy", FAIL, f"{path} is one file for every user, as older "
                     "versions published: it gives each user every user's jobs",
                     f"publish into a directory and set users' ADVISOR_DB to it: {todo}")  # fmt: skip
    shared = path / SHARED_COPY
    if not shared.exists():
        return Check("published copy", FAIL, f"no {SHARED_COPY} in {path}", todo)
    why = unreadable_for(shared, ANY_USER)
    if why:
        return Check("published copy", FAIL, f"{shared}: {why}",
                     "publish into a directory every user can enter (contrib/site/README.md)")  # fmt: skip
    try:
        with Store.open(path, readonly=True, busy_timeout_s=5.0, uid=-1):
            pass
    except AdvisorError as error:
        return Check("published copy", FAIL, error.one_line(), todo)
    open_to = []
    for entry in sorted(path.iterdir()):
        if entry.suffix == ".db" and entry.stem.isdigit():
            info = entry.stat()
            if info.st_uid != int(entry.stem) or info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                open_to.append(
                    f"{entry.name} (uid {info.st_uid}, mode {stat.S_IMODE(info.st_mode):04o})"
                )
    if open_to:
        return Check("published copy", FAIL, f"users' own files others may read: {', '.join(open_to)}",
                     f"{todo} (as root)")  # fmt: skip
    cache = db_location(request.db)
    if os.path.exists(cache) and os.path.getmtime(cache) - shared.stat().st_mtime > 3600:
        return Check(
            "published copy", WARN, f"{shared} is older than the cache by over an hour", todo
        )
    return Check("published copy", OK, f"{path}: {SHARED_COPY} for every user, each user's own "
                 "file for that user only")  # fmt: skip


def _export(request: DoctorRequest) -> Check:
    """The limits file job_submit.lua reads."""
    from advisor.validate import load_json

    path = Path(request.export)
    todo = f"run 'advisor export --out {path}' after each update"
    if not path.exists():
        return Check("limits export", FAIL, f"no limits file at {path}", todo)
    why = unreadable_for(path, request.slurm_user)
    if why:
        return Check(
            "limits export", FAIL, f"{path}: {why}",
            f"chgrp {request.slurm_user} {path}*; chmod 0640 {path}* (or: advisor export --group)",
        )  # fmt: skip
    for file in (path, Path(f"{path}.key")):
        if file.exists() and unreadable_for(file, ANY_USER) is None:
            return Check("limits export", FAIL, f"{file}: every user may read it (each user's "
                         "limits, or the key of their job names)",
                         f"chmod 0640 {path}*; chgrp {request.slurm_user} {path}*")  # fmt: skip
    try:
        load_json(path, "export")
    except AdvisorError as error:
        return Check("limits export", FAIL, error.one_line(), todo)
    age = request.now().timestamp() - path.stat().st_mtime
    if age > request.max_export_age_s:
        return Check("limits export", WARN, f"{path} was written {_age(age)} ago", todo)
    return Check("limits export", OK, f"{path}, {_age(age)} old, readable by {request.slurm_user}")


def _plugin(request: DoctorRequest) -> Check:
    """JobSubmitPlugins=lua in slurm.conf, and the job_submit.lua beside it reading the export."""
    conf = Path(request.slurm_conf or conf_file())
    try:
        plugins = conf_settings(conf).get("jobsubmitplugins", "")
    except OSError as error:
        return Check("lua plugin", FAIL, f"cannot read {conf}: {error.strerror}",
                     "give --slurm-conf (or $SLURM_CONF)")  # fmt: skip
    if "lua" not in {p.strip().removeprefix("job_submit/") for p in plugins.split(",")}:
        return Check("lua plugin", FAIL, f"{conf} has no JobSubmitPlugins=lua",
                     "add JobSubmitPlugins=lua, then 'scontrol reconfigure' (contrib/job_submit)")  # fmt: skip
    script = conf.parent / "job_submit.lua"
    try:
        reads = lua_export_path(script)
    except OSError as error:
        return Check("lua plugin", FAIL, f"cannot read {script}: {error.strerror}",
                     f"install slurm/job_submit.lua as {script}")  # fmt: skip
    if reads is None or os.path.realpath(reads) != os.path.realpath(request.export):
        return Check("lua plugin", FAIL, f"{script} reads {reads}, not {request.export}",
                     f"export to {reads}, or give --export {reads}")  # fmt: skip
    return Check("lua plugin", OK, f"JobSubmitPlugins=lua; {script} reads {reads}")


def guard_check(request: DoctorRequest) -> Check | None:
    """The guard's heartbeat in the cache: whether ``guarded`` may tighten now (None: no cache).

    A stale heartbeat only warns: jobs it tightened are no longer raised, and new ones are not
    tightened (the wrapper and the plugin fall back to ``fill`` by themselves).
    """
    from advisor.store.guard import guard_alive

    path = db_location(request.db)
    try:
        with Store.open(path, readonly=True, busy_timeout_s=5.0) as store:
            fresh, age = guard_alive(store, now=request.now().timestamp())
    except AdvisorError:
        return None  # the cache checks above say why
    if age is None:
        return Check("guard", OK, "not running (no heartbeat): policy guarded acts as fill",
                     "to tighten users' own --time safely: contrib/systemd/advisor-guard.service")  # fmt: skip
    if fresh:
        return Check("guard", OK, f"alive (heartbeat {age:.0f} s old)")
    return Check("guard", WARN, f"heartbeat {_age(age)} old: jobs it tightened are not raised",
                 "systemctl status advisor-guard (or run 'advisor guard --once' from cron)")  # fmt: skip


@dataclass(frozen=True)
class Diagnosis:
    """Every check's answer, in order (schemas/doctor-output.json)."""

    checks: tuple[Check, ...]

    @property
    def failed(self) -> int:
        """Checks that failed (the command then exits 1)."""
        return sum(1 for c in self.checks if c.status == FAIL)

    @property
    def warnings(self) -> int:
        """Checks that warned."""
        return sum(1 for c in self.checks if c.status == WARN)

    def to_json(self) -> dict[str, Any]:
        """The document ``advisor doctor`` prints."""
        return {"checks": [c._asdict() for c in self.checks], "failed": self.failed,
                "warnings": self.warnings}  # fmt: skip


def run_doctor(request: DoctorRequest) -> Diagnosis:
    """Every check, in the order an administrator sets things up."""
    checks = [*_cache(request), _published(request), _export(request), _plugin(request)]
    guard = guard_check(request)
    return Diagnosis(tuple([*checks, guard] if guard else checks))
