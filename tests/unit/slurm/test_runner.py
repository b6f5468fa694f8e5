"""The retry policy, replaying real Slurm failures captured on the test cluster."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest

from advisor.errors import SlurmCommandError, SlurmUnavailableError
from advisor.slurm.backend import CliBackend
from advisor.slurm.runner import (
    CommandResult,
    RetryPolicy,
    SlurmCommands,
    is_transient,
    run_subprocess,
)
from tests.helpers.captures import VERSIONS, Capture, capture


class Replay:
    """Answers each call with the next captured output (real stderr and exit code)."""

    def __init__(self, *outputs: Capture | CommandResult) -> None:
        self.outputs = list(outputs)
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str], timeout_s: float, stdin: str | None) -> CommandResult:
        self.calls.append(tuple(argv))
        out = self.outputs.pop(0) if len(self.outputs) > 1 else self.outputs[0]
        if isinstance(out, CommandResult):
            return out
        is_stderr = "stderr" in out.header.get("below", "")
        return CommandResult(
            tuple(argv), out.exit_code, "" if is_stderr else out.body, out.body if is_stderr else ""
        )


TRANSIENT = [
    "ctld_down_sbatch.stderr.txt",
    "ctld_down_sinfo.stderr.txt",
    "ctld_down_squeue.stderr.txt",
    "ctld_down_scontrol_show_partition.stderr.txt",
    "dbd_down_sacct.stderr.txt",
]
PERMANENT = [
    "sbatch_no_such_partition.stderr.txt",
    "sacct_bad_format.stderr.txt",
    "sbatch_time_over_max.stderr.txt",
]


#: Every recording: the first 22.05 one (None) and one per version (22.05, 24.11).
RECORDINGS = [None, *VERSIONS]


@pytest.mark.parametrize("version", RECORDINGS)
@pytest.mark.parametrize("name", TRANSIENT)
def test_transient_failures_are_retried_with_backoff_then_reported(
    name: str, version: str | None
) -> None:
    sleeps: list[float] = []
    replay = Replay(capture(name, version))
    commands = SlurmCommands(
        replay, policy=RetryPolicy(attempts=4, first_wait_s=0.5), sleep=sleeps.append
    )
    with pytest.raises(SlurmUnavailableError) as info:
        commands.run(["sbatch", "x"])
    assert len(replay.calls) == 4
    assert sleeps == [0.5, 1.0, 2.0]  # exponential, bounded by max_wait_s
    line = info.value.one_line()
    assert "after 4 attempts" in line and "scontrol ping" in line
    assert "\n" not in line


@pytest.mark.parametrize("version", RECORDINGS)
@pytest.mark.parametrize("name", PERMANENT)
def test_permanent_errors_fail_at_once(name: str, version: str | None) -> None:
    sleeps: list[float] = []
    replay = Replay(capture(name, version))
    with pytest.raises(SlurmCommandError) as info:
        SlurmCommands(replay, sleep=sleeps.append).run(["sbatch", "x"])
    assert len(replay.calls) == 1 and sleeps == []
    assert capture(name, version).body.strip().splitlines()[-1] in info.value.one_line()


@pytest.mark.parametrize("version", RECORDINGS)
def test_recovery_after_a_restart(version: str | None) -> None:
    sleeps: list[float] = []
    replay = Replay(
        capture("ctld_down_sbatch.stderr.txt", version), capture("sbatch_parsable.txt", version)
    )
    backend = CliBackend(SlurmCommands(replay, sleep=sleeps.append))
    assert backend.submit(["--wrap", "true"]) > 0
    assert len(replay.calls) == 2 and len(sleeps) == 1
    assert replay.calls[0][:2] == ("sbatch", "--parsable")


def test_time_bound_stops_before_the_attempt_bound() -> None:
    down = capture("ctld_down_sbatch.stderr.txt")

    def slow_failure(argv: Sequence[str], timeout_s: float, stdin: str | None) -> CommandResult:
        time.sleep(0.2)  # a dead controller makes every attempt take a while
        return CommandResult(tuple(argv), down.exit_code, "", down.body)

    calls: list[float] = []
    policy = RetryPolicy(attempts=1000, max_delay_s=0.5)
    commands = SlurmCommands(slow_failure, policy=policy, sleep=calls.append)
    with pytest.raises(SlurmUnavailableError):
        commands.run(["sbatch"])
    assert 1 <= len(calls) < 10


@pytest.mark.parametrize("version", RECORDINGS)
def test_classification_of_captures(version: str | None) -> None:
    for name in TRANSIENT:
        c = capture(name, version)
        assert is_transient(CommandResult(("x",), c.exit_code, "", c.body))
    for name in PERMANENT:
        c = capture(name, version)
        assert not is_transient(CommandResult(("x",), c.exit_code, "", c.body))


def test_real_subprocess_time_out_is_transient() -> None:
    sleeps: list[float] = []
    commands = SlurmCommands(
        run_subprocess, policy=RetryPolicy(attempts=2), timeout_s=0.2, sleep=sleeps.append
    )
    with pytest.raises(SlurmUnavailableError, match="after 2 attempts"):
        commands.run(["sleep", "5"])
    assert len(sleeps) == 1


def test_missing_program_is_reported_by_name() -> None:
    with pytest.raises(SlurmUnavailableError, match="no-such-slurm-tool not found"):
        SlurmCommands(run_subprocess).run(["no-such-slurm-tool"])


def test_real_subprocess_passes_argv_verbatim() -> None:
    weird = "a b;c $(x) 'q' \"d\"\nnew"
    result = SlurmCommands(run_subprocess).run(["printf", "%s", weird])
    assert result.stdout == weird
