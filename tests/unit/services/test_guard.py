"""The guard's decisions on recorded real squeue output: which jobs, which raise, the ceilings.

Issue 31: the guard trusts only records users cannot edit (N1: a tag in ``--comment`` alone is
never raised; N12: an advice row of another user or cluster is another job), its ceilings stay
within QoS, association and reservation bounds, one user's many due jobs cannot make it late
for another's (N2), and its heartbeat leaves the export alone (N15).
"""

from __future__ import annotations

import copy
import json
import stat
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from advisor.advice.limits import PartitionLimit, decide
from advisor.advice.tag import Tag, format_tag, parse_tag
from advisor.errors import InputError
from advisor.guard_schedule import LEAD_S
from advisor.services.guard import (
    RAISE_WORKERS,
    USER_RAISES_PER_POLL,
    USER_ROUND,
    Guard,
    due_limit,
    heartbeat_file,
    raise_order,
    reservation_bound,
    run_guard,
    watched_job,
)
from advisor.slurm.jobs import RunningJob, advised_id, parse_running_jobs, update_id
from advisor.slurm.records import Association, Partition, Qos, Reservation, SiteLimits
from advisor.slurm.runner import CommandResult, SlurmCommands
from advisor.store.advice import Advice, GuardedRequest, guarded_requests, record_advice
from advisor.store.connection import Store
from advisor.store.guard import Heartbeat, guard_alive, heartbeat_age, write_heartbeat
from advisor.validate import schema
from tests.helpers.paths import TEST_DATA

SLURM = TEST_DATA / "slurm"
CLUSTER = "advisor"


def stdout_of(path: Path) -> str:
    """A recording's stdout: the lines after its '#' header."""
    lines = path.read_text().splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("#"))


GUARDED_2205 = stdout_of(SLURM / "22.05" / "squeue_guarded.json")
PARTITIONS_2205 = stdout_of(SLURM / "22.05" / "scontrol_show_partition.txt")
CPU = {"cpu": Partition("cpu", ("c1", "c2"), 86400, 1800, True, "UP")}


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


def test_a_tag_in_the_comment_alone_is_never_watched() -> None:
    """N1: job 4233's comment says guarded with req=5; nothing users cannot edit says so."""
    jobs = parse_running_jobs(GUARDED_2205)
    assert any("action=guarded" in j.comment for j in jobs)
    assert [w for j in jobs if (w := watched_job(j, {}, CPU))] == []


def job(
    limit_s: int,
    left_s: float,
    admin: str,
    now: float,
    *,
    user: str = "alice",
    job_id: int = 9,
    partition: str = "cpu",
    comment: str = "",
    nodes: tuple[str, ...] = ("c1",),
    qos: str = "",
    account: str = "research",
    reservation: str = "",
) -> RunningJob:
    start = int(now + left_s - limit_s)
    return RunningJob(job_id, user, partition, limit_s, start, int(now + left_s), comment, admin,
                      account, qos, nodes, reservation)  # fmt: skip


TAG = format_tag(Tag("lua", "guarded", 1, None, "t", None, 5))


@pytest.mark.parametrize(
    ("limit_s", "left_s", "expected"),
    [
        (60, LEAD_S + 5, None),  # not due yet
        (60, LEAD_S, 300),  # due: the ceiling at once, the user's 5 minutes
        (120, 10, 300),  # raised by someone else since: the ceiling all the same
        (300, 10, None),  # at the ceiling: killed at the user's own request, as without us
        (30, 10, None),  # lowered below the advice since (scontrol by its owner): left alone
    ],
)
def test_due_jobs_get_their_ceiling(limit_s: int, left_s: float, expected: int | None) -> None:
    now = 1_800_000_000.0
    watched = watched_job(job(limit_s, left_s, TAG, now), {}, CPU)
    assert watched is not None
    assert due_limit(watched, now) == expected


def test_the_lowest_ceiling_wins_advice_row_and_max_time() -> None:
    now = 1_800_000_000.0
    running = job(60, 10, TAG, now)
    by_row = watched_job(running, {9: GuardedRequest(60, 120)}, CPU)
    by_cap = watched_job(running, {}, {"cpu": CPU["cpu"]._replace(max_time_s=100)})
    assert by_row is not None and by_cap is not None
    assert (by_row.ceiling_s, by_cap.ceiling_s) == (120, 60)  # MaxTime in whole minutes
    assert (due_limit(by_row, now), due_limit(by_cap, now)) == (120, None)


def test_an_advice_row_of_the_advisor_vouches_without_an_admin_comment() -> None:
    now = 1_800_000_000.0
    plain = job(60, 10, "", now, comment=TAG)
    watched = watched_job(plain, {9: GuardedRequest(60, 300)}, CPU)
    assert watched is not None and due_limit(watched, now) == 300


def test_records_without_a_request_or_of_other_actions_are_left_alone() -> None:
    now = 1_800_000_000.0
    for admin in (
        "advisor:lua,action=lowered,limit=1",
        "advisor:lua,action=guarded,limit=1",  # no req: no ceiling known
        "advisor:lua,action=guarded,limit=0,req=5",
        "operator's note only",
    ):
        assert watched_job(job(60, 5, admin, now), {}, CPU) is None, admin


def site(*, qos_wall: int | None = None, assoc_wall: int | None = None) -> SiteLimits:
    return SiteLimits(
        {"normal": Qos("normal", None), "advshort": Qos("advshort", qos_wall)},
        (Association(CLUSTER, "research", "alice", "", assoc_wall, ("advshort", "normal"), ""),),
        {"alice": "research"},
        True,
        frozenset({"associations", "limits", "qos"}),
    )


def test_the_ceiling_stays_within_qos_association_and_partition_qos() -> None:
    """N1: an operator's raise skips Slurm's MaxWall checks; the guard's own bound holds."""
    now = 1_800_000_000.0
    big = format_tag(Tag("lua", "guarded", 1, None, "t", None, 600))
    qos_job = job(60, 10, big, now, qos="advshort")
    by_qos = watched_job(qos_job, {}, CPU, site(qos_wall=600))
    by_assoc = watched_job(job(60, 10, big, now, qos="normal"), {}, CPU, site(assoc_wall=420))
    part_qos = {"cpu": CPU["cpu"]._replace(qos="advshort")}
    by_part = watched_job(job(60, 10, big, now, qos="normal"), {}, part_qos, site(qos_wall=900))
    assert by_qos is not None and by_assoc is not None and by_part is not None
    assert (by_qos.ceiling_s, by_qos.bound) == (600, "QoS advshort MaxWall")
    assert (by_assoc.ceiling_s, by_assoc.bound) == (420, "association research/alice MaxWall")
    assert (by_part.ceiling_s, by_part.bound) == (900, "partition QoS advshort MaxWall")
    at_bound = watched_job(job(600, 10, big, now, qos="advshort"), {}, CPU, site(qos_wall=600))
    assert at_bound is not None and due_limit(at_bound, now) is None  # never past the QoS


def test_a_reservation_on_the_jobs_nodes_bounds_it_at_its_start() -> None:
    now = 1_800_000_000.0
    big = format_tag(Tag("lua", "guarded", 1, None, "t", None, 600))
    running = job(60, 10, big, now, nodes=("c1",))
    start = running.start_epoch
    maint = Reservation("maint", start + 400, start + 4000, ("c1", "c2"), ("MAINT",))
    elsewhere = Reservation("other", start + 100, start + 4000, ("f1",), ())
    assert reservation_bound(running, [elsewhere]) is None
    bound = reservation_bound(running, [maint, elsewhere])
    assert bound is not None and (bound.limit_s, bound.source) == (400, "reservation maint")
    watched = watched_job(running, {}, CPU, None, [maint])
    assert watched is not None and watched.ceiling_s == 360  # whole minutes before it starts
    inside = job(60, 10, big, now, reservation="maint")
    own = reservation_bound(inside, [maint])
    assert own is not None and own.source == "reservation maint ends"


def test_req_round_trips_in_the_tag_and_a_unicode_digit_is_no_request() -> None:
    assert parse_tag(f"x {TAG}") == Tag("lua", "guarded", 1, None, "t", None, 5)
    forged = parse_tag("advisor:wrapper,action=guarded,limit=1,req=\u0665")
    assert forged is not None and forged.request_min is None


class Replayed:
    """A runner answering squeue and scontrol show with recordings, recording every argv.

    sacctmgr answers as on a site without slurmdbd (the guard then uses the cache's limits).
    """

    def __init__(self, squeue: str, partitions: str = PARTITIONS_2205, latency_s: float = 0.0):
        self.squeue, self.partitions, self.latency_s = squeue, partitions, latency_s
        self.calls: list[tuple[str, ...]] = []
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0

    def __call__(
        self, argv: Sequence[str], timeout_s: float, stdin: str | None = None
    ) -> CommandResult:
        with self.lock:
            self.calls.append(tuple(argv))
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.latency_s and argv[:2] == ["scontrol", "update"]:
                time.sleep(self.latency_s)
            return self.answer(argv)
        finally:
            with self.lock:
                self.in_flight -= 1

    def answer(self, argv: Sequence[str]) -> CommandResult:
        if argv[0] == "squeue":
            return CommandResult(tuple(argv), 0, self.squeue, "")
        if list(argv[:3]) == ["scontrol", "show", "partition"]:
            return CommandResult(tuple(argv), 0, self.partitions, "")
        if list(argv[:3]) == ["scontrol", "show", "reservation"]:
            return CommandResult(tuple(argv), 0, "No reservations in the system\n", "")
        if argv[0] == "sacctmgr":
            return CommandResult(tuple(argv), 1, "", "sacctmgr: error: Problem talking to the "
                                 "database: Connection refused")  # fmt: skip
        return CommandResult(tuple(argv), 0, "", "")


def updates(runner: Replayed) -> list[tuple[str, ...]]:
    return [c for c in runner.calls if c[:2] == ("scontrol", "update")]


def vouched(store: Store, job_id: int, user: str = "root", cluster: str = CLUSTER) -> None:
    """The advice row the wrapper writes into the cache when policy guarded lowered a job."""
    record_advice(store, Advice(user, "guarded", ["sbatch"], "submitted", job_id=job_id,
                                cluster=cluster, limit_s=60, request_s=300))  # fmt: skip


def test_one_poll_is_one_squeue_one_raise_and_a_heartbeat(tmp_path: Path) -> None:
    runner = Replayed(GUARDED_2205)
    mine = next(j for j in parse_running_jobs(GUARDED_2205) if j.job_id == 4233)
    assert mine.end_epoch is not None
    lines: list[str] = []
    with Store.open(tmp_path / "cache.db") as store:
        vouched(store, 4233)
        guard = Guard(store, SlurmCommands(runner, sleep=lambda s: None), log=lines.append,
                      clock=lambda: mine.end_epoch - 20, cluster=CLUSTER)  # fmt: skip
        done = run_guard(guard, once=True)
        assert heartbeat_age(store, now=(mine.end_epoch or 0) - 20) == pytest.approx(0)
    assert [c[0] for c in runner.calls].count("squeue") == 1
    assert updates(runner) == [("scontrol", "update", "JobId=4233", "TimeLimit=00:05:00")]
    assert done.last is not None and done.last.watched == 1
    assert lines[-1] == (
        "advisor guard: job 4233 (user root): time limit 00:01:00 -> 00:05:00 "
        "(20 s were left; ceiling 00:05:00)"
    )


def test_a_forged_comment_tag_gets_no_raise(tmp_path: Path) -> None:
    """N1, as the review reproduced it: a comment tag alone (4233's) made the guard raise."""
    runner = Replayed(GUARDED_2205)
    mine = next(j for j in parse_running_jobs(GUARDED_2205) if j.job_id == 4233)
    with Store.open(tmp_path / "cache.db") as store:
        vouched(store, 4233, user="mallory")  # N12: another user's row of the same job id
        vouched(store, 4233, cluster="elsewhere")  # and another cluster's
        guard = Guard(store, SlurmCommands(runner), clock=lambda: (mine.end_epoch or 0) - 20,
                      cluster=CLUSTER)  # fmt: skip
        done = run_guard(guard, once=True)
    assert updates(runner) == []
    assert done.last is not None and done.last.watched == 0


def test_a_poll_far_from_any_limit_asks_slurm_once(tmp_path: Path) -> None:
    runner = Replayed(GUARDED_2205, "")
    with Store.open(tmp_path / "cache.db") as store:
        vouched(store, 4233)
        run_guard(Guard(store, SlurmCommands(runner), clock=lambda: 0.0, cluster=CLUSTER),
                  once=True)  # fmt: skip
    assert runner.calls == [("squeue", "--all", "--json")]


def test_the_advice_row_counts_for_its_own_user_and_cluster_only(tmp_path: Path) -> None:
    """N12: rows were matched by job id alone; a spool line is its user's own text."""
    with Store.open(tmp_path / "cache.db") as store:
        vouched(store, 4233, user="alice")
        vouched(store, 4233, user="mallory")
        record_advice(store, Advice("alice", "guarded", ["sbatch"], "submitted", job_id=4233,
                                    cluster=CLUSTER, limit_s=60, request_s=60))  # fmt: skip
        record_advice(store, Advice("bob", "guarded", ["sbatch"], "submitted", job_id=4234,
                                    cluster=CLUSTER, limit_s=60, request_s=900),
                      origin="spool")  # fmt: skip
        record_advice(store, Advice("alice", "fill", ["sbatch"], "submitted", job_id=4235,
                                    cluster=CLUSTER))  # fmt: skip
        pairs = [(4233, "alice"), (4234, "bob"), (4235, "alice")]
        assert guarded_requests(store, pairs, CLUSTER) == {4233: GuardedRequest(60, 60)}
        assert guarded_requests(store, pairs, None) == {}
        plan = store.conn.execute(
            "EXPLAIN QUERY PLAN SELECT * FROM advice WHERE cluster = ? AND job_id = ?",
            (CLUSTER, 1),
        ).fetchall()
        assert "advice_job" in str(plan)


def squeue_of(jobs: list[dict[str, Any]]) -> str:
    """The 22.05 recording with its jobs replaced (each a copy of job 4233, changed)."""
    doc = json.loads(GUARDED_2205)
    model = next(j for j in doc["jobs"] if j["job_id"] == 4233)
    doc["jobs"] = [{**copy.deepcopy(model), **changes} for changes in jobs]
    return json.dumps(doc)


def test_one_users_many_due_jobs_do_not_make_the_guard_late_for_another(tmp_path: Path) -> None:
    """N2: 2,000 of mallory's due jobs listed first, alice's genuine one last with more time
    left; the raises were made one by one in squeue's order, alice's after all of mallory's."""
    now = 1_800_000_000
    tag = "advisor:lua,action=guarded,limit=1,task=x,req=60"
    many = [{"job_id": 10_000 + i, "user_name": "mallory", "admin_comment": tag,
             "start_time": now - 45, "end_time": now + 15, "time_limit": 1}
            for i in range(2000)]  # fmt: skip
    alice = {"job_id": 99, "user_name": "alice", "admin_comment": tag,
             "start_time": now - 40, "end_time": now + 20, "time_limit": 1}  # fmt: skip
    runner = Replayed(squeue_of([*many, alice]), latency_s=0.001)
    lines: list[str] = []
    with Store.open(tmp_path / "cache.db") as store:
        guard = Guard(store, SlurmCommands(runner), clock=lambda: float(now), cluster=CLUSTER,
                      log=lines.append)  # fmt: skip
        done = run_guard(guard, once=True)
    raised = [c[2] for c in updates(runner)]
    # behind at most one round of mallory's: the raises start in that order, RAISE_WORKERS at
    # a time, so a worker may reach scontrol up to RAISE_WORKERS - 1 places late (seen on a busy
    # machine: 23); raise_order's own test below holds the order exactly
    assert raised.index("JobId=99") <= USER_ROUND + RAISE_WORKERS - 1
    assert len(raised) == USER_RAISES_PER_POLL + 1  # mallory's rest waits for the next poll
    assert done.last is not None and done.last.deferred == 2000 - USER_RAISES_PER_POLL
    assert runner.most_in_flight > 1  # concurrent
    assert any("wait for the next" in line for line in lines)


def test_raise_order_is_by_time_left_a_round_per_user() -> None:
    now = 1_800_000_000.0
    watched = []
    for user, count, left in (("mallory", 40, 5.0), ("alice", 2, 20.0), ("bob", 1, 1.0)):
        for i in range(count):
            running = job(60, left + i * 0.01, TAG, now, user=user, job_id=len(watched) + 1)
            item = watched_job(running, {}, CPU)
            assert item is not None
            watched.append((item, 120))
    order, deferred = raise_order(watched)
    users = [item.job.user for item, _ in order]
    assert deferred == 0 and len(order) == 43
    assert users[0] == "bob"  # least time left
    assert set(users[: USER_ROUND + 3]) == {"bob", "mallory", "alice"}  # alice in round one
    assert users[USER_ROUND + 3 :] == ["mallory"] * (40 - USER_ROUND)


def test_the_heartbeat_goes_to_its_own_file_and_the_export_is_left_alone(tmp_path: Path) -> None:
    """N15: the guard replaced the export at every poll, so slurmctld decoded it again."""
    export = tmp_path / "advisor-limits.json"
    example = json.dumps(schema("export")["examples"][0])
    export.write_text(example)
    before = export.stat()
    runner = Replayed(GUARDED_2205)
    with Store.open(tmp_path / "cache.db") as store:
        guard = Guard(store, SlurmCommands(runner), export=str(export), clock=lambda: 1.8e9,
                      cluster=CLUSTER)  # fmt: skip
        run_guard(guard, once=True)
    after = export.stat()
    assert (after.st_ino, after.st_mtime_ns, export.read_text()) == (
        before.st_ino, before.st_mtime_ns, example,
    )  # fmt: skip
    beat = heartbeat_file(export)
    assert beat == tmp_path / "advisor-limits.guard.json"
    doc = json.loads(beat.read_text())
    jsonschema.validate(doc, schema("guard-heartbeat"))
    assert doc == {"heartbeat_epoch": 1_800_000_000, "poll_s": 10, "fresh_s": 30}
    # user slurm reads it, not only the export's group (a new export file is 0640)
    assert stat.S_IMODE(beat.stat().st_mode) == 0o644


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


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_an_array_task_goes_by_its_arrays_advice_row_and_is_raised_alone(
    version: str, tmp_path: Path
) -> None:
    """Task 1 of array 25 runs as job 27: the row names 25, the raise names 25_1 (not 25)."""
    recorded = stdout_of(SLURM / version / "squeue.json")
    task = next(j for j in parse_running_jobs(recorded) if j.job_id == 27)
    assert (task.array_job_id, task.array_task_id) == (25, 1)
    assert (advised_id(task), update_id(task)) == (25, "25_1")
    plain = next(j for j in parse_running_jobs(recorded) if j.job_id == 12)
    assert (plain.array_job_id, plain.array_task_id, update_id(plain)) == (None, None, "12")
    runner = Replayed(recorded)
    assert task.end_epoch is not None and task.limit_s is not None
    with Store.open(tmp_path / "cache.db") as store:
        record_advice(store, Advice("root", "guarded", ["sbatch"], "submitted", job_id=25,
                                    cluster=CLUSTER, limit_s=task.limit_s,
                                    request_s=task.limit_s + 600))  # fmt: skip
        vouched(store, 27, user="mallory")  # another user's row of the task's own id: not it
        guard = Guard(store, SlurmCommands(runner, sleep=lambda s: None),
                      clock=lambda: task.end_epoch - 20, cluster=CLUSTER)  # fmt: skip
        done = run_guard(guard, once=True)
    raised = updates(runner)
    assert [c[2] for c in raised] == ["JobId=25_1"], raised
    assert done.last is not None and done.last.watched == 1
