"""sysbench and fio: parsers on captured output (tests/data/profiling) and the runner around them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from advisor.errors import AdvisorError, InputError
from advisor.profiling.io_bench import IoPlan
from advisor.profiling.tools import (
    ToolRunner,
    parse_fio,
    parse_sysbench_cpu,
    parse_sysbench_memory,
    require_tool,
)
from advisor.slurm.runner import CommandResult
from tests.helpers.captures import captured


def test_sysbench_cpu_events_per_second() -> None:
    assert parse_sysbench_cpu(captured("sysbench_cpu_1thread.txt")[0]) == 3485.71
    assert parse_sysbench_cpu(captured("sysbench_cpu_2threads.txt")[0]) == 4485.38


def test_sysbench_memory_mib_per_second() -> None:
    text = captured("sysbench_memory.txt")[0]
    assert f"({parse_sysbench_memory(text):.2f} MiB/sec)" in text


def test_fio_figures_in_mib_and_iops() -> None:
    write_text = captured("fio_seqwrite.txt")[0]
    write = parse_fio(write_text, "write", "bw")
    assert f'"bw" : {round(write * 1024)},' in write_text  # fio reports KiB/s
    assert parse_fio(captured("fio_seqread.txt")[0], "read", "bw") > 0
    rand_text = captured("fio_randread.txt")[0]
    assert f'"iops" : {parse_fio(rand_text, "read", "iops"):.6f}' in rand_text


def test_fio_text_before_the_json_is_skipped() -> None:
    text = (
        "note: both iodepth >= 1 and synchronous I/O engine are selected\n"
        + captured("fio_seqread.txt")[0]
    )
    assert parse_fio(text, "read", "bw") > 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("fio: pid=0, err=2/file:filesetup.c", "not JSON|one job"),
        ('{"jobs": []}', "one job"),
        ('{"jobs": [{"error": 5, "read": {"bw": 1}}]}', "error 5"),
        ('{"jobs": [{"error": 0, "read": {"bw": 0}}]}', "no positive read.bw"),
    ],
)
def test_bad_fio_output_is_an_operational_error(text: str, message: str) -> None:
    with pytest.raises(AdvisorError, match=message) as info:
        parse_fio(text, "read", "bw")
    assert info.value.exit_code == 1


def test_sysbench_output_without_a_figure() -> None:
    with pytest.raises(AdvisorError, match="no figure"):
        parse_sysbench_cpu("FATAL: invalid option")


def test_a_missing_tool_is_an_input_error_naming_it() -> None:
    with pytest.raises(InputError, match="fio is not installed") as info:
        require_tool("fio", which=lambda name: None)
    assert info.value.exit_code == 2
    require_tool("sysbench", which=lambda name: "/usr/bin/sysbench")


class Replay:
    """Answers each argv with a captured output, recording what was run."""

    def __init__(self, outputs: dict[str, str]) -> None:
        self.outputs = outputs
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], timeout_s: float, stdin: str | None) -> CommandResult:
        self.calls.append(list(argv))
        key = next(k for k in self.outputs if k in " ".join(argv))
        stdout, code = captured(self.outputs[key])
        return CommandResult(tuple(argv), code, stdout, "")


def test_runner_repeats_sysbench_and_summarizes() -> None:
    replay = Replay(
        {"sysbench cpu": "sysbench_cpu_1thread.txt", "sysbench memory": "sysbench_memory.txt"}
    )
    runner = ToolRunner(run=replay)
    cpu = runner.sysbench_cpu(1, 200, 3)
    assert len(replay.calls) == 3 and cpu.spread == 0.0
    assert "--cpu-max-prime=10000" in replay.calls[0]
    assert runner.sysbench_memory(1024, 2).value > 0


def test_runner_runs_fio_phases_and_removes_its_file(tmp_path: Path) -> None:
    replay = Replay(
        {
            "--rw=write": "fio_seqwrite.txt",
            "--rw=read": "fio_seqread.txt",
            "--rw=randread": "fio_randread.txt",
        }
    )
    write, read, rand = ToolRunner(run=replay).fio(
        tmp_path, IoPlan(file_mib=16, reps=2, rand_rep_s=0.1, rand_max_ops=10), direct=False
    )
    assert len(replay.calls) == 6
    assert all("--direct=0" in call for call in replay.calls)
    assert "--runtime=100ms" in replay.calls[-1]
    assert write.value > 0 and read.value > 0 and rand.unit == "IOPS"
    assert list(tmp_path.iterdir()) == []


def test_a_failing_tool_names_itself() -> None:
    def failing(argv: Sequence[str], timeout_s: float, stdin: str | None) -> CommandResult:
        return CommandResult(tuple(argv), 1, "", "FATAL: unknown option\n")

    with pytest.raises(AdvisorError, match="sysbench exited with 1: FATAL: unknown option"):
        ToolRunner(run=failing).sysbench_cpu(1, 10, 1)
