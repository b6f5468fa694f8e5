"""The guarded policy in the replay, ``--schedule``, and the machine a log's schedule runs on.

Hand-made logs for the rules; tests/data/slurm/sacct_allocations.txt (recorded on the test
cluster, see test_replay_sacct.py) and the SWF excerpts for the command; the two development
logs for the issue's targets.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.accounting.swf import read_swf, swf_header
from advisor.cli import main
from advisor.replay.engine import replay
from advisor.replay.guarded import GUARDED, GUARDED_MARGIN, GuardedPolicy
from advisor.replay.jobs import ReplayJob, replay_jobs
from advisor.replay.schedule import (
    Machine,
    peak_allocation,
    schedule_figures,
    snapshot_machine,
    swf_machine,
)
from advisor.services.replay import policies, replay_report
from advisor.slurm.records import Node, Partition
from advisor.slurm.timefmt import whole_minutes_s
from advisor.store.cluster import save_cluster
from advisor.store.connection import Store
from advisor.validate import validate
from tests.helpers.captures import allocations
from tests.helpers.paths import PWA_LOGS, TEST_DATA


def make(index: int, submit: int, run: int | None, request: int | None, *, wait: int = 0,
         procs: int = 1, state: str = "COMPLETED") -> ReplayJob:  # fmt: skip
    return ReplayJob(index, index, submit, wait, run, request, state == "COMPLETED", state, "u",
                     "", "", procs)  # fmt: skip


class Tight:
    """Proposes a fixed limit for every job, raised by the guard; remembers what it learned."""

    name = "tight"
    guarded = True

    def __init__(self, proposal_s: float) -> None:
        self.proposal_s = proposal_s
        self.learned: list[tuple[int, float, str]] = []

    def propose_s(self, job: ReplayJob) -> float | None:
        return self.proposal_s

    def learn(self, job: ReplayJob, runtime_s: float, state: str) -> None:
        self.learned.append((job.index, runtime_s, state))


def test_a_guarded_job_outliving_its_first_limit_is_raised_not_killed() -> None:
    # started at 0 under 60 s, runs 300 s of a 1000 s request: raised once, at 40, to the
    # request
    jobs = [make(0, 0, 300, 1000), make(1, 400, 5, 1000)]
    policy = Tight(60)
    score = replay(jobs, [policy])["tight"]
    figures = score.result().to_json()
    assert policy.learned[0] == (0, 300.0, "COMPLETED")  # its true runtime, no TIMEOUT
    assert figures["killed_all_pct"] == 0.0 and figures["killed_completed_pct"] == 0.0
    assert figures["raises_by_count"] == {"1": 1} and figures["raises"] == 1
    assert figures["raised_jobs"] == 1 and figures["raised_pct"] == 50.0
    # freed at submit: job 0 reserved 60 instead of 1000 (all 700 s of its slack), job 1 60 s
    assert figures["freed_pct"] == pytest.approx(100 * (700 + 995 - 55) / (700 + 995))


def test_the_guard_stops_at_the_request_where_the_job_would_have_died_anyway() -> None:
    jobs = [make(0, 0, 5000, 1800, state="TIMEOUT"), make(1, 9000, 10, 1800)]
    policy = Tight(60)
    figures = replay(jobs, [policy])["tight"].result().to_json()
    assert figures["raises_by_count"] == {"1": 1}  # to the request 1800, where it dies
    assert figures["killed_all_pct"] == 0.0  # at the user's own request: not the advisor's kill
    assert policy.learned[0] == (0, 5000.0, "TIMEOUT")


def test_the_same_limit_without_the_guard_kills() -> None:
    class Plain(Tight):
        name = "plain"
        guarded = False

    jobs = [make(0, 0, 300, 1000), make(1, 400, 5, 1000)]
    policy = Plain(60)
    figures = replay(jobs, [policy])["plain"].result().to_json()
    assert figures["killed_all_pct"] == 50.0 and "raises" not in figures
    assert policy.learned[0] == (0, 60.0, "TIMEOUT")


def test_the_guarded_policy_proposes_for_every_job_with_enough_history() -> None:
    # min_runs completed runs of 600 s: the next job gets the book's proposal, though it
    # came with its own request
    runs = GUARDED.min_runs
    jobs = [make(i, 1000 * i, 600, 36000) for i in range(runs + 1)]
    scores = replay(jobs, [GuardedPolicy()], keep=("guarded",))
    limits = [limit for _, limit, _ in scores["guarded"].limits or ()]
    proposal = 600 * (1 + GUARDED_MARGIN)
    assert limits == [36000] * runs + [whole_minutes_s(proposal)]
    assert limits[-1] < 36000


def test_a_guarded_job_without_history_plans_with_its_request_cells_median() -> None:
    # another user's jobs with the same request used 10 %, 20 % and 50 % of it
    jobs = [make(i, 0, run, 36000) for i, run in enumerate((3600, 7200, 18000))]
    jobs.append(ReplayJob(3, 3, 20000, 0, 100, 36000, True, "COMPLETED", "v", "", "", 1))
    scores = replay(jobs, [GuardedPolicy()], keep=("guarded",))
    limits = {index: limit for index, limit, _ in scores["guarded"].limits or ()}
    assert limits[3] == 7200  # the median share, 20 % of 36000 s


def test_groups_of_a_guarded_policy_count_raises_too() -> None:
    jobs = [make(0, 0, 300, 1000), make(1, 0, 30, 1000)]
    report = replay_report(jobs, source="x", by="user").to_json()
    group = report["groups"][0]["policies"]["guarded"]
    assert group["raises"] == report["policies"]["guarded"]["raises"] == 0  # no history yet
    validate(report, "replay-output", source="replay --by user")


def test_the_schedule_runs_each_policys_limits_and_keeps_killed_work_short() -> None:
    # on 2 processors: a 2-processor job killed by a tight limit frees the machine early
    jobs = [make(0, 0, 100, 1000, procs=2), make(1, 1, 10, 1000, procs=2)]

    class Kill:
        name = "kill"

        def propose_s(self, job: ReplayJob) -> float | None:
            return 60.0

        def learn(self, job: ReplayJob, runtime_s: float, state: str) -> None:
            pass

    contenders = [Kill(), Tight(60)]
    scores = replay(jobs, contenders, keep=("kill", "tight"))
    result = schedule_figures(jobs, scores, Machine(2, "test"))
    kill, tight = result.figures["kill"], result.figures["tight"]
    assert kill.mean_wait_s == pytest.approx((0 + 59) / 2)  # job 1 starts at 60
    assert tight.mean_wait_s == pytest.approx((0 + 99) / 2)  # raised: job 1 starts at 100
    assert tight.schedule_raises == 1  # 60 -> 120 at 40; ended at 100 before the next
    assert kill.schedule_raises is None and "schedule_raises" not in kill.to_json()
    assert kill.utilisation == pytest.approx((2 * 60 + 2 * 10) / (2 * 70))
    assert tight.mean_bounded_slowdown == pytest.approx((1 + (99 + 10) / 10) / 2)
    assert (result.procs, result.procs_from, result.jobs, result.clipped_to_machine) == (
        2,
        "test",
        2,
        0,
    )


def test_the_machine_of_an_swf_log_is_its_header_else_its_peak_allocation() -> None:
    jobs = [make(0, 0, 100, 200, procs=3), make(1, 50, 100, 200, procs=4, wait=10),
            make(2, 500, 10, 200, procs=2)]  # fmt: skip
    assert swf_machine({"MaxProcs": "100", "MaxNodes": "50"}, jobs) == (100, "SWF header MaxProcs")
    assert swf_machine({"MaxProcs": "-1", "MaxNodes": "50"}, jobs).procs == 50
    assert swf_machine({}, jobs) == (7, "the log's peak allocation")  # 3 + 4 from 60 to 100
    assert peak_allocation([make(0, 0, 10, 20, procs=5), make(1, 10, 10, 20, procs=5)]) == 5


def test_the_machine_of_sacct_records_is_the_snapshot_of_their_partitions() -> None:
    jobs = [ReplayJob(0, 0, 0, 0, 10, 20, True, "COMPLETED", "u", "", "cpu", 1)]
    nodes = [
        Node("c1", 2, 4000, (), ("cpu", "long"), "IDLE"),
        Node("c2", 2, 4000, (), ("cpu",), "IDLE"),
        Node("f1", 8, 64000, (), ("fat",), "IDLE"),
    ]
    assert snapshot_machine(nodes, jobs) == (4, "the cluster snapshot's CPUs in cpu")
    assert snapshot_machine(nodes[2:], jobs) is None


def test_replay_schedule_of_an_swf_excerpt_follows_the_schema(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = TEST_DATA / "traces" / "kth-sp2-excerpt.swf"
    assert main(["replay", str(log), "--schedule", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    validate(data, "replay-output", source="advisor replay --schedule")
    assert data["schedule"]["procs"] == 100 and data["schedule"]["jobs"] == 300
    for figures in data["policies"].values():
        assert figures["mean_bounded_slowdown"] >= 1.0 and 0 < figures["utilisation"] <= 1
    assert data["policies"]["user"]["killed_all_pct"] == 0.0


def test_replay_schedule_of_a_dump_uses_the_caches_snapshot_when_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = str(allocations(tmp_path))
    assert main(["replay", "--sacct-file", dump, "--schedule", "--format", "json"]) == 0
    peak = json.loads(capsys.readouterr().out)["schedule"]
    assert peak["procs_from"] == "the log's peak allocation"
    cache = tmp_path / "cache.db"
    with Store.open(cache) as store:
        save_cluster(
            store,
            [Partition(name, ("c1", "c2"), 86400, 1800, name == "cpu", "UP") for name in ("cpu", "long")]
            + [Partition("fat", ("f1",), 86400, 1800, False, "UP")],
            [Node("c1", 2, 4000, (), ("cpu", "long"), "IDLE"),
             Node("c2", 2, 4000, (), ("cpu", "long"), "IDLE"),
             Node("f1", 8, 64000, (), ("fat",), "IDLE")],
        )  # fmt: skip
    argv = ["replay", "--sacct-file", dump, "--schedule", "--db", str(cache), "--format", "json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    validate(data, "replay-output", source="advisor replay --sacct-file --schedule")
    assert data["schedule"]["procs"] == 12  # the dump's jobs ran in cpu, long and fat
    assert main([*argv[:-2], "--procs", "3", "--format", "json"]) == 0
    given = json.loads(capsys.readouterr().out)["schedule"]
    assert (given["procs"], given["procs_from"], given["jobs"]) == (3, "--procs", peak["jobs"])


def test_procs_without_schedule_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    log = TEST_DATA / "traces" / "kth-sp2-excerpt.swf"
    assert main(["replay", str(log), "--procs", "8"]) == 2
    assert "--procs is for --schedule" in capsys.readouterr().err


@pytest.fixture(scope="module", params=sorted(PWA_LOGS))
def scheduled(request: pytest.FixtureRequest, pwa_logs: dict[str, Path]) -> dict[str, Any]:
    path = pwa_logs[request.param]
    jobs = replay_jobs(read_swf(path))
    contenders = policies()
    scores = replay(jobs, contenders, keep=[p.name for p in contenders])
    figures = {name: score.result().to_json() for name, score in scores.items()}
    simulated = schedule_figures(jobs, scores, swf_machine(swf_header(path), jobs))
    schedule = {name: figures.to_json() for name, figures in simulated.figures.items()}
    return {"replay": figures, "schedule": schedule}


def test_on_the_real_logs_the_guard_kills_nothing_frees_a_third_and_shortens_the_queue(
    scheduled: dict[str, Any],
) -> None:
    guarded, user = scheduled["replay"]["guarded"], scheduled["schedule"]["user"]
    assert guarded["killed_completed_pct"] == 0.0 and guarded["killed_all_pct"] == 0.0
    assert guarded["freed_pct"] >= 30.0
    slowdown = scheduled["schedule"]["guarded"]["mean_bounded_slowdown"]
    assert slowdown <= 0.95 * user["mean_bounded_slowdown"]
    # the guard keeps all the work the advisor's kills lose (only the last end may move)
    assert scheduled["schedule"]["guarded"]["utilisation"] == pytest.approx(
        user["utilisation"], rel=1e-3
    )
    assert scheduled["schedule"]["advisor"]["utilisation"] < user["utilisation"]


def test_on_the_real_logs_the_existing_policies_keep_their_figures(
    scheduled: dict[str, Any],
) -> None:
    # the schema's KTH example and the README's figures (advisor: p16b may move it slightly)
    figures = scheduled["replay"]
    if figures["user"]["median_limit_over_run"] == pytest.approx(2.419, abs=5e-4):  # KTH
        assert figures["ave2x3"]["killed_completed_pct"] == pytest.approx(19.062, abs=5e-4)
        assert figures["max5x3"]["freed_pct"] == pytest.approx(26.018, abs=5e-4)
    else:
        assert figures["ave2x3"]["killed_completed_pct"] == pytest.approx(24.766, abs=5e-4)
        assert figures["max5x3"]["freed_pct"] == pytest.approx(77.165, abs=5e-4)
    assert figures["advisor"]["killed_completed_pct"] <= 1.0
