"""Slurm's dispatch waits: measured from earlier runs' sacct times, then put into P50/P95.

The job times below are worked by hand from the rules in advisor/planner/scheduling/dispatch.py; the
replay with waits is checked against the plan's own arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from advisor.errors import InputError, SlurmUnavailableError
from advisor.planner.cluster.dispatch_source import measured_dispatch
from advisor.planner.scheduling import heft
from advisor.planner.scheduling.dispatch import DispatchLatency, JobTimes, measure
from advisor.planner.scheduling.uncertainty import (
    LognormalSampler,
    makespan_distribution,
    sample_makespans,
    slurm_makespan,
)
from advisor.planner.summarise import MAX_SAMPLE_CELLS, check_samples
from advisor.services.plan import PlanRequest, check_request
from advisor.services.submit import compare
from advisor.slurm.records import JobRecord
from advisor.store.cluster import save_cluster
from advisor.store.connection import Store
from advisor.store.node_classes import save_node_classes
from advisor.validate import validate
from tests.helpers.caches import NODES, PARTITIONS
from tests.helpers.planner import WORKS, make_problem, record, submitted_run

T0 = datetime(2026, 12, 1, 12, 0, 0)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def fork_join_run() -> list[JobTimes]:
    # planned: fork [0, 1] on a; w1, w2 [1, 3] on a and b; w3 [3, 5] on a after w1 (slot);
    # join [5, 6] on a.  Submitted 0.5 s apart from t=0.
    return [
        JobTimes("fork", (), "a", 0.0, 1.0, at(0), at(1), at(2), "COMPLETED"),
        JobTimes("w1", ("fork",), "a", 1.0, 3.0, at(0.5), at(4), at(6), "COMPLETED"),
        JobTimes("w2", ("fork",), "b", 1.0, 3.0, at(1.0), at(5), at(7), "COMPLETED"),
        JobTimes("w3", ("fork",), "a", 3.0, 5.0, at(1.5), at(7), at(10), "COMPLETED"),
        JobTimes("join", ("w1", "w2", "w3"), "a", 5.0, 6.0, at(2.0), at(13), at(14), "COMPLETED"),
    ]


def test_each_wait_is_measured_where_the_plan_says_only_slurm_was_waited_for() -> None:
    found = measure([fork_join_run()])
    assert found is not None
    # fork: no parent, planned at once: start - submit = 1
    assert found.first_s == (1.0,)
    # w1, w2 wait for fork (ended at 2): 2 and 3; join waits for w3 (ended at 10): 3
    assert sorted(found.dependency_s) == [2.0, 3.0, 3.0]
    # w3 waits for a slot of class a: the last end there before its start (7) was w1's (6): 1
    assert found.slot_s == (1.0,)
    # elapsed - planned runtime: 1-1, 2-2, 2-2, 3-2, 1-1
    assert sorted(found.overhead_s) == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert found.submit_interval_s == pytest.approx(0.5)
    assert (found.runs, found.jobs) == (1, 5)
    summary = found.summary()
    assert summary["dependency"] == {
        "mean_s": pytest.approx(8 / 3),
        "p50_s": 3.0,
        "p95_s": pytest.approx(3.0),
        "samples": 3,
    }


def test_unfinished_or_failed_jobs_and_tiny_runs_give_no_model() -> None:
    run = fork_join_run()
    failed = [job._replace(state="FAILED") if job.task_id != "fork" else job for job in run]
    assert measure([failed]) is None  # one completed job is too little to say anything
    assert measure([]) is None
    pending = [job._replace(start=None) if job.task_id == "join" else job for job in run]
    assert measure([pending, run]).jobs == 4 + 5  # type: ignore[union-attr]


def fork_plan():  # type: ignore[no-untyped-def]
    problem = make_problem(
        [[1.0]] + [[2.0]] * 3 + [[1.0]],
        [(0, 1, 0.0), (0, 2, 0.0), (0, 3, 0.0), (1, 4, 0.0), (2, 4, 0.0), (3, 4, 0.0)],
        [2],
        bandwidth=None,
    )
    return heft.schedule(problem)


def test_the_plan_on_slurm_adds_the_mean_waits_along_its_critical_path() -> None:
    plan = fork_plan()  # one node, 2 slots: fork 1 s, 3 x 2 s (two waves), join 1 s
    assert plan.makespan_s == 6.0
    waits = DispatchLatency(
        dependency_s=(2.0, 4.0),
        slot_s=(1.0,),
        first_s=(0.5,),
        overhead_s=(0.5,),
        submit_interval_s=0.0,
        runs=1,
        jobs=5,
    )
    # every job 0.5 s longer; all submitted at once, startable at 0.5: fork [0.5, 2];
    # w1, w2 wait 2 + 3 for it: [5, 7.5]; w3 waits for w1's slot (+1): [8.5, 11];
    # join waits for w3 (+3): [14, 15.5]; from the first start: 15
    assert slurm_makespan(plan, waits) == pytest.approx(15.0)
    no_waits = DispatchLatency((), (), (), (), 0.0, 1, 5)
    assert slurm_makespan(plan, no_waits) == pytest.approx(6.0)


def test_sampled_waits_move_p50_and_p95_and_keep_the_runtime_draws() -> None:
    plan = fork_plan()
    waits = DispatchLatency(
        dependency_s=(1.0, 2.0, 3.0),
        slot_s=(0.0, 1.0),
        first_s=(0.0, 1.0),
        overhead_s=(0.0, 0.5),
        submit_interval_s=0.2,
        runs=2,
        jobs=10,
    )
    plain = makespan_distribution(plan, LognormalSampler(0.0), samples=400)
    on_slurm = makespan_distribution(plan, LognormalSampler(0.0), samples=400, dispatch=waits)
    assert plain.p50_s == plain.p95_s == 6.0
    # at least two dependency waits of >= 1 s and at most 2 x 3 + 1 + 3 x 0.5 on top
    assert 6.0 + 2.0 <= on_slurm.p50_s <= on_slurm.p95_s <= 6.0 + 3 * 3 + 1 + 5 * 0.5
    again = sample_makespans(plan, LognormalSampler(0.3), samples=50, seed=4, dispatch=waits)
    assert np.array_equal(
        again, sample_makespans(plan, LognormalSampler(0.3), samples=50, seed=4, dispatch=waits)
    )


def test_samples_have_an_upper_bound_with_a_one_line_error() -> None:
    with pytest.raises(InputError, match="--samples must be from 0 to 100000, not 100001"):
        check_request(PlanRequest(inputs=("x",), samples=100_001))
    check_samples(5000, MAX_SAMPLE_CELLS // 5000)
    with pytest.raises(InputError) as error:
        check_samples(50_000, 100_000)
    assert "--samples 50000 x 100000 tasks is 5e+09 sampled runtimes" in str(error.value)
    assert "\n" not in str(error.value)
    assert error.value.hint == f"use --samples {MAX_SAMPLE_CELLS // 100_000} or fewer"


def test_the_cache_measures_earlier_submitted_runs_and_survives_sacct_down(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache.db"
    with Store.open(cache) as store:  # the made-up cluster of test_submit
        save_cluster(store, PARTITIONS, NODES)
        save_node_classes(store, {"c1": "small", "c2": "small", "f1": "big"})
    run, jobs = submitted_run(cache)
    by_task = {j.task_id: j for j in jobs}
    # fork [2, 3]; the workers 2 s after it, [5, 8]; join 2 s after them [10, 11]
    records = [record(by_task["fork"].job_id, by_task["fork"].partition, 2, 3)]
    records += [record(by_task[w].job_id, by_task[w].partition, 5, 8) for w in WORKS]
    records.append(record(by_task["join"].job_id, by_task["join"].partition, 10, 11))
    asked: list[int] = []

    def sacct(start: datetime, end: datetime, ids: Sequence[int]) -> list[JobRecord]:
        asked.extend(ids)
        return records

    def down(start: datetime, end: datetime, ids: Sequence[int]) -> list[JobRecord]:
        raise SlurmUnavailableError("sacct: error: Problem talking to the database")

    with Store.open(cache, readonly=True) as store:
        found = measured_dispatch(store, fetch=sacct)
        assert sorted(asked) == sorted(j.job_id for j in jobs)
        assert found is not None and found.jobs == 10
        assert sorted(found.dependency_s) == [2.0] * 9  # every worker, and the join
        assert found.first_s == (2.0,)  # submitted at 12:00, started at 12:00:02
        assert measured_dispatch(store, fetch=down) is None  # nothing ingested: no model
    status = compare(run, jobs, records, datetime(2026, 1, 1, 12)).to_json()
    validate(status, "submit-output", source="status")
    assert status["actual_vs_p50"] == pytest.approx((9.0 - run.p50_s) / run.p50_s)
    assert status["within_p95"] is (run.p95_s >= 9.0)
    late = {row["id"]: row["late_s"] for row in status["jobs"]}
    assert late["fork"] == 0.0 and late["join"] == 8.0 - by_task["join"].planned_start_s
    assert {row["id"]: row["planned_runtime_s"] for row in status["jobs"]}["work_2"] == 3.0
