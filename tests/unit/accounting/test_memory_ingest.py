"""What ``advisor update`` keeps of the memory jobs used (issue 33).

A dump's step rows carry the peak (MaxRSS, TRESUsageInMax): the job they follow gets the largest;
the live query asks for the steps separately.  A job killed OUT_OF_MEMORY is a lower bound.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.accounting.ingest import Ingestor
from advisor.accounting.mapping import memory_peak
from advisor.accounting.sacct_file import DumpFormat, Skipped, dump_format, read_sacct_dump
from advisor.accounting.saved import update_from_file
from advisor.advice.tag import Tag, with_tag
from advisor.history.budget import budget_step
from advisor.history.policy import DEFAULT_BUDGET, DEFAULT_CONFIG
from advisor.models.memory import MIN_RUNS, RUNS, fit_memory
from advisor.models.memory_book import key_runs
from advisor.models.memory_budget import ETA
from advisor.services.learn import learn as services_learn
from advisor.slurm.records import JobRecord
from advisor.spool import advice_line, parse_raw
from advisor.store import Store
from advisor.store.advice import Advice, record_advice
from advisor.store.memory_models import MemoryKey, all_keys, load_memory_budgets, load_pools
from advisor.store.observations import load_observations
from advisor.validate import validate
from tests.helpers.jobs import finished, learn
from tests.helpers.public_recordings import HB_JOBINFO, PUBLIC

HB = PUBLIC / "hb-jobinfo-sacct-snowman.txt"


def _jobs(path: Path, dump: DumpFormat) -> dict[str, JobRecord]:
    return {row.job_id: row for _, row in read_sacct_dump(path, dump) if isinstance(row, JobRecord)}


def test_a_dump_s_jobs_get_the_peak_of_the_steps_that_follow_them() -> None:
    jobs = _jobs(
        HB, DumpFormat(delimiter="☃", fields=tuple(HB_JOBINFO.split(",")), trust_names=True)
    )
    # 7965768.batch 1294440K, .extern 80K (read off the recording)
    assert jobs["7965768"].max_rss_mb == pytest.approx(1294440 / 1024)
    assert jobs["7965768"].req_mem_per_node_mb == 10240.0
    measured = {job_id for job_id, job in jobs.items() if job.max_rss_mb is not None}
    assert len(measured) == 8 and len(jobs) == 25  # the jobs whose steps the excerpt holds
    assert all(job.max_rss_mb <= job.req_mem_per_node_mb for job in jobs.values()
               if job.max_rss_mb is not None and job.req_mem_per_node_mb)  # fmt: skip


def test_steps_are_still_counted_as_steps_and_nothing_else_changes(tmp_path: Path) -> None:
    rows = list(
        read_sacct_dump(
            HB, DumpFormat(delimiter="☃", fields=tuple(HB_JOBINFO.split(",")), trust_names=True)
        )
    )
    assert sum(1 for _, row in rows if row == Skipped("steps")) == 20
    lines = [line for line, _ in rows]
    assert sorted(lines) == list(range(1, len(HB.read_text(encoding="utf-8").splitlines()) + 1))


def test_a_step_of_another_job_does_not_reach_the_held_one(tmp_path: Path) -> None:
    dump = tmp_path / "dump.txt"
    dump.write_text(
        "JobID|State|Elapsed|End|Partition|MaxRSS\n"
        "1|COMPLETED|00:01:00|2024-05-01T08:00:00|cpu|\n"
        "2.batch|COMPLETED|00:01:00|2024-05-01T08:00:00||9000K\n"  # its job is not in the dump
        "3|COMPLETED|00:01:00|2024-05-01T08:00:00|cpu|\n"
        "3.0|COMPLETED|00:01:00|2024-05-01T08:00:00||2048K\n"
        "3.1|COMPLETED|00:01:00|2024-05-01T08:00:00||1M\n",
        encoding="utf-8",
    )
    jobs = _jobs(dump, DumpFormat())
    assert jobs["1"].max_rss_mb is None and jobs["3"].max_rss_mb == 2.0


def test_a_malformed_step_figure_is_a_warning_not_a_refusal(tmp_path: Path) -> None:
    dump = tmp_path / "dump.txt"
    dump.write_text(
        "JobID|State|Elapsed|End|Partition|MaxRSS\n"
        "1|COMPLETED|00:01:00|2024-05-01T08:00:00|cpu|\n"
        "1.batch|COMPLETED|00:01:00|2024-05-01T08:00:00||lots\n",
        encoding="utf-8",
    )
    rows = [row for _, row in read_sacct_dump(dump, DumpFormat())]
    assert rows[0] == Skipped(
        "malformed", f"{dump}:3: job 1.batch: MaxRSS: not a memory size 'lots'"
    )
    assert isinstance(rows[1], JobRecord) and rows[1].max_rss_mb is None


def test_update_stores_the_peak_with_the_job_and_its_observation(tmp_path: Path) -> None:
    with Store.open(tmp_path / "cache.db") as store:
        dump = dump_format(cluster="hb", fields=HB_JOBINFO, delimiter="☃", trust_names=True)
        update_from_file(store, HB, kind="sacct", dump=dump)
        stored = {r["job_id"]: r["max_rss_mb"] for r in store.query(
            "SELECT job_id, max_rss_mb FROM accounting_jobs")}  # fmt: skip
        observed = {o.source_key: o for o in load_observations(store)}
    assert stored["7965768"] == pytest.approx(1294440 / 1024)
    assert observed["7965768"].peak_mem_mb == pytest.approx(1294440 / 1024)
    assert not observed["7965768"].mem_censored
    assert sum(value is not None for value in stored.values()) == 8


def test_a_job_killed_out_of_memory_needed_at_least_its_request(tmp_path: Path) -> None:
    oom = finished(1, 60, state="OUT_OF_MEMORY")._replace(req_mem_mb=100.0, max_rss_mb=97.5)
    assert memory_peak(oom) == (100.0, True)
    assert memory_peak(oom._replace(max_rss_mb=None)) == (100.0, True)
    assert memory_peak(oom._replace(req_mem_mb=None, max_rss_mb=None)) == (None, False)
    assert memory_peak(oom._replace(state="COMPLETED")) == (97.5, False)
    with Store.open(tmp_path / "cache.db") as store:
        learn(store, oom)
        (observation,) = load_observations(store)
    assert observation.peak_mem_mb == 100.0 and observation.mem_censored
    assert not observation.censored  # its runtime is no TIMEOUT


def _with_peak(number: int, peak_mb: float, **options: str) -> JobRecord:
    return finished(number, 60, **options)._replace(max_rss_mb=peak_mb, req_mem_mb=4000.0)


def test_a_user_s_peaks_teach_that_user_s_key_and_the_residual_pool(tmp_path: Path) -> None:
    peaks = [1000.0, 1100.0, 950.0, 1050.0, 1020.0, 990.0]
    jobs = [_with_peak(i, peak) for i, peak in enumerate(peaks)]
    jobs.append(_with_peak(20, 5000.0, user=""))  # no user: teaches nothing
    jobs.append(_with_peak(21, 70.0, state="FAILED"))  # stopped early: no peak of its need
    with Store.open(tmp_path / "cache.db") as store:
        learn(store, *jobs)
        keys = all_keys(store)
        pools = load_pools(store)
        online = (keys, pools)
        learned = services_learn(store).memory
        assert (all_keys(store), load_pools(store)) == online  # a refit is what online built
    assert list(keys) == [MemoryKey("alice", "sim")]
    assert [run[0] for run in keys[MemoryKey("alice", "sim")].runs] == peaks
    # each run after the first MIN_RUNS was predicted before it was learned
    assert len(pools[RUNS]) == len(peaks) - MIN_RUNS and learned.user_keys == 1


def test_an_out_of_memory_kill_raises_the_user_s_p95(tmp_path: Path) -> None:
    jobs = [_with_peak(i, 1000.0 + i) for i in range(5)]
    killed = _with_peak(9, 1500.0, state="OUT_OF_MEMORY")._replace(req_mem_mb=3000.0)
    with Store.open(tmp_path / "cache.db") as store:
        learn(store, *jobs)
        before = fit_memory(key_runs(all_keys(store)[MemoryKey("alice", "sim")]))
        learn(store, killed)
        after = fit_memory(key_runs(all_keys(store)[MemoryKey("alice", "sim")]))
    assert before is not None and after is not None
    assert before.quantiles(None)[1] < 3000.0 <= 2 * 3000.0 <= after.quantiles(None)[1]


def test_an_oom_kill_under_recorded_advice_raises_the_partitions_budget(tmp_path: Path) -> None:
    tag = with_tag("", Tag("wrapper", "none", 0, mem_mb=1144))
    killed = finished(7, 60, state="OUT_OF_MEMORY")._replace(
        req_mem_mb=1144.0, req_mem_per="node", comment=tag)  # fmt: skip
    ran = finished(8, 60)._replace(req_mem_mb=1144.0, req_mem_per="node", comment=tag)
    forged = finished(9, 60, state="OUT_OF_MEMORY")._replace(
        req_mem_mb=1144.0, req_mem_per="node", comment=tag
    )  # no advice row: a tag proves nothing
    other = finished(10, 60, state="OUT_OF_MEMORY")._replace(
        req_mem_mb=2000.0, req_mem_per="node", comment=tag
    )  # it did not run with the advice
    with Store.open(tmp_path / "cache.db") as store:
        for job_id in (7, 8, 10):
            record_advice(store, Advice(user="alice", policy="fill", argv=(), outcome="submitted",
                                        cluster="advisor", job_id=job_id, mem_mb=1144,
                                        mem_action="set"))  # fmt: skip
        learn(store, killed, forged, other)
        first = load_memory_budgets(store)["cpu"]
        learn(store, ran)
        second = load_memory_budgets(store)["cpu"]
    budget, log_margin, ran_jobs, kills = first
    assert (ran_jobs, kills) == (0, 1) and log_margin == pytest.approx(ETA * (1 - budget))
    assert second[2:] == (1, 1) and second[1] == pytest.approx(ETA * (1 - 2 * budget))


def test_update_kill_budget_restates_the_memory_promise_as_the_time_one(tmp_path: Path) -> None:
    """One promise: ``update --kill-budget`` (restate) sets the OOM budgets too, by one rule."""
    tag = with_tag("", Tag("wrapper", "none", 0, mem_mb=1144))
    jobs = [finished(n, 60, state="OUT_OF_MEMORY" if n == 20 else "COMPLETED")._replace(
        req_mem_mb=1144.0, req_mem_per="node", comment=tag) for n in (20, 21)]  # fmt: skip
    with Store.open(tmp_path / "cache.db") as store:
        for job_id in (20, 21):
            record_advice(store, Advice(user="alice", policy="fill", argv=(), outcome="submitted",
                                        cluster="advisor", job_id=job_id, mem_mb=1144,
                                        mem_action="set"))  # fmt: skip
        learn(store, jobs[0])
        assert load_memory_budgets(store)["cpu"][0] == DEFAULT_BUDGET
        with store.write():
            Ingestor(store, config=DEFAULT_CONFIG._replace(budget=0.05), restate=True).add(jobs[1:])
        budget, log_margin, ran_jobs, kills = load_memory_budgets(store)["cpu"]
    assert (budget, ran_jobs, kills) == (0.05, 1, 1)
    # the kill at 1 %, the run at 5 %: each step is budget_step's, the time policy's rule
    assert log_margin == pytest.approx(
        budget_step(budget_step(0.0, killed=True, budget=DEFAULT_BUDGET, eta=ETA),
                    killed=False, budget=0.05, eta=ETA)
    )  # fmt: skip


def test_the_spool_carries_the_memory_a_users_wrapper_set() -> None:
    advice = Advice(user="alice", policy="fill", argv=("--mem=1144M", "job.sh"), outcome="submitted",
                    job_id=7, mem_mb=1144, mem_action="set")  # fmt: skip
    line = parse_raw(advice_line(advice, "2026-12-01T10:00:00+00:00").encode())
    assert line is not None and (line["mem_mb"], line["mem_action"]) == (1144, "set")
    validate(json.loads(advice_line(advice, "2026-12-01T10:00:00+00:00")), "advice-spool",
             source="spool")  # fmt: skip
    old = parse_raw(b'{"created_at": "x", "argv": [], "policy": "fill", "outcome": "submitted"}')
    assert old is not None and old["mem_mb"] is None  # lines of earlier wrappers still read
