"""``advisor readvise``'s parts on recorded real squeue output and a real cache.

The pass itself (squeue, the stored script, scontrol update) runs on the real cluster in
tests/integration/test_readvise.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.errors import InputError
from advisor.services.readvise import (
    Readvised,
    command_line,
    marked_waiting,
    partition_default_s,
    readvise_line,
)
from advisor.slurm.jobs import PendingJob, advised_id, parse_pending_jobs, update_id
from advisor.slurm.records import Partition
from advisor.store.advice import Advice, WaitingAdvice, pending_advice, record_advice
from advisor.store.connection import Store
from advisor.validate import validate
from tests.helpers.paths import TEST_DATA

SLURM = TEST_DATA / "slurm"


def stdout_of(path: Path) -> str:
    """A recording's stdout: the lines after its '#' header."""
    return "".join(line for line in path.read_text().splitlines(True) if not line.startswith("#"))


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_only_pending_jobs_are_read_and_arrays_go_by_their_pending_tasks(version: str) -> None:
    jobs = parse_pending_jobs(stdout_of(SLURM / version / "squeue.json"))
    by_id = {job.job_id: job for job in jobs}
    # the running and ended jobs of the recording are left out
    assert sorted(by_id) == [14, 15, 16, 17, 19, 20, 21, 22, 23, 24, 25, 26]
    assert by_id[16].name == "long-2d" and by_id[16].partition == "long"
    assert by_id[16].limit_s == 2 * 24 * 3600 and by_id[16].user == "root"
    assert by_id[17].name == "name|with|pipe" and by_id[24].name == "two\nlines"
    assert by_id[22].limit_s == 1800  # no --time: the partition's DefaultTime
    # an array's pending tasks (1-2; 2-3%1, whose task 1 runs as job 27): one record each, the
    # advice rows' id the array's, updated as its pending tasks only (the array's id alone
    # would change the running task 27 too), the throttle left out
    arrays = {job.job_id: (advised_id(job), update_id(job)) for job in jobs if job.array_job_id}
    assert arrays == {19: (19, "19_[1-2]"), 25: (25, "25_[2-3]")}
    assert update_id(by_id[16]) == "16" and advised_id(by_id[16]) == 16
    # a remainder whose list Slurm shortened names no exact set of tasks: left alone
    assert update_id(by_id[25]._replace(array_tasks="1,3,5,7...")) is None


def test_bad_output_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="not JSON"):
        parse_pending_jobs("squeue: error: x")
    with pytest.raises(InputError, match="job 7: field time_limit"):
        parse_pending_jobs(json.dumps({"jobs": [{"job_id": 7, "job_state": "PENDING",
                                                  "time_limit": "soon"}]}))  # fmt: skip


def _row(job: int, *, user: str = "alice", limit_s: int | None = None, policy: str = "fill",
         cluster: str = "c", outcome: str = "submitted") -> Advice:  # fmt: skip
    return Advice(user=user, policy=policy, argv=["-J", "align", "job.sh"], outcome=outcome,  # type: ignore[arg-type]
                  task="align", cluster=cluster, job_id=job, limit_s=limit_s)  # fmt: skip


def test_waiting_advice_is_the_newest_row_when_it_set_no_limit(tmp_path: Path) -> None:
    with Store.open(str(tmp_path / "cache.db")) as store:
        record_advice(store, _row(1))  # left as written: waiting
        record_advice(store, _row(2))
        record_advice(store, _row(2, limit_s=600, policy="history"))  # readvised since
        record_advice(store, _row(3, limit_s=600))  # advised at submit
        record_advice(store, _row(4, policy="advise"))  # only advises
        record_advice(store, _row(5, user="bob"))  # another user's job id
        record_advice(store, _row(6, cluster="other"))
        record_advice(store, _row(7, outcome="failed"))
        jobs = [(n, "alice") for n in range(1, 8)]
        found = pending_advice(store, jobs, "c").waiting
        assert found == {1: WaitingAdvice("fill", ("-J", "align", "job.sh"), "align")}
        assert pending_advice(store, jobs, None).waiting == {}
        assert pending_advice(store, [(5, "bob")], "c").waiting == {5: found[1]}


def test_a_guarded_submission_left_as_written_is_waiting_too(tmp_path: Path) -> None:
    # the guard raises what readvise lowers under guarded, so such a job is asked again
    with Store.open(str(tmp_path / "cache.db")) as store:
        record_advice(store, _row(1, policy="guarded"))
        record_advice(store, _row(2, policy="guarded", limit_s=600))
        found = pending_advice(store, [(1, "alice"), (2, "alice")], "c").waiting
        assert found == {1: WaitingAdvice("guarded", ("-J", "align", "job.sh"), "align")}
        assert command_line(found[1], None).advisor.policy == "guarded"


def test_a_partitions_default_limit_and_the_log_line() -> None:
    cpu = Partition("cpu", ("c1",), 86400, 1800, True, "UP")
    assert partition_default_s(cpu) == 1800
    assert partition_default_s(cpu._replace(default_time_s=None)) == 86400
    assert partition_default_s(None) is None
    item = Readvised(job_id=9, user="alice", name="align", from_s=1800, to_s=420,
                     action="set", reason="no --time given")  # fmt: skip
    assert readvise_line(item, True) == (
        "advisor readvise: job 9 (user alice, 'align'): would lower the time limit "
        "00:30:00 -> 00:07:00 (no --time given)"
    )
    doc = {"pending": 3, "waiting": 1, "dry_run": True, "readvised": [item.to_json()],
           "failures": []}  # fmt: skip
    validate(doc, "readvise-output", source="readvise")


def test_the_advisors_own_options_in_a_row_are_ignored() -> None:
    # a spool line is its user's text: the pass (an operator) must read no file it names
    row = WaitingAdvice("tighten", ("--advisor-insitu", "/etc/shadow", "--advisor-input",
                                    "/root/x", "--advisor-db", "/tmp/other.db", "-J", "align",
                                    "--time=1:00:00", "job.sh"), "align")  # fmt: skip
    cmd = command_line(row, "/var/lib/cache.db")
    assert cmd.advisor.insitu is None and cmd.advisor.inputs == () and cmd.advisor.task is None
    assert (cmd.advisor.policy, cmd.advisor.db) == ("tighten", "/var/lib/cache.db")
    assert cmd.sbatch.script == "job.sh" and {o.name for o in cmd.sbatch.options} >= {"job-name"}
    # a recorded 'history' row was advised under fill
    assert command_line(row._replace(policy="history"), None).advisor.policy == "fill"


MARK = "advisor:lua,action=waiting,limit=0,task=snp_%23"


def _pending(**fields: str) -> PendingJob:
    return PendingJob(**{"job_id": 7, "user": "alice", "name": "snp_#", "partition": "cpu",
                         "limit_s": 1800, **fields})  # type: ignore[arg-type]  # fmt: skip


def test_the_plugins_mark_in_the_admin_comment_is_a_submission_to_advise() -> None:
    found = marked_waiting(_pending(admin_comment=f"ops {MARK}", comment="rule_x"))
    assert found == WaitingAdvice(
        "fill", ("--job-name=snp_#", "--partition=cpu", "--comment=rule_x"), "snp_#"
    )
    assert command_line(found, None).advisor.policy == "fill"
    mark = marked_waiting(_pending(admin_comment=MARK))
    assert mark is not None and mark.argv == ("--job-name=snp_#", "--partition=cpu")
    # a name that reads as an option is still only the job's name
    odd = marked_waiting(_pending(admin_comment=MARK, name="--advisor-insitu=/etc/shadow"))
    assert odd is not None
    cmd = command_line(odd, None)
    assert cmd.advisor.insitu is None and not cmd.sbatch.invalid
    assert ("job-name", "--advisor-insitu=/etc/shadow") in cmd.sbatch.options
    # the owner's own comment is never the plugin's record; nor is another tag or action
    assert marked_waiting(_pending(comment=MARK)) is None
    assert marked_waiting(_pending(admin_comment=MARK.replace("lua", "x"))) is None
    guarded = "advisor:lua,action=guarded,limit=5,task=a,req=60"
    assert marked_waiting(_pending(admin_comment=guarded)) is None
    assert marked_waiting(_pending(admin_comment=MARK, partition="")) is None


def test_advised_jobs_are_those_with_any_row_of_their_user_and_cluster(tmp_path: Path) -> None:
    with Store.open(str(tmp_path / "cache.db")) as store:
        record_advice(store, _row(1))
        record_advice(store, _row(2, limit_s=600))
        record_advice(store, _row(3, user="bob"))
        record_advice(store, _row(4, cluster="other"))
        record_advice(store, _row(5, outcome="fallback"))  # whatever the outcome
        jobs = [(n, "alice") for n in range(1, 6)]
        assert pending_advice(store, jobs, "c").advised == {1, 2, 5}
        assert pending_advice(store, jobs, None).advised == set()
