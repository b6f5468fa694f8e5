"""Jobs crafted by one user against everyone's advisor (issue 16: findings 2, 10, 11, 12).

Each test reproduces an attack on the records as they reach accounting: a real captured sacct
row (job 38 of tests/data/slurm/sacct_allocations_x1f.txt, Slurm 22.05.8) with the fields the
attacker controls (comment, job name, time limit, outcome) replaced, ingested through
``advisor update --sacct-file`` and read back by both reports.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from advisor.accounting.mapping import observation_source
from advisor.advice.settings import parse_command_line
from advisor.advice.tag import parse_tag
from advisor.cli import main
from advisor.errors import InputError, UsageError
from advisor.history.budget import KillBudget
from advisor.history.cache import load_budget, load_key_states, save_budgets, save_cells
from advisor.history.cells import BELOW, ScoreCell, key_cell
from advisor.history.keys import KINDS, HistoryKey
from advisor.history.lookup import history_limit
from advisor.services.predict import predict_runtime
from advisor.slurm.records import JobRecord
from advisor.slurm.timefmt import parse_timelimit
from advisor.store import Store
from advisor.store.accounting import save_jobs
from advisor.store.advice import Advice, record_advice
from advisor.store.observations import Observation
from advisor.store.reports import JobFilter, jobs_with_advice
from tests.helpers.hostile_jobs import UNICODE_DIGITS, alices_history, dump, job, timed_out
from tests.helpers.report_cache import GB, fill_cache


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """Run the advisor CLI with --format json; (exit code, parsed output or None, stderr)."""
    code = main([*argv, "--format", "json"])
    out = capsys.readouterr()
    return code, json.loads(out.out) if out.out.strip() else None, out.err


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return fill_cache(tmp_path / "cache.db")


# --- finding 2: a Unicode digit in a tag ---------------------------------------------------------


@pytest.mark.parametrize("digit", UNICODE_DIGITS)
@pytest.mark.parametrize("field", ["in", "limit", "q"])
def test_a_tag_number_is_ascii_digits_or_nothing(field: str, digit: str) -> None:
    # Regression: '²'.isdigit() is True but int('²') raises ValueError, so in=² raised in every
    # caller of parse_tag; int('١') is 1, so limit=١ claimed a limit sbatch never printed.
    fields = {"limit": "1", "in": "100", "q": "0.9"} | {field: digit}
    tag = parse_tag("advisor:x,action=set," + ",".join(f"{k}={v}" for k, v in fields.items()))
    if field == "limit":
        assert tag is None
    else:
        assert tag is not None and tag.limit_min == 1
        assert (tag.input_bytes, tag.quantile) == ((None, 0.9) if field == "in" else (100, None))


@pytest.mark.parametrize(
    ("text", "expected"),
    [("limit=10,in=4096,q=0.95", (10, 4096, 0.95)), ("limit=0010,q=1e-05", (10, None, 1e-05)),
     ("limit=1,q=nan", (1, None, None)), ("limit=1,q=1.5", (1, None, None)),
     ("limit=1,q=inf", (1, None, None)), ("limit=1,in=" + "9" * 400, (1, None, None)),
     ("limit=" + "9" * 400, None), ("limit=-1", None), ("limit=+1", None), ("limit= 1", None),
     ("limit=1_0", None), ("limit=1,in=1_024", (1, None, None)), ("limit=1,in=+5", (1, None, None))],
)  # fmt: skip
def test_tag_numbers_follow_ascii_rules(text: str, expected: tuple[Any, ...] | None) -> None:
    tag = parse_tag(f"advisor:wrapper,action=set,{text}")
    assert (None if tag is None else (tag.limit_min, tag.input_bytes, tag.quantile)) == expected


def test_a_unicode_digit_in_a_tag_is_ingested_and_both_reports_run(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Regression: ValueError in ingestion on every run (the watermark stayed put), and in
    # 'report limits' / 'report accuracy'.
    hostile = [
        job(900 + i, comment=f"advisor:x,action=set,limit=60,task=align,{field}={digit}")
        for i, (field, digit) in enumerate((f, d) for f in ("in", "q", "limit") for d in UNICODE_DIGITS)
    ]  # fmt: skip
    path = dump(tmp_path / "sacct.txt", [*hostile, job(999, user="alice")])
    code, result, err = cli(capsys, "--db", str(cache), "update", "--sacct-file", str(path))
    assert code == 0, err
    assert result["stored"] == len(hostile) + 1
    for report in ("limits", "accuracy"):
        code, data, err = cli(capsys, "--db", str(cache), "report", report)
        assert code == 0, (report, err)
        assert data["rows"], report


@pytest.mark.parametrize("digits", ["١٠", "１０", "²"])
def test_the_wrapper_reads_numbers_as_sbatch_does_ascii_only(digits: str) -> None:
    # sbatch refuses --time=١٠ (time_str2mins reads ASCII digits); the wrapper took it for 10
    # minutes, and float() read --quantile ٠.٩ as 0.9.
    with pytest.raises(InputError):
        parse_timelimit(digits)
    with pytest.raises(UsageError):
        parse_command_line(["--advisor-quantile", f"0.{digits}", "job.sh"])
    with pytest.raises(UsageError):
        parse_command_line(["--advisor-insitu", "steps.csv", "--advisor-steps", digits, "job.sh"])


# --- finding 10: forged tags on one's own jobs move everyone's limits -----------------------------


def alices_limit_min(cache: Path) -> float | None:
    with Store.open(cache, readonly=True) as store:
        found = history_limit(store, "alice", "sim", "cpu")
    return None if found is None else found[0] / 60


def ingest(
    capsys: pytest.CaptureFixture[str], cache: Path, path: Path, jobs: Sequence[JobRecord]
) -> None:
    code, result, err = cli(
        capsys, "--db", str(cache), "update", "--sacct-file", str(dump(path, jobs))
    )
    assert code == 0 and result["stored"] == len(jobs), err


def record_limits(cache: Path, jobs: Sequence[JobRecord], *, user: str | None = None) -> None:
    """Advice rows claiming that the advisor set each job's limit (as user, default the job's)."""
    with Store.open(cache) as store:
        for j in jobs:
            record_advice(store, Advice(user=user or j.user, policy="history", argv=["-t", "1"],
                                        outcome="submitted", task=j.name, partition=j.partition,
                                        limit_s=j.timelimit_s, cluster=j.cluster,
                                        job_id=j.job_id_raw))  # fmt: skip


def earn(cache: Path) -> KillBudget:
    """Partition cpu's budget and cells as thousands of calm completed jobs leave them."""
    budget = KillBudget(0.01, math.log(1000.0), credit=20.0, completed=5000)
    calm = ScoreCell.of(tuple([BELOW] * 1000 + [-2.0 - i / 1000 for i in range(1000)]))
    with Store.open(cache) as store:
        save_budgets(store, {"cpu": budget})
        save_cells(store, {key_cell("cpu", kind): calm for kind in KINDS})
    return budget


def cpu_budget(cache: Path) -> KillBudget:
    with Store.open(cache, readonly=True) as store:
        found = load_budget(store, "cpu")
    assert found is not None
    return found


def test_forged_tags_on_ones_own_timeouts_do_not_move_another_users_limit(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Regression: 40 of mallory's own jobs, each killed at -t 1 with a forged tag, took
    # alice's limit from 70 to 1120 min (the site budget doubled the widening per kill).  A
    # tag alone proves nothing: only kills at limits the advisor recorded cost the partition.
    ingest(capsys, cache, tmp_path / "alice.txt", alices_history())
    earned = earn(cache)
    before = alices_limit_min(cache)
    assert before is not None
    ingest(
        capsys, cache, tmp_path / "flood.txt", [timed_out(2000 + i, "mallory") for i in range(40)]
    )
    assert alices_limit_min(cache) == before
    assert cpu_budget(cache).killed == 0 and cpu_budget(cache).log_price == earned.log_price
    with Store.open(cache, readonly=True) as store:
        mine = load_key_states(store, [HistoryKey("user+name", "mallory", "flood")])
    flood = mine[HistoryKey("user+name", "mallory", "flood")]
    assert flood.runs == ((65.0, True),) * 40 and flood.kills == 40  # mallory's own key learns


@pytest.mark.parametrize(
    ("killed", "recorded_by", "counted"),
    [
        # mallory's own spool can hold advice rows for mallory's own jobs: they are limits the
        # advisor set, and their kills cost the partition: limits only grow more cautious.
        ("mallory", None, 40),
        # A slow-down that kills one advised job of each of 40 users (advice rows their
        # wrappers recorded) costs the partition too.
        ("40 users", None, 40),
        # An advice row of another user's (mallory's spool claiming their job ids) proves nothing.
        ("40 users", "mallory", 0),
    ],
)
def test_only_kills_at_limits_the_advisor_recorded_cost_the_partition(
    cache: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    killed: str,
    recorded_by: str | None,
    counted: int,
) -> None:
    ingest(capsys, cache, tmp_path / "alice.txt", alices_history())
    earn(cache)
    before = alices_limit_min(cache)
    assert before is not None
    kills = [
        timed_out(2000 + i, "mallory" if killed == "mallory" else f"user{i}") for i in range(40)
    ]
    record_limits(cache, kills, user=recorded_by)
    ingest(capsys, cache, tmp_path / "kills.txt", kills)
    assert cpu_budget(cache).killed == counted
    after = alices_limit_min(cache)
    if counted:
        assert after is None or after >= before  # more cautious, never tighter
    else:
        assert after == before


# --- finding 11: spool rows claiming another user's job ids ---------------------------------------


def test_the_report_join_takes_only_the_jobs_own_users_advice(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Regression: mallory's newer advice row for alice's job 101 (and for 999, a job without
    # advice) became those jobs' advice in every report.
    with Store.open(cache) as store:
        store.conn.execute("DELETE FROM accounting_jobs WHERE job_id = '999'")
        save_jobs(store, [job(999, user="alice", name="plain.sh")])
        for job_id in (101, 999):
            record_advice(store, Advice(user="mallory", policy="fill", argv=["stolen.sh"],
                                        outcome="submitted", task="stolen", partition="cpu",
                                        limit_s=60, cluster="advisor", job_id=job_id))  # fmt: skip
    code, data, err = cli(capsys, "--db", str(cache), "report", "limits", "--by", "task",
                          "--user", "alice")  # fmt: skip
    assert code == 0, err
    tasks = {row["task"]: row for row in data["rows"]}
    assert "stolen" not in tasks
    assert "plain.sh" in tasks and tasks["plain.sh"]["advised_jobs"] == 0
    with Store.open(cache, readonly=True) as store:
        rows = {r["job_id"]: r for r in jobs_with_advice(store, JobFilter(user="alice"))}
    assert (rows["101"]["advice_task"], rows["101"]["advice_limit_s"]) == ("align", 900)
    assert rows["999"]["advice_id"] is None


# --- finding 12: an empty sacct User moved everyone's shared model -------------------------------


def test_a_job_without_a_user_moves_no_shared_model(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Regression: job_observation made an empty User None, which online.py and learn took for
    # an administrator's import: twenty slow runs moved alice's (everyone's) prediction.
    def alices_p95() -> float:
        with Store.open(cache, readonly=True) as store:
            rows = predict_runtime(store, "align", 3 * GB, node="c1", user="alice").to_json()[
                "predictions"
            ]
        return float(rows[0]["p95_s"])

    before = alices_p95()
    slow = [job(3000 + i, user="", name="align", elapsed_s=5000, timelimit_s=7200,
                comment=f"advisor:wrapper,action=set,limit=120,task=align,in={int(3 * GB)}")
            for i in range(20)]  # fmt: skip
    ingest(capsys, cache, tmp_path / "slow.txt", slow)
    assert alices_p95() == before
    code, _, err = cli(capsys, "--db", str(cache), "learn")
    assert code == 0, err
    assert alices_p95() == pytest.approx(before, rel=1e-9)
    with Store.open(cache, readonly=True) as store:
        stored = store.query("SELECT COUNT(*) AS n FROM observations WHERE user IS NULL "
                             "AND source LIKE 'sacct:%'")[0]["n"]  # fmt: skip
    assert stored == 20  # kept for the reports, learned by nobody


def test_every_accounting_source_is_known_as_one() -> None:
    for cluster in ("advisor", "swf:kth", "kth"):
        source = observation_source(cluster)
        assert Observation(source, "1", "align", 1.0).from_accounting, source
    assert not Observation("lotaru:local", "1", "align", 1.0).from_accounting
