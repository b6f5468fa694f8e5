"""``advisor calibrate``'s own logic: which node speaks for a class, the job, the verdict.

The jobs themselves run in tests/integration/test_calibrate.py on the real cluster; here the
records are the real cluster's captured sacct rows (tests/data/slurm, Slurm 22.05).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from advisor.models.loading import NodeContext
from advisor.services.calibrate import (
    CalibrationRequest,
    _failure,
    class_targets,
    probe_class,
    sbatch_args,
)
from advisor.services.profile import Target
from advisor.slurm.backend import CliBackend
from advisor.slurm.runner import CommandResult, SlurmCommands
from tests.helpers.report_cache import real_jobs

REQUEST = CalibrationRequest("fastqc", "fastqc small.fq.gz", ("small.fq.gz",), time_limit_min=7)


def test_the_job_is_pinned_to_its_node_with_the_limit_and_the_command() -> None:
    args = sbatch_args(REQUEST, Target("f1", "fat"), Path("/shared/out/f1.out"))
    assert args == [
        "--partition=fat",
        "--nodelist=f1",
        "--nodes=1",
        "--ntasks=1",
        "--time=7",
        "--output=/shared/out/f1.out",
        "--wrap=fastqc small.fq.gz",
    ]
    with_cores = sbatch_args(
        REQUEST.__class__(**{**REQUEST.__dict__, "cores": 4}), Target("c1", "cpu"), Path("o")
    )
    assert "--cpus-per-task=4" in with_cores and with_cores[-1] == "--wrap=fastqc small.fq.gz"


def test_nodes_are_grouped_by_class_and_keep_their_order() -> None:
    context = NodeContext(node_class_of={"c1": "small", "c2": "small", "f1": "fat"})
    targets = [Target("c2", "cpu"), Target("f1", "fat"), Target("c1", "cpu"), Target("x9", "cpu")]
    grouped = class_targets(targets, context)
    assert list(grouped) == ["small", "fat", "x9"]  # a node without class is its own
    assert [t.node for t in grouped["small"]] == ["c2", "c1"]


def _refusing_backend() -> CliBackend:
    def runner(argv: Sequence[str], timeout_s: float, stdin: str | None) -> CommandResult:
        raise AssertionError(f"nothing may run: {argv}")

    return CliBackend(SlurmCommands(runner))


def test_a_class_without_a_usable_node_fails_without_a_job(tmp_path: Path) -> None:
    targets = [Target("f1", "fat", "node is DRAIN, cannot run a job")]
    outcome = probe_class(_refusing_backend(), REQUEST, "fat", targets, 10, tmp_path, "t0")
    assert outcome.error == "node is DRAIN, cannot run a job" and outcome.job_id is None
    assert outcome.observation is None


def test_the_first_usable_node_of_a_class_is_probed(tmp_path: Path) -> None:
    """A drained member is passed over; the job goes to the next one (refused here: no Slurm)."""
    calls: list[list[str]] = []

    def runner(argv: Sequence[str], timeout_s: float, stdin: str | None) -> CommandResult:
        calls.append(list(argv))
        return CommandResult(tuple(argv), 1, "", "sbatch: error: invalid partition specified: x")

    targets = [Target("c1", "cpu", "node is DOWN*, cannot run a job"), Target("c2", "cpu")]
    backend = CliBackend(SlurmCommands(runner))
    outcome = probe_class(backend, REQUEST, "small", targets, 10, tmp_path, "t1")
    assert calls and calls[0][:4] == [
        "sbatch",
        "--parsable",
        "--wait",
        "--job-name=advisor-calibrate-t1-c2",
    ]
    assert "--nodelist=c2" in calls[0]
    assert outcome.node == "c2" and outcome.error is not None
    assert "sbatch refused job advisor-calibrate-t1-c2" in outcome.error
    assert "invalid partition specified" in outcome.error


@pytest.mark.parametrize(
    ("state", "exit_code", "expected"),
    [
        ("FAILED", 3, "FAILED (exit 3): no reference here"),
        ("TIMEOUT", 0, "killed at its limit of 7 min"),
        ("OUT_OF_MEMORY", 0, "OUT_OF_MEMORY: no reference here"),
    ],
)
def test_a_failed_job_says_how_it_ended(
    tmp_path: Path, state: str, exit_code: int, expected: str
) -> None:
    record = real_jobs()[0]._replace(state=state, exit_code=exit_code)
    output = tmp_path / "f1.out"
    output.write_text("starting\nno reference here\n\n")
    message = _failure(record, REQUEST, output)
    assert message.startswith(f"job {record.job_id} ") and message.endswith(expected)
    assert _failure(record._replace(state="FAILED", exit_code=2), REQUEST, tmp_path / "none") == (
        f"job {record.job_id} FAILED (exit 2)"
    )
