"""The submit flow with its side effects replaced: fail-open, retries, records, dry-run output."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from advisor.advice.forecast import Forecast
from advisor.advice.snapshot import Snapshot
from advisor.errors import CacheError
from advisor.slurm.records import Partition, StartEstimate
from advisor.slurm.runner import CommandResult
from advisor.store.advice import Advice
from advisor.validate import validate
from advisor.wrapper.command import main
from advisor.wrapper.submit import SideEffects

SCRIPT = "#!/bin/sh\n#SBATCH --job-name=align\n#SBATCH --comment='my note'\nsleep 1\n"
T0 = datetime(2026, 1, 1, 12, 0, 0)


@dataclass
class FakePredictor:
    """align: 500 s P95 on 'small', 200 s on 'big', with many runs."""

    seconds: dict[str, float] = field(default_factory=lambda: {"small": 500.0, "big": 200.0})
    runs: int = 10

    def default_input_bytes(self, task: str) -> int | None:
        return 1_000

    def forecast(
        self, task: str, input_bytes: int | None, node_class: str, quantile: float
    ) -> Forecast | None:
        if task != "align" or node_class not in self.seconds:
            return None
        s = self.seconds[node_class]
        return Forecast(node_class, s * 0.8, s * 0.8, s * 0.9, s, quantile, s, self.runs, "online")


def snapshot(predictor: FakePredictor | None = None) -> Snapshot:
    parts = {
        "cpu": Partition("cpu", ("c1", "c2"), 86400, 1800, True, "UP"),
        "fat": Partition("fat", ("f1",), 259200, 3600, False, "UP"),
    }
    classes = {"c1": "small", "c2": "small", "f1": "big"}
    return Snapshot(parts, classes, predictor or FakePredictor(), ("align",))


@dataclass
class World:
    """Records what the flow did; each behaviour can be swapped."""

    tmp: Path
    runs: list[tuple[tuple[str, ...], str | None]] = field(default_factory=list)
    records: list[Advice] = field(default_factory=list)
    results: list[CommandResult] = field(default_factory=list)
    snapshot_error: Exception | None = None
    record_error: Exception | None = None
    starts: dict[str, datetime] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    stdin: str = ""
    #: (user, job name, partition) -> (limit_s, why): what the history policy would answer.
    histories: dict[tuple[str, str, str], tuple[int, str]] = field(default_factory=dict)
    history_asked: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)
    tasks_asked: list[int] = field(default_factory=list)

    def script(self, text: str = SCRIPT) -> str:
        path = self.tmp / "job.sh"
        path.write_text(text)
        return str(path)

    def run_sbatch(self, argv: Sequence[str], stdin: str | None, waits: bool) -> CommandResult:
        self.runs.append((tuple(argv), stdin))
        if self.results:
            return self.results.pop(0)
        return CommandResult(("sbatch", *argv), 0, "Submitted batch job 42\n", "")

    def load(self, db: str | None, task: str, user: str) -> Snapshot:
        if self.snapshot_error:
            raise self.snapshot_error
        return snapshot()

    def history(
        self,
        db: str | None,
        user: str,
        job_name: str,
        partitions: Sequence[str],
        request_s: int | None = None,
        tasks: int = 1,
    ) -> dict[str, tuple[int, str] | None]:
        self.history_asked.append((user, job_name, tuple(partitions)))
        self.tasks_asked.append(tasks)
        return {p: self.histories.get((user, job_name, p)) for p in partitions}

    def record(self, db: str | None, advice: Advice) -> None:
        if self.record_error:
            raise self.record_error
        self.records.append(advice)

    def estimate(self, argv: Sequence[str]) -> StartEstimate:
        part = next(a.split("=", 1)[1] for a in argv if a.startswith("--partition="))
        node = "f1" if part == "fat" else "c1"
        return StartEstimate(1, self.starts[part], 1, (node,), part)

    def side(self) -> SideEffects:
        return SideEffects(
            env=self.env,
            read_script=lambda p: Path(p).read_text(),
            read_stdin=lambda: self.stdin,
            input_bytes=lambda paths: 5_000 * len(paths),
            load_snapshot=self.load,
            history=self.history,
            run_sbatch=self.run_sbatch,
            estimate_start=self.estimate,
            record=self.record,
            user=lambda: "alice",
            cluster=lambda: "advisor",
        )

    def main(self, argv: list[str]) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main(argv, side=self.side(), out=out, err=err)
        return code, out.getvalue(), err.getvalue()


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def test_fill_adds_time_and_tag_before_the_script_and_records(world: World) -> None:
    script = world.script()
    code, out, err = world.main(["--advisor-input", "x.gz", script, "arg 1"])
    assert (code, out, err) == (0, "Submitted batch job 42\n", "")
    argv, _ = world.runs[0]
    assert argv == (
        "--time=00:10:00",
        "--comment=my note advisor:wrapper,action=set,limit=10,q=0.95,task=align,in=5000",
        script,
        "arg 1",
    )
    (advice,) = world.records
    assert (advice.job_id, advice.outcome, advice.task, advice.limit_s) == (
        42,
        "submitted",
        "align",
        600,
    )
    assert (advice.partition, advice.node_class, advice.predicted_s) == ("cpu", "small", 500.0)
    assert (advice.input_bytes, advice.p50_s, advice.p90_s, advice.p95_s) == (5000, 400, 450, 500)
    assert advice.argv == argv and advice.policy == "fill"
    assert world.history_asked == []  # the task has a model


def test_without_input_the_tag_claims_no_size(world: World) -> None:
    world.main([world.script()])
    argv, _ = world.runs[0]
    assert argv[1].endswith("q=0.95,task=align")  # the assumed size is the model's, not measured
    assert world.records[0].input_bytes == 1_000  # what the prediction assumed


def test_a_task_without_a_model_gets_the_history_limit_of_its_job_name(world: World) -> None:
    world.histories[("alice", "sim.sh", "cpu")] = (5400, "history of user alice, name sim.sh: x")
    script = str(world.tmp / "sim.sh")
    Path(script).write_text("#!/bin/sh\n#SBATCH -p cpu\nsleep 1\n")
    code, _, err = world.main(
        ["--advisor-task", "unmodelled", "--advisor-explain", "--advisor-format", "json", script]
    )
    assert code == 0
    assert world.history_asked == [("alice", "sim.sh", ("cpu",))]  # keyed by the job's name
    argv, _ = world.runs[0]
    assert argv == (
        "--time=01:30:00",
        "--comment=advisor:history,action=set,limit=90,task=sim.sh",
        script,
    )
    explained = json.loads(err)
    validate(explained, "sbatch-explain", source="explain")
    assert explained["basis"] == "history" and explained["partitions"][0]["limit_s"] == 5400
    (advice,) = world.records
    assert (advice.policy, advice.task, advice.partition, advice.limit_s) == (
        "history", "sim.sh", "cpu", 5400,
    )  # fmt: skip


def test_a_job_arrays_tasks_are_asked_of_history_and_recorded(world: World) -> None:
    world.histories[("alice", "sim.sh", "cpu")] = (5400, "history of user alice, name sim.sh: x")
    script = str(world.tmp / "sim.sh")
    Path(script).write_text("#!/bin/sh\n#SBATCH -p cpu\n#SBATCH --array=1-40%4\nsleep 1\n")
    assert world.main([script])[0] == 0
    world.main(["-a", "0-9", script])  # the command line's --array wins
    world.main(["-J", "sim.sh", "-p", "cpu", "--wrap", "true"])  # no array: one job
    assert world.tasks_asked == [40, 10, 1]
    assert [r.tasks for r in world.records] == [40, 10, None]
    assert world.records[0].policy == "history" and world.records[0].limit_s == 5400


def test_history_limits_follow_the_policy_and_every_partition(world: World) -> None:
    script = str(world.tmp / "sim.sh")
    Path(script).write_text("#!/bin/sh\nsleep 1\n")
    world.histories[("alice", "sim.sh", "cpu")] = (5400, "cpu history")
    world.histories[("alice", "sim.sh", "fat")] = (3600, "fat history")
    world.main(["-p", "cpu,fat", script])
    assert world.runs[-1][0][2:4] == ("--time=01:30:00", "--time-min=01:00:00")
    world.main(["-p", "cpu,fat", "-t", "10:00:00", "--advisor-policy", "tighten", script])
    assert world.runs[-1][0][4] == "--time=01:30:00"  # enough runs by construction: lowered
    world.main(["-p", "cpu,fat", "-t", "10:00:00", script])  # fill keeps the user's own
    assert not any(a.startswith("--time=") for a in world.runs[-1][0][4:])
    del world.histories[("alice", "sim.sh", "fat")]
    code, _, err = world.main(
        ["-p", "cpu,fat", "--advisor-pick", "earliest", "--advisor-explain", script]
    )
    assert code == 0 and world.runs[-1][0] == ("-p", "cpu,fat", script)  # fat knows nothing
    assert "fat: no history with enough runs" in err


def test_no_model_and_no_history_leaves_the_job_as_written(world: World) -> None:
    script = str(world.tmp / "other.sh")
    Path(script).write_text("#!/bin/sh\nsleep 1\n")
    code, _, err = world.main(["--advisor-explain", script])
    assert (code, world.runs[0][0]) == (0, (script,))
    assert "no model for task 'other.sh' and no history of 'other.sh'" in err
    assert world.records[0].policy == "fill"


def test_several_partitions_give_largest_time_and_smallest_time_min(world: World) -> None:
    code, _, _ = world.main(["-p", "cpu,fat", world.script()])
    assert code == 0
    argv, _ = world.runs[0]
    assert argv[2:4] == ("--time=00:10:00", "--time-min=00:04:00")


def test_pick_earliest_submits_to_one_partition_with_its_own_limit(world: World) -> None:
    world.starts = {"cpu": T0, "fat": T0 + timedelta(seconds=100)}  # fat starts later, ends first
    code, _, _ = world.main(["--advisor-pick", "earliest", "-p", "cpu,fat", world.script()])
    assert code == 0
    argv, _ = world.runs[0]
    assert "--partition=fat" in argv
    assert "--time=00:04:00" in argv
    assert not any(a.startswith("--time-min") for a in argv)
    assert world.records[0].partition == "fat"


def test_a_users_time_is_kept_by_fill(world: World) -> None:
    world.env["SBATCH_TIMELIMIT"] = "3"
    world.main([world.script()])
    argv, _ = world.runs[0]
    assert not any(a.startswith("--time") for a in argv)
    assert any(a.endswith("action=kept,limit=10,q=0.95,task=align") for a in argv)


@pytest.mark.parametrize(
    "failure",
    [
        CacheError("cache /x/cache.db does not exist"),
        CacheError("cache /x/cache.db: file is not a database"),
        RuntimeError("a bug\nover two lines"),
    ],
)
def test_any_advisor_failure_submits_the_original_arguments_with_one_warning(
    world: World, failure: Exception
) -> None:
    world.snapshot_error = failure
    world.results = [CommandResult(("sbatch",), 0, "Submitted batch job 7\n", "")]
    script = world.script()
    code, out, err = world.main(["--advisor-task", "align", "-J", "x y", script, "$HOME;\n"])
    assert (code, out) == (0, "Submitted batch job 7\n")
    assert err.count("\n") == 1
    assert err.startswith("advisor: warning: ")
    assert world.runs == [(("-J", "x y", script, "$HOME;\n"), None)]
    assert world.records[0].outcome == "fallback"


def test_sbatchs_own_error_and_exit_code_pass_through(world: World) -> None:
    world.snapshot_error = CacheError("gone")
    world.results = [CommandResult(("sbatch",), 1, "", "sbatch: error: invalid account\n")]
    code, out, err = world.main([world.script()])
    assert code == 1
    assert out == ""
    assert err.endswith("sbatch: error: invalid account\n")


def test_a_rejected_advised_submission_is_retried_as_written(world: World) -> None:
    world.results = [
        CommandResult(("sbatch",), 1, "", "sbatch: error: Job violates accounting/QOS policy\n"),
        CommandResult(("sbatch",), 0, "Submitted batch job 9\n", ""),
    ]
    script = world.script()
    code, out, err = world.main([script])
    assert (code, out) == (0, "Submitted batch job 9\n")
    assert len(world.runs) == 2
    assert world.runs[1][0] == (script,)
    assert "QOS policy" in err
    assert err.count("advisor: warning") == 1
    assert world.records[0].job_id == 9


def test_a_failed_record_warns_but_the_job_stands(world: World) -> None:
    world.record_error = CacheError("database is locked")
    code, out, err = world.main([world.script()])
    assert (code, out) == (0, "Submitted batch job 42\n")
    assert err == "advisor: warning: advice not recorded: database is locked\n"


def test_no_model_leaves_the_job_as_written(world: World) -> None:
    script = world.script("#!/bin/sh\nhostname\n")
    code, _, err = world.main(["-J", "unknown", script])
    assert (code, err) == (0, "")
    assert world.runs[0][0] == ("-J", "unknown", script)


def test_stdin_script_is_read_for_directives_and_handed_on(world: World) -> None:
    world.stdin = SCRIPT
    code, _, _ = world.main(["-p", "cpu"])
    assert code == 0
    argv, stdin = world.runs[0]
    assert stdin == SCRIPT
    assert argv[:3] == ("-p", "cpu", "--time=00:10:00")


def test_dry_run_prints_one_line_and_submits_nothing(world: World) -> None:
    script = world.script()
    code, out, _ = world.main(["--advisor-dry-run", script, "a\nb"])
    assert code == 0
    assert world.runs == []
    assert out.count("\n") == 1
    assert out.startswith("sbatch --time=00:10:00 ")
    assert out.rstrip("\n").endswith(f"{script} $'a\\nb'")


def test_explain_json_validates_and_matches_what_is_submitted(world: World) -> None:
    out = io.StringIO()
    main(
        ["--advisor-dry-run", "--advisor-format", "json", "-p", "cpu,fat", world.script()],
        side=world.side(),
        out=out,
        err=io.StringIO(),
    )
    data = json.loads(out.getvalue())
    validate(data, "sbatch-explain", source="--advisor-explain")
    assert data["decision"] == {
        "action": "set",
        "time_s": 600,
        "time_min_s": 240,
        "reason": "no --time given",
    }
    assert [p["limit_s"] for p in data["partitions"]] == [600, 240]
    code, _, err = world.main(["--advisor-explain", "-p", "cpu,fat", world.script()])
    assert code == 0
    assert "10 min" in err and "4 min" in err
    assert world.runs[0][0][2] == "--time=00:10:00"


def test_fallback_explanation_validates(world: World) -> None:
    world.snapshot_error = CacheError("gone")
    out = io.StringIO()
    main(
        ["--advisor-dry-run", "--advisor-format", "json", world.script()],
        side=world.side(),
        out=out,
        err=io.StringIO(),
    )
    data = json.loads(out.getvalue())
    validate(data, "sbatch-explain", source="--advisor-explain")
    assert data["decision"]["action"] == "fallback"


def test_usage_errors_exit_2_and_submit_nothing(world: World) -> None:
    code, out, err = world.main(["--advisor-policy", "nope", world.script()])
    assert (code, out) == (2, "")
    assert "--advisor-policy" in err
    assert world.runs == []


def test_help_is_the_advisors(world: World) -> None:
    code, out, _ = world.main(["--help"])
    assert code == 0
    assert "--advisor-policy" in out and "sbatch --help" in out


def test_tighten_lowers_a_given_time(world: World) -> None:
    world.main(["--advisor-policy", "tighten", "-t", "2:00:00", world.script()])
    argv, _ = world.runs[0]
    assert argv[:3] == ("-t", "2:00:00", "--time=00:10:00")


def test_hetjob_and_invalid_options_are_left_alone(world: World) -> None:
    script = world.script()
    world.main(["-p", "cpu", ":", "-p", "fat", script])
    world.main(["--tim", "5", script])
    assert [r[0] for r in world.runs] == [
        ("-p", "cpu", ":", "-p", "fat", script),
        ("--tim", "5", script),
    ]


def test_records_are_skipped_for_test_only(world: World) -> None:
    world.results = [CommandResult(("sbatch",), 0, "", "sbatch: Job 5 to start at ...\n")]
    world.main(["--test-only", world.script()])
    assert world.records == []


def test_unreadable_script_fails_open(world: World) -> None:
    missing = str(world.tmp / "nope.sh")
    world.results = [
        CommandResult(("sbatch",), 1, "", "sbatch: error: Unable to open file nope.sh\n")
    ]
    code, _, err = world.main([missing])
    assert code == 1
    assert err.splitlines()[0].startswith("advisor: warning:")
    assert world.runs[0][0] == (missing,)


def test_side_effect_defaults_are_replaceable(world: World) -> None:
    side = world.side()._replace(user=lambda: "bob")
    main([world.script()], side=side, out=io.StringIO(), err=io.StringIO())
    assert world.records[0].user == "bob"


@pytest.mark.parametrize(
    "stderr",
    [
        "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)\n",
        "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n",
        # Slurm 24.11 when slurmctld is stopped while it serves the submission (test_faults.py)
        "sbatch: error: Batch job submission failed: Connection reset by peer\n",
    ],
)
def test_unreachable_or_lost_submissions_are_not_resubmitted_as_written(
    world: World, stderr: str
) -> None:
    world.results = [CommandResult(("sbatch",), 1, "", stderr)]
    code, _, err = world.main([world.script()])
    assert code == 1
    assert len(world.runs) == 1
    assert err == stderr
    assert world.records[0].outcome == "failed"


def test_an_advisor_side_failure_to_run_sbatch_is_not_resubmitted(world: World) -> None:
    world.results = [
        CommandResult(("sbatch",), 1, "", "advisor: error: running sbatch failed (X)\n")
    ]
    code, _, err = world.main([world.script()])
    assert (code, len(world.runs)) == (1, 1)
    assert "running sbatch failed" in err


# --- issue 16, finding 9: the #PBS and #BSUB directives sbatch translates -----------------------


def _directives(*lines: str) -> str:
    return (
        "#!/bin/sh\n#SBATCH --job-name=align\n"
        + "".join(f"{line}\n" for line in lines)
        + "sleep 1\n"
    )


@pytest.mark.parametrize(
    ("lines", "options", "added"),
    [
        # Regression: the wrapper overrode the script's 48 h with its own 10 minutes ...
        (["#PBS -l walltime=48:00:00"], [], ()),
        (["#BSUB -W 2880"], [], ()),
        # ... and computed the limit for the default partition, not for the queue asked for.
        (["#PBS -q fat"], [], ("--time=00:04:00",)),
        (["#PBS -l nodes=1:ppn=2,mem=1gb", "#PBS -q fat"], [], ("--time=00:04:00",)),
        (["#BSUB -q fat -J align"], [], ("--time=00:04:00",)),
        # sbatch reads only one kind (#BSUB first), and the command line and environment win.
        (["#PBS -l walltime=48:00:00", "#BSUB -q fat"], [], ("--time=00:04:00",)),
        (["#PBS -q fat"], ["-p", "cpu"], ("--time=00:10:00",)),
        (["#PBS -l walltime=48:00:00"], ["--ignore-pbs"], ("--time=00:10:00",)),
        (["#SBATCH --ignore-pbs", "#PBS -q fat"], [], ("--time=00:10:00",)),
    ],
)  # fmt: skip
def test_pbs_and_bsub_directives_count_as_sbatch_translates_them(
    world: World, lines: list[str], options: list[str], added: tuple[str, ...]
) -> None:
    script = world.script(_directives(*lines))
    code, _, err = world.main([*options, script])
    assert code == 0 and err == ""
    argv, _ = world.runs[0]
    assert tuple(a for a in argv if a.startswith("--time")) == added
    assert argv[-1] == script


def test_the_environment_overrides_pbs_directives(world: World) -> None:
    world.env["SBATCH_PARTITION"] = "cpu"
    world.main([world.script(_directives("#PBS -q fat"))])
    assert "--time=00:10:00" in world.runs[0][0]
    world.env.clear()
    world.env["SBATCH_IGNORE_PBS"] = ""  # any value, even empty, as sbatch's getenv
    world.main([world.script(_directives("#PBS -q fat"))])
    assert "--time=00:10:00" in world.runs[1][0]


def test_a_pbs_line_sbatch_refuses_is_left_to_sbatch(world: World) -> None:
    script = world.script(_directives("#PBS -q fat stray"))
    code, _, err = world.main(["--advisor-explain", "--advisor-format", "json", script])
    assert code == 0 and world.runs[0][0] == (script,)  # nothing added: sbatch will refuse it
    assert json.loads(err)["decision"]["reason"] == "sbatch will reject #PBS 'stray'"


# --- issue 16, finding 14: no advisor option captures an sbatch abbreviation ---------------------


def test_task_is_sbatchs_tasks_per_node_and_the_wrapper_says_so(world: World) -> None:
    # Regression: --task=2 became the advisor's --task, and the job lost --tasks-per-node=2.
    script = world.script()
    code, _, err = world.main(["--task=2", script])
    assert code == 0
    argv, _ = world.runs[0]
    assert argv[0] == "--task=2" and argv[-1] == script
    assert "--time=00:10:00" in argv  # the task is the job name's, align
    (line,) = err.splitlines()
    assert (
        line
        == "advisor: warning: sbatch reads --task as its own option; the advisor's is --advisor-task"
    )
