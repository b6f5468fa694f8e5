"""services.replay: the typed result says what its JSON says, and the JSON is the command's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.errors import UsageError
from advisor.replay.engine import GuardRaises, PolicyFigures
from advisor.replay.site_jobs import dump_jobs
from advisor.services.replay import LogSource, Replayed, ReplayRequest, replay
from advisor.slurm.records import Node, Partition
from advisor.store import Store
from advisor.store.cluster import save_cluster
from advisor.validate import validate
from tests.helpers.captures import allocations
from tests.helpers.paths import TEST_DATA

KTH = TEST_DATA / "traces" / "kth-sp2-excerpt.swf"
POLICIES = ["advisor", "guarded", "user", "ave2x1", "ave2x3", "max5x3"]


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["--format", "json", "replay", *argv]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_an_swf_replay_is_typed_and_its_json_is_the_commands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    done = replay(ReplayRequest(log=str(KTH)))
    data = done.to_json()
    assert data == _cli(capsys, str(KTH))
    validate(data, "replay-output", source="services.replay")
    assert done.source == LogSource(str(KTH), "swf")
    assert list(data) == ["log", "jobs", "scored", "completed", "policies", "source", "budget_pct"]
    assert data["budget_pct"] == 1.0 and "budgets" not in data
    whole = done.scores.figures
    assert (whole.jobs, whole.scored, whole.completed) == (
        data["jobs"], data["scored"], data["completed"],
    )  # fmt: skip
    assert list(whole.policies) == POLICIES
    advisor = whole.policies["advisor"]
    assert isinstance(advisor, PolicyFigures) and advisor.raises is None
    assert data["policies"]["advisor"]["freed_pct"] == advisor.freed_pct
    assert done.schedule is None and done.plotted is None
    # only the guarded policy has raises, and its JSON carries them
    assert list(done.raises) == ["guarded"]
    raised = done.raises["guarded"]
    assert isinstance(raised, GuardRaises)
    assert data["policies"]["guarded"]["raises_by_count"] == dict(raised.by_count)
    assert data["policies"]["guarded"]["raised_jobs"] == raised.raised_jobs


def test_by_user_and_schedule_put_the_queue_beside_each_policy_but_not_in_the_groups() -> None:
    done = replay(ReplayRequest(log=str(KTH), by="user", schedule=True, procs=16))
    data = done.to_json()
    validate(data, "replay-output", source="services.replay --by user --schedule")
    schedule = done.schedule
    assert schedule is not None and (schedule.procs, schedule.procs_from) == (16, "--procs")
    assert data["schedule"] == schedule.to_json()
    for name in POLICIES:
        queue = schedule.figures[name]
        assert data["policies"][name]["mean_wait_s"] == queue.mean_wait_s
        assert (queue.schedule_raises is not None) == (name == "guarded")
    assert data["by"] == done.scores.by == "user"
    assert [g["group"] for g in data["groups"]] == [g.group for g in done.scores.groups]
    assert sum(g.figures.jobs for g in done.scores.groups) == done.scores.figures.jobs
    assert all("mean_wait_s" not in p for g in data["groups"] for p in g["policies"].values())


def test_the_schedule_says_which_scheduler_it_simulated(capsys: pytest.CaptureFixture[str]) -> None:
    slurm = _cli(capsys, str(KTH), "--schedule", "--procs", "16",
                 "--scheduler-parameters", "bf_continue,bf_interval=60,bf_window=2880")  # fmt: skip
    easy = _cli(capsys, str(KTH), "--schedule", "--procs", "16", "--scheduler", "easy")
    for data in (slurm, easy):
        validate(data, "replay-output", source="advisor replay --schedule")
    assert slurm["schedule"]["scheduler"] == "slurm"
    assert slurm["schedule"]["scheduler_parameters"] == (
        "bf_interval=60,bf_max_job_test=500,bf_resolution=60,bf_window=2880"
    )
    assert (
        easy["schedule"]["scheduler"] == "easy" and "scheduler_parameters" not in easy["schedule"]
    )
    # the same limits, planned by two schedulers: the replay's own figures agree, the queue's not
    assert slurm["policies"]["user"]["freed_pct"] == easy["policies"]["user"]["freed_pct"]
    waits = [data["policies"][name]["mean_wait_s"] for data in (slurm, easy) for name in POLICIES]
    assert waits[: len(POLICIES)] != waits[len(POLICIES) :]
    exact = slurm["schedule"]["exact_limits"]["mean_bounded_slowdown"]
    assert main(["replay", str(KTH), "--schedule", "--procs", "16",
                 "--scheduler-parameters", "bf_continue,bf_interval=60,bf_window=2880"]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert "schedule: Slurm's main and backfill schedulers (bf_interval=60," in text
    assert (
        f"with exact limits (each job's own runtime) the same scheduler gives a mean bounded slowdown of {exact:.2f}"
        in text.replace("\n", " ")
    )


def test_a_sacct_dump_says_what_was_left_out(tmp_path: Path) -> None:
    done = replay(ReplayRequest(sacct_file=str(allocations(tmp_path))))
    source = done.source
    assert source.source == "sacct-file" and source.log == str(tmp_path / "sacct.txt")
    assert source.states == {"CANCELLED": 1, "COMPLETED": 13, "FAILED": 2, "TIMEOUT": 1}
    data = done.to_json()
    validate(data, "replay-output", source="services.replay --sacct-file")
    assert (data["skipped"], data["states"], data["warnings"]) == (
        dict(source.skipped or {}), source.states, list(source.warnings or ()),
    )  # fmt: skip
    assert list(data)[-5:] == ["source", "skipped", "states", "warnings", "budget_pct"]


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (ReplayRequest(log="x.swf", procs=8), "--procs is for --schedule"),
        (ReplayRequest(log="x.swf", sacct_file="d.txt"), "an SWF log takes no --sacct-file"),
        (ReplayRequest(), "what to replay?"),
        (ReplayRequest(log="x.swf", scheduler_parameters="bf_interval=60"), "is for --schedule"),
        (
            ReplayRequest(log="x.swf", schedule=True, scheduler="easy", scheduler_parameters=""),
            "with Slurm's scheduler",
        ),
        (
            ReplayRequest(log="x.swf", schedule=True, scheduler_parameters="bf_window=1d"),
            "bf_window=1d: not a positive whole number",
        ),
        (ReplayRequest(log="x.swf", schedule=True, scheduler="fifo"), "no scheduler 'fifo'"),
    ],
)
def test_a_request_without_one_log_is_a_usage_error(request_: ReplayRequest, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("?", r"\?")):
        replay(request_)


@pytest.mark.parametrize(
    ("log", "killed", "freed"),
    [("kth", 0.52734375, 6.992425162394851), ("curie", 0.8290957329206279, 30.795946771165504)],
)
def test_the_advisor_figures_on_the_real_logs_are_pinned(
    pwa_logs: dict[str, Path], log: str, killed: float, freed: float
) -> None:
    done: Replayed = replay(ReplayRequest(log=str(pwa_logs[log])))
    advisor = done.scores.figures.policies["advisor"]
    assert (advisor.killed_completed_pct, advisor.freed_pct) == pytest.approx(
        (killed, freed), rel=1e-12
    )


def test_schedule_runs_without_a_cache_as_plain_replay_does(tmp_path: Path) -> None:
    # Regression (issue 30): --schedule refused to run when the cache did not exist.
    missing = str(tmp_path / "none.db")
    done = replay(ReplayRequest(sacct_file=str(allocations(tmp_path)), schedule=True, db=missing))
    assert done.schedule is not None and done.schedule.procs_from == "the log's peak allocation"
    assert not (tmp_path / "none.db").exists()


def test_the_machine_is_the_same_from_advisor_db_as_from_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression (issue 30): with the cache in $ADVISOR_DB the schedule ran on the log's peak
    # allocation, with --db on the cache's cluster snapshot.
    log = allocations(tmp_path)
    cache = tmp_path / "cache.db"
    with Store.open(cache) as store:
        parts = sorted({row.partition for row in dump_jobs(log).jobs})
        save_cluster(
            store,
            [Partition(name, ("n1",), None, None, i == 0, "UP") for i, name in enumerate(parts)],
            [Node("n1", 48, 1000, (), tuple(parts), "IDLE")],
        )
    given = replay(ReplayRequest(sacct_file=str(log), schedule=True, db=str(cache)))
    monkeypatch.setenv("ADVISOR_DB", str(cache))
    from_env = replay(ReplayRequest(sacct_file=str(log), schedule=True))
    assert given.schedule is not None and from_env.schedule is not None
    assert given.schedule.procs == from_env.schedule.procs == 48
    assert from_env.schedule.procs_from.startswith("the cluster snapshot's CPUs")
