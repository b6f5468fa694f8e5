"""The guard's decisions on recorded real squeue output: which jobs, which step, the ceilings."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import jsonschema
import pytest

from advisor.advice.limits import PartitionLimit, decide
from advisor.advice.tag import Tag, format_tag, parse_tag
from advisor.errors import InputError
from advisor.guard_schedule import LEAD_S
from advisor.services.guard import Guard, due_limit, run_guard, watched_job, write_export_heartbeat
from advisor.slurm.jobs import RunningJob, parse_running_jobs
from advisor.slurm.runner import CommandResult, SlurmCommands
from advisor.store.advice import Advice, guarded_requests, record_advice
from advisor.store.connection import Store
from advisor.store.guard import Heartbeat, guard_alive, heartbeat_age, write_heartbeat
from advisor.validate import schema
from tests.helpers.paths import TEST_DATA

SLURM = TEST_DATA / "slurm"


def stdout_of(path: Path) -> str:
    """A recording's stdout: the lines after its '#' header."""
    lines = path.read_text().splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("#"))


GUARDED_2205 = stdout_of(SLURM / "22.05" / "squeue_guarded.json")


def test_only_running_jobs_are_read_from_22_05() -> None:
    jobs = parse_running_jobs(GUARDED_2205)
    by_id = {job.job_id: job for job in jobs}
    assert sorted(by_id) == [4233, 4234, 4235]  # the completed jobs of the recording are left out
    mine = by_id[4233]
    assert mine.limit_s == 60 and mine.partition == "cpu" and mine.user == "root"
    assert mine.end_epoch is not None and mine.end_epoch - mine.start_epoch == 60
    assert mine.comment.startswith("my words advisor:wrapper,action=guarded")


def test_24_11_numbers_and_state_lists_are_read() -> None:
    jobs = parse_running_jobs(stdout_of(SLURM / "24.11" / "squeue.json"))
    assert jobs, "the 24.11 recording has running jobs"
    first = next(job for job in jobs if job.job_id == 12)
    assert (first.limit_s, first.partition) == (60, "cpu")
    assert first.end_epoch == first.start_epoch + 60


def test_bad_output_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="not JSON"):
        parse_running_jobs("squeue: error: x")
    with pytest.raises(InputError, match="job 7: field start_time"):
        parse_running_jobs(json.dumps({"jobs": [
            {"job_id": 7, "job_state": "RUNNING", "start_time": "soon", "time_limit": 5}
        ]}))  # fmt: skip


def test_only_jobs_tightened_by_guarded_are_watched() -> None:
    caps = {"cpu": 86400, "long": 7 * 86400}
    watched = [w for j in parse_running_jobs(GUARDED_2205) if (w := watched_job(j, {}, caps))]
    assert [(w.job.job_id, w.advised_s, w.ceiling_s) for w in watched] == [(4233, 60, 300)]


def job(
    limit_s: int, left_s: float, comment: str, now: float, partition: str = "cpu"
) -> RunningJob:
    start = int(now + left_s - limit_s)
    return RunningJob(9, "alice", partition, limit_s, start, int(now + left_s), comment)


TAG = format_tag(Tag("wrapper", "guarded", 1, 0.95, "t", None, 5))


@pytest.mark.parametrize(
    ("limit_s", "left_s", "expected"),
    [
        (60, LEAD_S + 5, None),  # not due yet
        (60, LEAD_S, 120),  # the first step: + 1 minute
        (120, 10, 300 - 0),  # + 5 minutes would be 420: the ceiling, the user's 5 minutes
        (300, 10, None),  # at the ceiling: killed at the user's own request, as without us
        (30, 10, None),  # lowered below the advice since (scontrol by its owner): left alone
    ],
)
def test_due_jobs_get_the_next_rung_below_the_ceiling(
    limit_s: int, left_s: float, expected: int | None
) -> None:
    now = 1_800_000_000.0
    watched = watched_job(job(limit_s, left_s, TAG, now), {}, {"cpu": 86400})
    assert watched is not None
    assert due_limit(watched, now) == expected


def test_the_lowest_ceiling_wins_advice_row_and_max_time() -> None:
    now = 1_800_000_000.0
    running = job(60, 10, TAG, now)
    by_row = watched_job(running, {9: 90}, {"cpu": 86400})
    by_cap = watched_job(running, {}, {"cpu": 100})
    assert by_row is not None and by_cap is not None
    assert (by_row.ceiling_s, by_cap.ceiling_s) == (90, 100)
    assert (due_limit(by_row, now), due_limit(by_cap, now)) == (90, 100)


def test_tags_without_a_request_or_of_other_actions_are_left_alone() -> None:
    now = 1_800_000_000.0
    for comment in (
        "advisor:wrapper,action=lowered,limit=1",
        "advisor:wrapper,action=guarded,limit=1",  # no req: no ceiling known
        "advisor:wrapper,action=guarded,limit=0,req=5",
        "user text only",
    ):
        assert watched_job(job(60, 5, comment, now), {}, {}) is None, comment


def test_req_round_trips_in_the_tag_and_a_unicode_digit_is_no_request() -> None:
    assert parse_tag(f"x {TAG}") == Tag("wrapper", "guarded", 1, 0.95, "t", None, 5)
    forged = parse_tag("advisor:wrapper,action=guarded,limit=1,req=\u0665")
    assert forged is not None and forged.request_min is None


class Replayed:
    """A runner answering squeue with a recording and recording every other argv."""

    def __init__(self, squeue: str, partitions: str) -> None:
        self.squeue, self.partitions = squeue, partitions
        self.calls: list[tuple[str, ...]] = []

    def __call__(
        self, argv: Sequence[str], timeout_s: float, stdin: str | None = None
    ) -> CommandResult:
        self.calls.append(tuple(argv))
        if argv[0] == "squeue":
            return CommandResult(tuple(argv), 0, self.squeue, "")
        if list(argv[:3]) == ["scontrol", "show", "partition"]:
            return CommandResult(tuple(argv), 0, self.partitions, "")
        return CommandResult(tuple(argv), 0, "", "")


def test_one_poll_is_one_squeue_one_raise_and_a_heartbeat(tmp_path: Path) -> None:
    runner = Replayed(GUARDED_2205, stdout_of(SLURM / "22.05" / "scontrol_show_partition.txt"))
    mine = next(j for j in parse_running_jobs(GUARDED_2205) if j.job_id == 4233)
    assert mine.end_epoch is not None
    lines: list[str] = []
    with Store.open(tmp_path / "cache.db") as store:
        guard = Guard(store, SlurmCommands(runner), log=lines.append,
                      clock=lambda: mine.end_epoch - 20)  # fmt: skip
        done = run_guard(guard, once=True)
        assert heartbeat_age(store, now=(mine.end_epoch or 0) - 20) == pytest.approx(0)
    assert [c[0] for c in runner.calls].count("squeue") == 1
    updates = [c for c in runner.calls if c[:2] == ("scontrol", "update")]
    assert updates == [("scontrol", "update", "JobId=4233", "TimeLimit=00:02:00")]
    assert done.last is not None and done.last.watched == 1
    assert lines == [
        "advisor guard: job 4233 (user root): time limit 00:01:00 -> 00:02:00 "
        "(20 s were left; ceiling 00:05:00)"
    ]


def test_a_poll_far_from_any_limit_asks_slurm_once(tmp_path: Path) -> None:
    runner = Replayed(GUARDED_2205, "")
    with Store.open(tmp_path / "cache.db") as store:
        run_guard(Guard(store, SlurmCommands(runner), clock=lambda: 0.0), once=True)
    assert runner.calls == [("squeue", "--all", "--json")]


def test_the_advice_row_keeps_the_request(tmp_path: Path) -> None:
    with Store.open(tmp_path / "cache.db") as store:
        record_advice(store, Advice("alice", "guarded", ["sbatch"], "submitted", job_id=4233,
                                    limit_s=60, request_s=300))  # fmt: skip
        record_advice(store, Advice("alice", "fill", ["sbatch"], "submitted", job_id=4234))
        assert guarded_requests(store, [4233, 4234]) == {4233: 300}


def test_heartbeat_freshness(tmp_path: Path) -> None:
    now = time.time()
    with Store.open(tmp_path / "cache.db") as store:
        assert guard_alive(store, now=now) == (False, None)
        write_heartbeat(store, Heartbeat(now - 25, "h", 1, 10, 0, 0))
        assert guard_alive(store, now=now) == (True, pytest.approx(25))
        write_heartbeat(store, Heartbeat(now - 31, "h", 1, 10, 0, 0))
        assert guard_alive(store, now=now)[0] is False
        write_heartbeat(store, Heartbeat(now + 60, "h", 1, 10, 0, 0))  # clock stepped back
        assert guard_alive(store, now=now)[0] is False


LIMITS = (PartitionLimit("cpu", ("small",), (), 86400, 30.0, 60, False, "P95"),)


def test_guarded_lowers_only_while_the_guard_is_alive() -> None:
    alive = decide(LIMITS, policy="guarded", user_time="5", user_time_min=None,
                   guard_fresh=True, guard_age_s=4.0)  # fmt: skip
    assert (alive.action, alive.time_s, alive.request_s) == ("guarded", 60, 300)
    assert "the guard is alive" in alive.reason
    stale = decide(LIMITS, policy="guarded", user_time="5", user_time_min=None,
                   guard_fresh=False, guard_age_s=95.0)  # fmt: skip
    assert (stale.action, stale.time_s, stale.request_s) == ("kept", None, None)
    assert "95 s old, stale" in stale.reason
    missing = decide(LIMITS, policy="guarded", user_time="5", user_time_min=None)
    assert "no guard heartbeat" in missing.reason and missing.time_s is None
    unset = decide(LIMITS, policy="guarded", user_time=None, user_time_min=None)
    assert (unset.action, unset.time_s) == ("set", 60)  # as fill without a --time
    within = decide(LIMITS, policy="guarded", user_time="1", user_time_min=None, guard_fresh=True)
    assert within.action == "kept" and within.time_s is None
    seconds = decide(LIMITS, policy="guarded", user_time="4:30", user_time_min=None,
                     guard_fresh=True)  # fmt: skip
    assert seconds.request_s == 300  # Slurm rounds 4:30 up to 5 minutes


def test_the_export_gets_a_heartbeat_and_stays_valid(tmp_path: Path) -> None:
    path = tmp_path / "limits.json"
    write_export_heartbeat(str(path), 1_800_000_000.5, 10)
    assert not path.exists()  # no export, no heartbeat: nothing for the plugin to apply
    example = schema("export")["examples"][0]
    path.write_text(json.dumps(example))
    write_export_heartbeat(str(path), 1_800_000_000.5, 10)
    doc = json.loads(path.read_text())
    assert doc["guard"] == {"heartbeat_epoch": 1_800_000_000, "poll_s": 10, "fresh_s": 30}
    jsonschema.validate(doc, schema("export"))
    assert {k: v for k, v in doc.items() if k != "guard"} == example
