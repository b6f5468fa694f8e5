"""``advisor replay`` on sacct records recorded from the real test cluster (tests/data/slurm).

sacct_allocations.txt is capture-fixtures.sh's dump (its row of job 47, whose name holds the
delimiter, is left out: today's reader refuses such a file); sacct_replay_jobs.txt and
sacct_replay_jobs_live.txt are the jobs of tests/integration/test_replay_sacct.py, dumped with
a header and as the live query prints them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.replay.engine import limit_series, replay
from advisor.replay.jobs import sacct_replay_jobs
from advisor.replay.site_jobs import dump_jobs, sacct_jobs
from advisor.services.replay import policies, replay_report
from advisor.slurm.backend import CliBackend
from advisor.slurm.runner import CommandResult, SlurmCommands
from advisor.validate import validate
from tests.helpers.captures import allocations, capture


def test_the_jobs_are_the_final_allocations_in_submit_order_with_clipped_requests(
    tmp_path: Path,
) -> None:
    site = dump_jobs(allocations(tmp_path))
    jobs = site.jobs
    assert len(jobs) == 17 and site.source == "sacct-file"
    assert site.states == {"CANCELLED": 1, "COMPLETED": 13, "FAILED": 2, "TIMEOUT": 1}
    assert [(j.submit_s, j.job_id) for j in jobs] == sorted((j.submit_s, j.job_id) for j in jobs)
    by_id = {job.job_id: job for job in jobs}
    # the longest runtime is job 42's 70 s (TIMEOUT at its 1-minute limit): it clips the rest
    assert by_id[42].run_s == 70 and by_id[42].request_s == 60 and by_id[42].state == "TIMEOUT"
    assert by_id[46].request_s == 70  # 2-00:00:00 requested
    assert by_id[43].wait_s == 4 and by_id[43].partition == "long"  # submitted :10, started :14
    assert not by_id[43].completed and by_id[38].completed
    assert by_id[38].name == "done-cpu" and by_id[38].user == "root"


def test_figures_on_the_recorded_allocations_by_hand(tmp_path: Path) -> None:
    """15 scored (jobs 36 and 50 ran 0 s), 12 of them completed well within their request."""
    report = replay_report(dump_jobs(allocations(tmp_path)).jobs, source="x").to_json()
    assert (report["jobs"], report["scored"], report["completed"]) == (17, 15, 12)
    user = report["policies"]["user"]
    assert user["median_limit_over_run"] == 70.0  # most ran 1-2 s under a (clipped) 70 s
    # min(run, limit) / max(run, limit): 1+2+2+2 (37-40) + 1 (41) + 60 (42) + 1 (43) + 8 × 1, over 70
    assert user["accuracy"] == pytest.approx((1 + 2 + 2 + 2 + 1 + 60 + 1 + 8) / 70 / 15)
    assert (user["killed_all_pct"], user["freed_pct"], user["changed_pct"]) == (0.0, 0.0, 0.0)
    validate(report, "replay-output", source="replay")


def test_since_and_until_select_the_jobs_that_ended_in_between(tmp_path: Path) -> None:
    path = allocations(tmp_path)
    cut = datetime(2026, 11, 29, 15, 17, 16)
    early = dump_jobs(path, until=cut)
    late = dump_jobs(path, since=cut)
    assert len(early.jobs) + len(late.jobs) == 17
    assert {j.job_id for j in early.jobs} == {36, 37, 38, 39, 40, 41, 43, 48}
    assert late.skipped == {"ended_outside_window": 8} and early.skipped == {
        "ended_outside_window": 9
    }


def test_a_job_counted_twice_is_replayed_once(tmp_path: Path) -> None:
    """Dumps concatenated over the same period repeat jobs: one job per cluster and job id."""
    from advisor.accounting.sacct_file import read_sacct_dump

    records = [job for _, job in read_sacct_dump(allocations(tmp_path))]
    assert sacct_replay_jobs(records + records) == sacct_replay_jobs(records)


def test_by_partition_splits_the_scored_jobs_without_changing_the_whole(tmp_path: Path) -> None:
    jobs = dump_jobs(allocations(tmp_path)).jobs
    whole = replay_report(jobs, source="x").to_json()
    grouped = replay_report(jobs, source="x", by="partition").to_json()
    assert grouped["policies"] == whole["policies"]
    groups = {group["group"]: group for group in grouped["groups"]}
    assert sorted(groups) == ["cpu", "fat", "long"]
    assert sum(g["jobs"] for g in groups.values()) == 17
    assert sum(g["scored"] for g in groups.values()) == whole["scored"]
    assert sum(g["completed"] for g in groups.values()) == whole["completed"]
    validate(grouped, "replay-output", source="replay --by partition")


def test_the_picture_has_a_point_per_scored_job_before_and_after(tmp_path: Path) -> None:
    jobs = dump_jobs(allocations(tmp_path)).jobs
    scores = replay(jobs, policies(), keep=("user", "advisor"))
    series = limit_series(jobs, scores)
    before, after = series["the users' limits"], series["the advisor's"]
    assert len(before) == len(after) == 15
    assert sum(killed for _, _, killed in before) == 1  # job 42 timed out at its own limit
    assert max(limit for _, limit, _ in before) == 70.0


def _runner(stdout: str, calls: list[Sequence[str]], recorded: str = "\x1f") -> Any:
    """sacct's recorded output, its delimiter replaced by the one this call asked for.

    The recording is of the allocation query: the steps query (the jobs' peak memory) gets no
    rows, and is not counted in calls.
    """

    def run(argv: Sequence[str], timeout_s: float, stdin: str | None = None) -> CommandResult:
        if "--allocations" not in argv:
            return CommandResult(list(argv), 0, "", "")
        calls.append(list(argv))
        asked = next(a for a in argv if a.startswith("--delimiter=")).split("=", 1)[1]
        return CommandResult(list(argv), 0, stdout.replace(recorded, asked), "")

    return run


def test_live_sacct_and_the_dump_give_the_same_jobs(tmp_path: Path) -> None:
    """The live path on the live query's recorded output, the file path on the dump."""
    live = capture("sacct_replay_jobs_live.txt")
    dump = tmp_path / "dump.txt"
    dump.write_text(capture("sacct_replay_jobs.txt").body)
    start = datetime.fromisoformat(live.header["command"].split("--starttime=")[1].split()[0])
    end = datetime.fromisoformat(live.header["command"].split("--endtime=")[1].split()[0])
    calls: list[Sequence[str]] = []
    backend = CliBackend(SlurmCommands(_runner(live.body, calls)))
    from_sacct = sacct_jobs(backend, since=start, until=end)
    from_file = dump_jobs(dump, since=start, until=end)
    assert len(calls) == 1 and f"--starttime={start.isoformat()}" in calls[0]
    assert from_sacct.jobs == from_file.jobs and len(from_file.jobs) == 18
    assert from_sacct.states == from_file.states


def test_workflow_jobs_are_replayed_under_their_task_key(tmp_path: Path) -> None:
    dump = tmp_path / "dump.txt"
    dump.write_text(capture("sacct_replay_jobs.txt").body)
    names = {job.name for job in dump_jobs(dump).jobs}
    assert any(name.startswith("RP") and name.endswith("_QC_FASTQC") for name in names)
    assert any(name.startswith("sort_") for name in names)
    assert not any(name.startswith("nf-") or len(name) == 36 for name in names)


def test_a_baseline_changes_only_the_jobs_submitted_after_one_had_ended(tmp_path: Path) -> None:
    """AVE2×1 on the recorded run: a job's limit drops to the 1-minute minimum once the user
    has a job that ended before it was submitted (the integration test's second wave)."""
    dump = tmp_path / "dump.txt"
    dump.write_text(capture("sacct_replay_jobs.txt").body)
    jobs = dump_jobs(dump).jobs
    scores = replay(jobs, policies(), keep=("ave2x1",))
    changed = {
        index for index, limit, _ in scores["ave2x1"].limits or () if limit != jobs[index].request_s
    }
    ends = [job.submit_s + job.wait_s + (job.run_s or 0) for job in jobs]
    after_one = {job.index for job in jobs if job.scored and min(ends) <= job.submit_s}
    assert changed == after_one and len(changed) == 5  # 3 short + 2 Nextflow jobs; exit 3 ran 0 s
    assert {limit for index, limit, _ in scores["ave2x1"].limits or () if index in changed} == {60}


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_command_replays_a_dump_by_user_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _cli(capsys, "replay", "--sacct-file", str(allocations(tmp_path)),
                        "--by", "user", "--format", "json")  # fmt: skip
    assert code == 0
    data = json.loads(out)
    validate(data, "replay-output", source="advisor replay --sacct-file")
    assert data["source"] == "sacct-file" and data["by"] == "user"
    assert [g["group"] for g in data["groups"]] == ["nobody", "root"]  # job 51 ran as nobody


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["replay"], "what to replay?"),
        (["replay", "x.swf", "--since", "7d"], "an SWF log takes no"),
        (["replay", "--since", "tomorrow"], "--since 'tomorrow': not a date"),
        (["replay", "--since", "2099-01-01"], "is not before"),
        (
            ["replay", "--sacct-file", "x", "--since", "2024-02-01", "--until", "2024-01-01"],
            "is not before --until",
        ),
    ],
)
def test_usage_errors_say_what_to_give(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = _cli(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) <= 2 and message in err


def _replay_json(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any, str]:
    code = main(["--format", "json", "replay", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else None, err


def test_replay_reads_a_dump_as_update_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same jobs from the dump as recorded, without Cluster and JobIDRaw, with another
    delimiter, and --noheader with --fields: the replay takes update's reader and its options."""
    text = capture("sacct_replay_jobs.txt").body
    header, *rows = text.splitlines(keepends=True)
    fields = header.rstrip("\n").split("|")
    keep = [i for i, name in enumerate(fields) if name not in ("Cluster", "JobIDRaw")]

    def dump(name: str, delimiter: str, *, with_header: bool = True) -> Path:
        lines = [[line.rstrip("\n").split("|")[i] for i in keep] for line in [header, *rows]]
        path = tmp_path / name
        path.write_text("".join(delimiter.join(v) + "\n" for v in lines[0 if with_header else 1 :]))
        return path

    (tmp_path / "whole.txt").write_text(text)
    code, whole, _ = _replay_json("--sacct-file", str(tmp_path / "whole.txt"), capsys=capsys)
    assert code == 0 and whole["jobs"] == 18
    bare = dump("bare.txt", "|")
    tabs = dump("tabs.txt", "\t")
    noheader = dump("noheader.txt", "|", with_header=False)
    names = ",".join(fields[i] for i in keep)
    code, _, err = _replay_json("--sacct-file", str(bare), capsys=capsys)  # Comment is last
    assert code == 2 and "the last field, Comment, is text users write" in err
    for args in (
        (str(bare), "--trust-names"),
        (str(tabs), "--trust-names"),
        (str(noheader), "--fields", names, "--trust-names"),
        (str(tabs), "--delimiter", "\t", "--cluster", "other", "--trust-names"),
    ):
        code, data, err = _replay_json("--sacct-file", *args, capsys=capsys)
        assert code == 0, err
        assert data["policies"] == whole["policies"] and data["jobs"] == whole["jobs"]


def test_replay_skips_or_refuses_an_unreadable_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = capture("sacct_replay_jobs.txt").body
    header, first, *rest = text.splitlines(keepends=True)
    state = header.rstrip("\n").split("|").index("State")
    values = first.rstrip("\n").split("|")
    values[state] = "FOO"
    path = tmp_path / "foo.txt"
    path.write_text("".join([header, "|".join(values) + "\n", *rest]))
    code, data, err = _replay_json("--sacct-file", str(path), capsys=capsys)
    assert code == 0
    assert data["skipped"]["unknown_state"] == 1 and data["jobs"] == 17
    assert f"{path}:2" in err and "FOO" in err and f"{path}:2" in data["warnings"][0]
    code, _, err = _replay_json("--sacct-file", str(path), "--strict", capsys=capsys)
    assert code == 2 and f"{path}:2" in err and "--strict" in err


def test_replay_reads_sacct_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """sacct --json of the recorded separator jobs: every job replayed, names intact."""
    path = tmp_path / "jobs.json"
    path.write_text(capture("forms/sacct_separators.json").body)
    code, data, err = _replay_json("--sacct-file", str(path), capsys=capsys)
    assert code == 0, err
    assert data["source"] == "sacct-file" and data["jobs"] == 12
    code, _, err = _replay_json("--sacct-file", str(path), "--delimiter", ";", capsys=capsys)
    assert code == 2 and "text dumps" in err


def test_dump_options_need_a_dump(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replay", "--since", "1d", "--fields", "JobID"])
    assert code == 2 and "only with --sacct-file" in capsys.readouterr().err
