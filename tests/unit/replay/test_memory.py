"""The memory replay (advisor.replay.memory): policies learn only what ended before a submit."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.replay.memory import (
    ADVISOR,
    MAX_PREVIOUS,
    UNBUDGETED,
    USER,
    memory_replay_jobs,
    replay_memory,
)
from advisor.slurm.records import JobRecord
from advisor.validate import validate
from tests.helpers.jobs import finished
from tests.helpers.public_recordings import HB_JOBINFO, PUBLIC

START = datetime(2026, 1, 1)


def _job(number: int, peak_mb: float, *, request_mb: float = 8000.0, state: str = "COMPLETED",
         name: str = "sim", gap_s: int = 7200) -> JobRecord:  # fmt: skip
    """A 1-hour job submitted gap_s after the one before it (the default: after it ended)."""
    submit = START + timedelta(seconds=number * gap_s)
    return finished(number, 3600, name=name, state=state)._replace(
        submit=submit, start=submit, end=submit + timedelta(hours=1), req_mem_mb=request_mb,
        req_mem_per="node", max_rss_mb=peak_mb,
    )  # fmt: skip


def test_the_users_request_is_what_happened() -> None:
    jobs = [_job(i, 1000.0) for i in range(4)] + [
        _job(4, 900.0, state="OUT_OF_MEMORY", request_mb=500.0)
    ]
    done = replay_memory(jobs)
    assert done is not None and (done.jobs, done.oom) == (5, 1)
    user = done.policies[USER]
    assert (user.jobs, user.kills, user.advised, user.freed_gb_h) == (5, 1, 0, 0.0)
    # 4 jobs × 7000 MB unused × 1 h (the OOM job's need is unknown)
    assert done.unused_gb_h == pytest.approx(4 * 7000 / 1024)


def test_the_maximum_of_the_previous_runs_misses_a_larger_one_the_advisor_covers() -> None:
    peaks = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1200.0]
    done = replay_memory([_job(i, peak) for i, peak in enumerate(peaks)])
    assert done is not None
    previous, advisor = done.policies[MAX_PREVIOUS], done.policies[UNBUDGETED]
    assert previous.advised == 5 and previous.kills == 2  # 1005 after 1010 and 1200 after it
    assert advisor.advised == len(peaks) - 3  # from the key's third run on
    assert advisor.freed_gb_h > 0 and advisor.held_gb_h < done.policies[USER].held_gb_h


def test_a_job_submitted_before_the_others_ended_learns_nothing_from_them() -> None:
    jobs = [_job(i, 1000.0, gap_s=60) for i in range(6)]  # all submitted within the first hour
    done = replay_memory(jobs)
    assert done is not None
    assert done.policies[MAX_PREVIOUS].advised == 0 and done.policies[ADVISOR].advised == 0


def test_the_kill_budget_holds_kills_the_measured_margin_alone_lets_through() -> None:
    # a key whose runs alternate in one band, now and then twice as much: the margin learned
    # from the quiet runs lets those through, the budget raises it after each kill
    peaks = [1000.0 * (2.0 if i % 12 == 11 else 1.0 + 0.05 * (i % 3)) for i in range(240)]
    done = replay_memory([_job(i, peak) for i, peak in enumerate(peaks)], budget=0.01)
    assert done is not None
    budgeted, alone = done.policies[ADVISOR], done.policies[UNBUDGETED]
    assert budgeted.kills < alone.kills
    assert budgeted.kill_rate is not None and alone.kill_rate is not None
    assert budgeted.kill_rate <= 0.05 < alone.kill_rate


def test_only_jobs_with_a_request_and_a_peak_are_replayed() -> None:
    jobs = [
        _job(0, 1000.0),
        _job(1, 1000.0)._replace(max_rss_mb=None),  # no peak
        _job(2, 1000.0)._replace(req_mem_mb=None),  # no request
        _job(3, 1000.0, state="FAILED"),  # stopped before its peak
        _job(4, 1000.0, state="OUT_OF_MEMORY"),  # a lower bound: kept
    ]
    assert [job.peak_mb for job in memory_replay_jobs(jobs)] == [1000.0, 8000.0]
    assert replay_memory([_job(1, 1000.0)._replace(max_rss_mb=None)]) is None


def test_replay_of_a_real_dump_shows_the_memory_policies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    dump = PUBLIC / "hb-jobinfo-sacct-snowman.txt"
    argv = ["replay", "--sacct-file", str(dump), "--fields", HB_JOBINFO, "--delimiter", "☃",
            "--trust-names", "--cluster", "hb"]  # fmt: skip
    assert main([*argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    validate(data, "replay-output", source="replay")
    assert data["memory"]["jobs"] == 4 and set(data["memory"]["policies"]) == {
        USER, MAX_PREVIOUS, ADVISOR, UNBUDGETED
    }  # fmt: skip
    assert main(argv) == 0
    assert "memory: 4 jobs with ReqMem and a peak" in capsys.readouterr().out
