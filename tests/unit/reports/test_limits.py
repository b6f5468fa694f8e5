"""``report limits`` against a direct computation from the ingested records."""

from __future__ import annotations

import json
import statistics
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.reports.jobs import replaced_time_s
from advisor.slurm.records import JobRecord
from advisor.store import Store
from advisor.store.accounting import save_jobs
from advisor.store.reports import JobFilter, jobs_with_advice
from advisor.validate import validate
from tests.helpers.report_cache import ADVISED, FOREIGN, advised_records, fill_cache, real_jobs


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fill_cache(tmp_path_factory.mktemp("limits") / "cache.db")


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _expected(records: list[JobRecord]) -> dict[tuple[str, str, str], dict[str, float]]:
    """The figures per (user, partition, task), straight from the records and the hand table."""
    hand = {(spec.cluster, str(spec.job_id)): spec for spec in ADVISED}
    groups: dict[tuple[str, str, str], list[JobRecord]] = {}
    for job in records:
        spec = hand.get((job.cluster, job.job_id))
        task = "align" if spec else job.name
        groups.setdefault((job.user, job.partition, task), []).append(job)
    out = {}
    for key, jobs in groups.items():
        limited = [j for j in jobs if j.timelimit_s]
        advised = [(j, hand[(j.cluster, j.job_id)]) for j in jobs if (j.cluster, j.job_id) in hand]
        out[key] = {
            "jobs": len(jobs),
            "timeouts": sum(j.state == "TIMEOUT" for j in jobs),
            "requested_h": sum(j.timelimit_s or 0 for j in limited) / 3600,
            "used_h": sum(j.elapsed_s for j in limited) / 3600,
            "median_time_eff": statistics.median(j.elapsed_s / (j.timelimit_s or 1) for j in limited),
            "core_h": sum(j.cpus * j.elapsed_s for j in jobs) / 3600,
            "unused_core_h": sum(j.cpus * max(0, (j.timelimit_s or 0) - j.elapsed_s) for j in limited) / 3600,
            "advised_jobs": len(advised),
            "advised_applied": sum(s.applied for _, s in advised),
            "advised_limit_h": sum(s.advisor_s for _, s in advised) / 3600,
            "advised_unused_core_h": sum(j.cpus * max(0, s.advisor_s - j.elapsed_s) for j, s in advised) / 3600,
            "saved_core_h": sum(
                j.cpus * (max(0, s.without_s - j.elapsed_s) - max(0, s.advisor_s - j.elapsed_s))
                for j, s in advised if s.without_s is not None
            ) / 3600,
        }  # fmt: skip
    return out


def test_limits_agree_with_a_direct_computation(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _json(capsys, "--db", str(cache), "report", "limits")
    validate(data, "report-limits", source="report limits")
    records = [*real_jobs(), *advised_records()]
    expected = _expected(records)
    got = {(r["user"], r["partition"], r["task"]): r for r in data["rows"]}
    assert set(got) == set(expected)
    for key, figures in expected.items():
        for name, value in figures.items():
            assert got[key][name] == pytest.approx(value), (key, name)
    assert data["total"]["jobs"] == len(records) == 26
    assert data["total"]["core_h"] == pytest.approx(
        sum(j.cpus * j.elapsed_s for j in records) / 3600
    )


def test_the_advisors_kills_and_their_cost(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = {
        (r["user"], r["partition"]): r
        for r in _json(capsys, "--db", str(cache), "report", "limits", "--task", "align")["rows"]
    }
    # 102 was killed at the advisor's 15 min (2 CPUs); 104 ran 25 min past an advised 20 min.
    assert rows[("alice", "cpu")]["advised_kills"] == 1
    assert rows[("alice", "cpu")]["lost_core_h"] == pytest.approx(2 * 900 / 3600)
    assert rows[("bob", "cpu")]["advised_kills"] == 1
    assert rows[("bob", "cpu")]["lost_core_h"] == pytest.approx(2 * 1200 / 3600)
    assert rows[("bob", "fat")]["advised_kills"] == 0  # 105: Lua's 10 min held


def test_advice_joins_by_cluster_and_job_id_arrays_and_tags(cache: Path) -> None:
    with Store.open(cache, readonly=True) as store:
        rows = {(r["cluster"], r["job_id"]): r for r in jobs_with_advice(store, JobFilter())}
    assert rows[("advisor", "106")]["advice_id"] is not None  # cluster-less advice, tagged job
    assert rows[("kth", "106")]["advice_id"] is None  # same id, other cluster, no tag
    assert rows[("advisor", "105")]["advice_id"] is None  # Lua: a tag only
    assert rows[("advisor", "49_1")]["advice_id"] is None


def test_an_array_shares_the_advice_of_its_job_id(tmp_path: Path) -> None:
    from advisor.store.advice import Advice, record_advice

    with Store.open(tmp_path / "a.db") as store:
        save_jobs(store, real_jobs())
        record_advice(
            store,
            Advice("root", "fill", ["x.sh"], "failed", task="array", job_id=49, cluster="advisor"),
        )
        record_advice(store, Advice("root", "fill", ["x.sh"], "submitted", task="array", limit_s=300,
                                    job_id=49, cluster="advisor"))  # fmt: skip
        rows = {r["job_id"]: r for r in jobs_with_advice(store, JobFilter())}
    # sacct shows 49_1 (JobIDRaw 54) and 49_2 (JobIDRaw 49): both are elements of array 49.
    assert rows["49_1"]["outcome"] == rows["49_2"]["outcome"] == "submitted"
    assert rows["49_1"]["advice_limit_s"] == 300
    assert rows["50"]["advice_id"] is None


def test_filters_select_by_end_user_partition_and_task(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ("--db", str(cache), "report", "limits", "--by", "user")
    everyone = _json(capsys, *base)["total"]["jobs"]
    assert _json(capsys, *base, "--user", "alice")["total"]["jobs"] == 4
    assert _json(capsys, *base, "--partition", "fat")["total"]["jobs"] == 3  # 40, 48 and 105
    assert _json(capsys, *base, "--task", "align")["total"]["jobs"] == len(ADVISED)
    # The capture's jobs ended on 2026-11-29 from 15:17:08 to 15:18:21 (42); the advised
    # copies of job 38 at 15:17:13.
    assert _json(capsys, *base, "--since", "2026-11-29T15:18:00")["total"]["jobs"] == 1
    assert _json(capsys, *base, "--until", "2026-11-29T15:17:10")["total"]["jobs"] == 2  # 36, 37
    assert _json(capsys, *base, "--since", "2026-11-30")["total"]["jobs"] == 0
    assert everyone == 26


def test_since_accepts_a_span_back_from_now(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = datetime.now().replace(microsecond=0)
    template = real_jobs()[0]

    jobs = [
        template._replace(job_id=str(i), job_id_raw=i, end=now - timedelta(days=days))
        for i, days in ((1, 1), (2, 3), (3, 10))
    ]
    with Store.open(tmp_path / "s.db") as store:
        save_jobs(store, jobs)
    assert (
        _json(capsys, "--db", str(tmp_path / "s.db"), "report", "limits", "--since", "7d")["total"][
            "jobs"
        ]
        == 2
    )
    assert (
        _json(capsys, "--db", str(tmp_path / "s.db"), "report", "limits", "--since", "2d")["total"][
            "jobs"
        ]
        == 1
    )


def test_the_users_time_replaced_by_the_advisor_is_read_from_the_argv() -> None:
    assert (
        replaced_time_s(json.dumps(["-t", "2:00:00", "-p", "cpu", "--time=00:10:00", "a.sh"]))
        == 7200
    )
    assert (
        replaced_time_s(json.dumps(["--time=00:10:00", "a.sh", "--time=5"])) is None
    )  # script args
    assert replaced_time_s(json.dumps(["--time", "UNLIMITED", "--time=00:10:00"])) is None
    assert replaced_time_s("not json") is None


def test_group_by_user_only_matches_the_per_user_sums(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = {
        r["user"]: r
        for r in _json(capsys, "--db", str(cache), "report", "limits", "--by", "user")["rows"]
    }
    records = [*real_jobs(), *advised_records()]
    for user in {j.user for j in records}:
        mine = [j for j in records if j.user == user]
        assert rows[user]["jobs"] == len(mine)
        unused = sum(
            j.cpus * max(0, (j.timelimit_s or 0) - j.elapsed_s) for j in mine if j.timelimit_s
        )
        assert rows[user]["unused_core_h"] == pytest.approx(unused / 3600)
    assert FOREIGN.user in rows


def test_a_real_swf_log_reproduces_the_published_overestimate(
    pwa_logs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """KTH SP2 (Parallel Workloads Archive): users asked for 2.4x the runtime, median per job."""
    epoch = datetime(1996, 9, 23)
    template = real_jobs()[0]
    records = []

    for line in pwa_logs["kth"].read_text().splitlines():
        if line.startswith(";") or not line.strip():
            continue
        f = [round(float(v)) for v in line.split()]
        if f[3] < 0:
            continue
        end = epoch + timedelta(seconds=f[1] + max(0, f[2]) + f[3])
        state = {1: "COMPLETED", 0: "FAILED", 5: "CANCELLED"}.get(f[10], "FAILED")
        records.append(template._replace(
            cluster="kth", job_id=str(f[0]), job_id_raw=f[0], user=f"u{f[11]}",
            partition=f"p{f[15]}", nodes=(), cpus=max(1, f[4]), elapsed_s=f[3],
            timelimit_s=f[8] if f[8] > 0 else None, state=state, end=end, comment="",
        ))  # fmt: skip
    with Store.open(tmp_path / "kth.db") as store:
        save_jobs(store, records)
    data = _json(capsys, "--db", str(tmp_path / "kth.db"), "report", "limits", "--by", "user",
                 "--sort", "unused_core_h", "--top", "5")  # fmt: skip
    validate(data, "report-limits", source="kth")
    assert data["total"]["jobs"] == len(records) == 28489
    assert 1 / data["total"]["median_time_eff"] == pytest.approx(2.4, abs=0.1)
    wasted = [row["unused_core_h"] for row in data["rows"]]
    assert len(wasted) == 5 and wasted == sorted(wasted, reverse=True)
    per_user: dict[str, float] = {}
    for job in records:
        if job.timelimit_s:
            per_user[job.user] = (
                per_user.get(job.user, 0)
                + job.cpus * max(0, job.timelimit_s - job.elapsed_s) / 3600
            )
    assert wasted[0] == pytest.approx(max(per_user.values()))


def test_each_partitions_kill_budget_stands_beside_its_realised_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # what accounting counted of the advised limits: 1 kill among 199 completed jobs of cpu
    from advisor.history.budget import KillBudget
    from advisor.history.cache import save_budgets

    cache = fill_cache(tmp_path / "cache.db")
    with Store.open(cache) as store:
        save_budgets(store, {"cpu": KillBudget(0.01, 10.0, 1.0, 199, 1, 40)})
    data = _json(capsys, "--db", str(cache), "report", "limits")
    validate(data, "report-limits", source="report limits")
    (cpu,) = [row for row in data["budgets"] if row["partition"] == "cpu"]
    assert (cpu["budget_pct"], cpu["realised_pct"]) == (1.0, 0.5)
    assert (cpu["completed"], cpu["advised_completed"], cpu["killed"]) == (199, 40, 1)
    assert main(["--db", str(cache), "report", "limits"]) == 0
    assert "Kill budget per partition" in capsys.readouterr().out


def test_spool_lines_a_jobs_record_does_not_confirm_are_not_counted_as_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31, N14: ten spool lines claiming mallory's own plain jobs 150-159 (their real 10 h
    limit, a prediction just below) made her row 10 advised jobs with a faked calibration."""
    from advisor.store.advice import Advice, record_advice

    start = datetime(2026, 12, 1, 8, 0)
    tag = "advisor:wrapper,action=set,limit=60,q=0.95,task=align"
    jobs = [
        JobRecord("advisor", str(150 + i), 150 + i, "sim", "mallory", "lab", "cpu", ("c1",), 1,
                  100.0, 3000, 36000, None, "COMPLETED", None, 0, 0, start, start,
                  start + timedelta(seconds=3000), "")
        for i in range(10)
    ] + [
        JobRecord("advisor", "170", 170, "align", "alice", "lab", "cpu", ("c1",), 1, 100.0, 3000,
                  3600, None, "COMPLETED", None, 0, 0, start, start,
                  start + timedelta(seconds=3000), tag),
    ]  # fmt: skip
    path = tmp_path / "cache.db"
    with Store.open(path) as store:
        save_jobs(store, jobs)
        for job in jobs:
            limit = 3600 if job.user == "alice" else 36000
            record_advice(store, Advice(job.user, "fill", ["sbatch"], "submitted", task=job.name,
                                        partition="cpu", limit_s=limit, predicted_s=limit - 600,
                                        cluster="advisor", job_id=job.job_id_raw),
                          origin="spool")  # fmt: skip
    data = _json(capsys, "--db", str(path), "report", "limits", "--by", "user")
    validate(data, "report-limits", source="report limits")
    rows = {r["user"]: r for r in data["rows"]}
    assert (rows["mallory"]["advised_jobs"], rows["mallory"]["advised_unverified"]) == (0, 10)
    assert (rows["alice"]["advised_jobs"], rows["alice"]["advised_unverified"]) == (1, 0)
