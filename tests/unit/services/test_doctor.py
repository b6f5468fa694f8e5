"""advisor doctor's file checks off the cluster (tests/integration/test_doctor.py injects faults)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.services.doctor import DoctorRequest, unreadable_for
from advisor.services.doctor import _plugin as plugin_check
from advisor.slurm.conf import conf_settings, lua_export_path
from advisor.validate import validate
from tests.helpers.paths import REPO


def test_the_plugin_in_the_repository_reads_the_default_export() -> None:
    assert lua_export_path(REPO / "slurm" / "job_submit.lua") == "/etc/slurm/advisor-limits.json"


def test_slurm_conf_settings_last_wins_and_comments_drop(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("JobSubmitPlugins=lua\n#JobSubmitPlugins=none\njobsubmitplugins=lua,pbs # x\n")
    assert conf_settings(conf)["jobsubmitplugins"] == "lua,pbs"


def test_a_private_directory_is_unreadable_for_nobody(tmp_path: Path) -> None:
    secret = tmp_path / "private" / "file"
    secret.parent.mkdir(mode=0o700)
    secret.write_text("x")
    secret.chmod(0o644)
    assert "cannot enter" in (unreadable_for(secret, "nobody") or "")
    assert unreadable_for(secret, "root") is None
    assert "no user" in (unreadable_for(secret, "no-such-user-here") or "")


def test_nothing_set_up_fails_with_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\n")
    code = main(["--db", str(tmp_path / "none.db"), "doctor", "--format", "json", "--slurm-conf",
                 str(conf), "--published", str(tmp_path / "p.db"), "--export",
                 str(tmp_path / "e.json")])  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    validate(data, "doctor-output", source="doctor")
    assert code == 1
    statuses = {c["check"]: c["status"] for c in data["checks"]}
    assert statuses == {"cache": "fail", "published copy": "fail", "limits export": "fail",
                        "lua plugin": "fail"}  # fmt: skip
    assert all(c["todo"] for c in data["checks"])


def test_the_plugin_check_reads_slurm_conf_from_the_environment_as_slurm_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "site" / "slurm.conf"
    conf.parent.mkdir()
    conf.write_text("ClusterName=x\nJobSubmitPlugins=lua\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    check = plugin_check(DoctorRequest(export=str(tmp_path / "e.json")))
    # JobSubmitPlugins=lua was read from $SLURM_CONF; job_submit.lua is looked for beside it
    assert f"cannot read {conf.parent / 'job_submit.lua'}" in check.detail
    given = tmp_path / "other.conf"
    given.write_text("ClusterName=x\n")
    check = plugin_check(DoctorRequest(slurm_conf=str(given)))  # --slurm-conf wins
    assert check.status == "fail" and f"{given} has no JobSubmitPlugins=lua" in check.detail


@pytest.mark.parametrize(("age_s", "status", "detail"), [
    (None, "ok", "not running"),
    (5.0, "ok", "alive"),
    (600.0, "warn", "jobs it tightened are not raised"),
])  # fmt: skip
def test_the_guard_line_reads_the_heartbeat(tmp_path: Path, age_s: float | None, status: str,
                                            detail: str) -> None:  # fmt: skip
    from datetime import UTC, datetime

    from advisor.services.doctor import DoctorRequest, guard_check
    from advisor.store import Store
    from advisor.store.guard import Heartbeat, write_heartbeat

    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    cache = tmp_path / "cache.db"
    with Store.open(cache) as store:
        if age_s is not None:
            write_heartbeat(store, Heartbeat(now.timestamp() - age_s, "h", 1, 10, 0, 0))
    check = guard_check(DoctorRequest(db=str(cache), now=lambda: now))
    assert check is not None
    assert (check.check, check.status) == ("guard", status)
    assert detail in check.detail
