"""advisor doctor on the real cluster: all ok when the site is set up, and each injected fault found.

Run under the cluster lock: it writes /etc/slurm/advisor-limits.json (the path job_submit.lua
reads) and edits slurm.conf and job_submit.lua for two faults; every file is restored.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.validate import validate
from tests.helpers.cluster import remove_export

pytestmark = pytest.mark.usefixtures("slurm_cluster")

SLURM_CONF = Path("/etc/slurm/slurm.conf")
LUA = SLURM_CONF.parent / "job_submit.lua"
EXPORT = SLURM_CONF.parent / "advisor-limits.json"
EXPORT_KEY = SLURM_CONF.parent / "advisor-limits.json.key"


class Site:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache = root / "work" / "cache.db"
        self.published = root / "pub"

    def doctor(self, capsys: pytest.CaptureFixture[str], *extra: str,
               db: Path | None = None) -> tuple[int, dict[str, dict[str, str]]]:  # fmt: skip
        code = main(["--db", str(db or self.cache), "doctor", "--format", "json",
                     "--published", str(self.published), "--export", str(EXPORT), *extra])  # fmt: skip
        data = json.loads(capsys.readouterr().out)
        validate(data, "doctor-output", source="advisor doctor")
        return code, {c["check"]: c for c in data["checks"]}


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    """A working cache that 'advisor update' ingested into, its published copy, the export."""
    root = Path(tempfile.mkdtemp(prefix="advisor-doctor-"))
    os.chmod(root, 0o755)  # noqa: S103 -- every user must reach the published copy
    saved = EXPORT.read_bytes() if EXPORT.exists() else None
    s = Site(root)
    since = (datetime.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    try:
        assert main(["--db", str(s.cache), "cluster", "--save"]) == 0
        assert main(["--db", str(s.cache), "update", "--since", since]) == 0
        s.published.mkdir(mode=0o755)
        assert main(["--db", str(s.cache), "publish", "--out", str(s.published)]) == 0
        assert main(["--db", str(s.cache), "export", "--out", str(EXPORT)]) == 0
        yield s
    finally:
        remove_export()
        if saved is not None:
            EXPORT.write_bytes(saved)
        shutil.rmtree(root)


def test_a_set_up_site_is_all_ok(site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    code, checks = site.doctor(capsys)
    assert code == 0, checks
    assert {c["status"] for c in checks.values()} == {"ok"}
    assert set(checks) >= {"cache", "schema version", "advisor update", "published copy",
                           "limits export", "lua plugin"}  # fmt: skip


def test_a_missing_cache_fails(site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    code, checks = site.doctor(capsys, db=site.root / "nothing.db")
    assert code == 1 and checks["cache"]["status"] == "fail"
    assert "advisor update" in checks["cache"]["todo"]
    assert not (site.root / "nothing.db").exists()


def test_an_old_schema_version_fails(site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    old = site.root / "old.db"
    shutil.copy(site.cache, old)
    with sqlite3.connect(old) as conn:
        conn.execute("PRAGMA user_version = 1")
    code, checks = site.doctor(capsys, db=old)
    assert code == 1 and checks["schema version"]["status"] == "fail"
    assert "schema version 1" in checks["schema version"]["detail"]


def test_a_stale_update_warns(site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    stale = site.root / "stale.db"
    shutil.copy(site.cache, stale)
    with sqlite3.connect(stale) as conn:
        conn.execute("UPDATE watermarks SET value = '2020-01-01T00:00:00' WHERE source = 'sacct'")
    code, checks = site.doctor(capsys, db=stale)
    assert checks["advisor update"]["status"] == "warn"
    assert code == 0  # a warning is no failure


@pytest.mark.parametrize("fault", ["file", "directory"])
def test_a_copy_users_cannot_read_fails(
    site: Site, capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    target = site.published / "shared.db" if fault == "file" else site.published
    mode = target.stat().st_mode
    os.chmod(target, 0o600 if fault == "file" else 0o700)
    try:
        code, checks = site.doctor(capsys)
    finally:
        os.chmod(target, mode)
    assert code == 1 and checks["published copy"]["status"] == "fail"
    assert "nobody" in checks["published copy"]["detail"]


def test_an_export_slurm_cannot_read_fails_and_an_old_one_warns(
    site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    os.chmod(EXPORT, 0o600)
    try:
        code, checks = site.doctor(capsys)
    finally:
        os.chmod(EXPORT, 0o640)
    assert code == 1 and checks["limits export"]["status"] == "fail"
    assert "slurm may not read" in checks["limits export"]["detail"]
    for path in (EXPORT, EXPORT_KEY):  # issue 31 N4: every user read each user's limits
        os.chmod(path, 0o644)
        try:
            code, checks = site.doctor(capsys)
        finally:
            os.chmod(path, 0o640)
        assert code == 1 and checks["limits export"]["status"] == "fail"
        assert "every user may read it" in checks["limits export"]["detail"], path
    stat = EXPORT.stat()
    old = stat.st_mtime - 5 * 86400
    os.utime(EXPORT, (old, old))
    try:
        code, checks = site.doctor(capsys)
    finally:
        os.utime(EXPORT, (stat.st_atime, stat.st_mtime))
    assert code == 0 and checks["limits export"]["status"] == "warn"


def test_a_broken_export_fails(site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    good = EXPORT.read_bytes()
    EXPORT.write_text('{"version": ')
    try:
        code, checks = site.doctor(capsys)
    finally:
        EXPORT.write_bytes(good)
    assert code == 1 and checks["limits export"]["status"] == "fail"


@pytest.mark.parametrize(
    ("path", "old", "new"),
    [
        (SLURM_CONF, "JobSubmitPlugins=lua", "#JobSubmitPlugins=lua"),
        (
            LUA,
            'local EXPORT_PATH = "/etc/slurm/advisor-limits.json"',
            'local EXPORT_PATH = "/etc/slurm/elsewhere.json"',
        ),
    ],
    ids=["no-plugin", "plugin-reads-elsewhere"],
)
def test_a_plugin_that_is_off_or_reads_another_file_fails(
    site: Site, capsys: pytest.CaptureFixture[str], path: Path, old: str, new: str
) -> None:
    original = path.read_bytes()
    assert old.encode() in original
    stat = path.stat()
    path.write_bytes(original.replace(old.encode(), new.encode()))
    try:
        code, checks = site.doctor(capsys)
    finally:
        path.write_bytes(original)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert code == 1 and checks["lua plugin"]["status"] == "fail"
    assert checks["lua plugin"]["todo"]
