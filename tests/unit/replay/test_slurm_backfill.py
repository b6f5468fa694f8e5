"""Slurm's schedulers as simulated: textbook cases by hand, a naive reference, the parameters.

The case that tells conservative backfilling from EASY: a long job that EASY starts on the
processors the head leaves free, delaying the second job in the queue, waits in Slurm's
backfill, which holds a place for every job it looks at.
"""

from __future__ import annotations

import heapq
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.guard_schedule import raises_for
from advisor.replay.backfill import SimJob, simulate
from advisor.replay.slurm_backfill import BackfillParameters, parse_parameters, simulate_slurm
from tests.helpers.workloads import JOBS, assert_feasible

DATA = Path(__file__).resolve().parents[2] / "data" / "slurm"

#: A queue behind a job on 6 of 10 processors until 100: the head H needs 8, J2 all 10 (for
#: 10 s), J3 is long on 2, J4 short on 1.
QUEUE = [
    SimJob(0, 6, 100, 100),
    SimJob(0, 8, 50, 50),  # H
    SimJob(0, 10, 10, 10),  # J2
    SimJob(0, 2, 1000, 1000),  # J3
    SimJob(0, 1, 10, 10),  # J4
]


def test_easy_lets_a_long_job_delay_the_second_in_the_queue() -> None:
    # J3 fits on the 2 processors H leaves free at its reservation (100): EASY starts it now,
    # and J2, which needs all 10, waits for J3's end at 1000
    assert simulate(QUEUE, 10).start_s == [0, 100, 1000, 0, 0]


def test_slurms_backfill_holds_a_place_for_every_job_it_looks_at() -> None:
    # main scheduler at 0: H does not fit, nothing starts; the backfill pass at 30 places H at
    # 120-180, J2 at 180 (slots of 60 s), J3 after J2, and J4 now (one slot of 1 processor);
    # then the main scheduler starts H at R's end, J2 at H's, J3 at J2's
    assert simulate_slurm(QUEUE, 10).start_s == [0, 100, 150, 160, 30]


def test_only_the_first_bf_max_job_test_jobs_are_looked_at() -> None:
    # with a depth of 2, J4 is never looked at (third behind H at 30, behind J2 and J3 at 120):
    # it starts when the main scheduler reaches it, after J3
    shallow = BackfillParameters(max_job_test=2)
    assert simulate_slurm(QUEUE, 10, shallow).start_s == [0, 100, 150, 160, 160]


def test_a_job_starts_at_once_when_it_fits_and_nothing_waits() -> None:
    jobs = [SimJob(5, 4, 10, 100), SimJob(7, 4, 10, 100), SimJob(8, 2, 10, 100)]
    assert simulate_slurm(jobs, 10).start_s == [5, 7, 8]


def test_a_raise_moves_the_running_jobs_end_in_the_profile() -> None:
    # A is guarded: advised 60 s, it runs 300 s; the guard raises it to its ceiling (1000 s) at
    # 40. The head needs the whole machine; C (2 processors, 100 s, two slots) does not fit
    # before A's advised end, one slot away, at the pass of 30; at the pass of 60 A's end is
    # far and C starts
    a = SimJob(0, 2, 300, 60, ceiling_s=1000)
    head = SimJob(1, 4, 10, 10)
    c = SimJob(2, 2, 100, 100)
    result = simulate_slurm([a, head, c], 4)
    assert result.raises == 1 and result.end_s[0] == 300
    assert result.start_s == [0, 300, 60]  # the head starts when A really ends


def test_a_job_past_the_window_holds_no_place() -> None:
    # bf_window of one slot (60 s): the head cannot be placed in it (R runs to 600), so it
    # holds nothing, and J (1 processor, 1000 s) starts at the first pass and makes the head
    # wait to 1030: the starvation slurm.conf(5) warns of for a window shorter than the limits
    window = BackfillParameters(window_s=60)
    jobs = [SimJob(0, 3, 600, 600), SimJob(0, 4, 10, 10), SimJob(0, 1, 1000, 1000)]
    assert simulate_slurm(jobs, 4, window).start_s == [0, 1030, 30]
    # with the default day, the head's place is kept and J waits for it
    assert simulate_slurm(jobs, 4).start_s == [0, 600, 610]


def test_scheduler_parameters_are_read_as_slurm_writes_them() -> None:
    text = "bf_continue,bf_interval=60,bf_max_job_test=1000,bf_window=2880,default_queue_depth=50"
    assert parse_parameters(text) == BackfillParameters(60, 1000, 60, 172800)
    for version in ("22.05", "24.11"):  # scontrol show config of each Debian's Slurm: (null)
        line = next(
            line
            for line in (DATA / version / "scontrol_show_config.txt").read_text().splitlines()
            if line.startswith("SchedulerParameters")
        )
        assert parse_parameters(line.split("=", 1)[1].strip()) == BackfillParameters()
    assert BackfillParameters().describe() == (
        "bf_interval=30,bf_max_job_test=500,bf_resolution=60,bf_window=1440"
    )


@pytest.mark.parametrize("text", ["bf_interval=0", "bf_window=", "bf_resolution=1m"])
def test_a_bad_value_is_named(text: str) -> None:
    with pytest.raises(ValueError, match=text.split("=")[0]):
        parse_parameters(text)


def reference(jobs: list[SimJob], procs: int, parameters: BackfillParameters) -> list[int]:
    """The two schedulers the slow way: the profile rebuilt slot by slot in every pass."""
    size = [min(job.procs, procs) for job in jobs]
    limit = [job.limit_s for job in jobs]
    start = [-1] * len(jobs)
    events: list[tuple[int, int, int, int]] = [
        (job.submit_s, 2, i, 0) for i, job in enumerate(jobs)
    ]
    heapq.heapify(events)
    running: set[int] = set()
    queue: list[int] = []
    res, slots = parameters.resolution_s, max(1, parameters.window_s // parameters.resolution_s)
    due = None

    def launch(job: int, now: int) -> None:
        start[job] = now
        running.add(job)
        spec = jobs[job]
        duration = spec.run_s
        if spec.ceiling_s is not None and spec.limit_s < spec.ceiling_s:
            raised, final = raises_for(now, spec.limit_s, spec.run_s, spec.ceiling_s)
            for moment, higher in raised:
                heapq.heappush(events, (moment, 1, job, higher))
            if spec.run_s > final and final < spec.ceiling_s:
                duration = final
        heapq.heappush(events, (now + duration, 0, job, 0))

    def free() -> int:
        return procs - sum(size[i] for i in running)

    while events or (due is not None and queue):
        now = min(([events[0][0]] if events else []) + ([due] if due is not None and queue else []))
        changed = False
        while events and events[0][0] == now:
            _, kind, job, higher = heapq.heappop(events)
            if kind == 0:
                running.discard(job)
            elif kind == 1:
                limit[job] = higher
            else:
                queue.append(job)
            changed = True
        while queue and size[queue[0]] <= free():
            launch(queue.pop(0), now)
        if due == now:
            due = None
            if queue:
                profile = [free()] * slots  # a job ending past the window never frees
                for i in running:
                    for k in range(max(1, -(-(start[i] + limit[i] - now) // res)), slots):
                        profile[k] += size[i]
                for job in list(queue[: parameters.max_job_test]):
                    need = -(-limit[job] // res)
                    at = next(
                        (
                            k
                            for k in range(slots)
                            if all(profile[m] >= size[job] for m in range(k, min(k + need, slots)))
                        ),
                        None,
                    )
                    if at is None:
                        continue
                    if at == 0:
                        launch(job, now)
                        queue.remove(job)
                    for m in range(at, min(at + need, slots)):
                        profile[m] -= size[job]
        elif changed and due is None and queue:
            due = (now // parameters.interval_s + 1) * parameters.interval_s
    return start


#: Small slots and window, so that the workloads reach past them.
SMALL = BackfillParameters(interval_s=20, max_job_test=6, resolution_s=30, window_s=600)


@settings(max_examples=300, deadline=None)
@given(st.lists(JOBS, min_size=1, max_size=25), st.integers(1, 8))
def test_the_simulator_agrees_with_a_naive_one_on_random_workloads(
    jobs: list[SimJob], procs: int
) -> None:
    jobs = sorted(jobs, key=lambda job: job.submit_s)
    for parameters in (BackfillParameters(), SMALL):
        assert simulate_slurm(jobs, procs, parameters).start_s == reference(jobs, procs, parameters)


@settings(max_examples=100, deadline=None)
@given(st.lists(JOBS, min_size=1, max_size=40), st.integers(1, 8))
def test_every_schedule_is_feasible(jobs: list[SimJob], procs: int) -> None:
    jobs = sorted(jobs, key=lambda job: job.submit_s)
    assert_feasible(jobs, simulate_slurm(jobs, procs, SMALL), procs)
