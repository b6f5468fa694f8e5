"""``advisor profile`` against captured Slurm outputs: selection, failures by name, storage."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from advisor.errors import InputError
from advisor.services.profile import (
    NodeOutcome,
    ProfileRequest,
    is_unavailable,
    parse_step_output,
    profile_cluster,
    select_targets,
    step_error,
)
from advisor.slurm.backend import CliBackend
from advisor.slurm.parsers import parse_nodes, parse_partitions
from advisor.slurm.runner import CommandResult, SlurmCommands, TransientSlurmError
from advisor.store import Store
from advisor.store.benchmarks import latest_scores
from advisor.store.node_classes import load_node_classes, run_count
from tests.helpers.captures import capture, captured

PARTITIONS = parse_partitions(capture("scontrol_show_partition.txt").body)
NODES = parse_nodes(capture("scontrol_show_node.txt").body)
REQUEST = ProfileRequest(argv=("advisor", "bench", "--quick", "--format", "json"))


def srun_node(argv: Sequence[str]) -> str:
    return next(a.split("=", 1)[1] for a in argv if a.startswith("--nodelist="))


class FakeSlurm:
    """scontrol answers from tests/data/slurm, srun from tests/data/profiling, per node."""

    def __init__(self, steps: dict[str, Callable[[Sequence[str]], CommandResult]]) -> None:
        self.steps = steps
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], timeout_s: float, stdin: str | None) -> CommandResult:
        self.calls.append(list(argv))
        if list(argv[:3]) == ["scontrol", "show", "partition"]:
            return CommandResult(tuple(argv), 0, capture("scontrol_show_partition.txt").body, "")
        if list(argv[:3]) == ["scontrol", "show", "node"]:
            return CommandResult(tuple(argv), 0, capture("scontrol_show_node.txt").body, "")
        if argv[0] == "scancel":
            return CommandResult(tuple(argv), 0, "", "")
        return self.steps[srun_node(argv)](argv)


def replay(name: str) -> Callable[[Sequence[str]], CommandResult]:
    text, code = captured(name)
    on_stderr = name.endswith(".stderr.txt")
    return lambda argv: CommandResult(
        tuple(argv), code, "" if on_stderr else text, text if on_stderr else ""
    )


def run_profile(
    fake: FakeSlurm,
    request: ProfileRequest = REQUEST,
    progress: list[tuple[int, int | None]] | None = None,
) -> tuple[list[NodeOutcome], Store]:
    store = Store.open(":memory:")
    backend = CliBackend(SlurmCommands(fake, sleep=lambda s: None))
    seen = progress if progress is not None else []
    profiled = profile_cluster(
        backend, store, request, progress=lambda done, total: seen.append((done, total))
    )
    return list(profiled.outcomes), store


def test_one_good_node_is_stored_and_the_failures_are_named() -> None:
    fake = FakeSlurm(
        {
            "c1": replay("srun_bench_c1.txt"),
            "c2": replay("srun_bench_bad_dir.stderr.txt"),
            "f1": replay("srun_drained_node.stderr.txt"),
        }
    )
    progress: list[tuple[int, int | None]] = []
    outcomes, store = run_profile(fake, progress=progress)
    by_node = {o.node: o for o in outcomes}
    assert [o.node for o in outcomes] == ["c1", "c2", "f1"]  # partition order, not finish order
    assert by_node["c1"].error is None and by_node["c1"].run_id is not None
    assert by_node["c1"].partition == "cpu" and by_node["f1"].partition == "fat"
    assert by_node["c2"].error == (
        "exited with 2: advisor: error: --dir /nonexistent: cannot write a test file: "
        "No such file or directory"
    )
    assert by_node["f1"].error == (
        "exited with 1: srun: error: Unable to allocate resources: Requested nodes are busy"
    )
    assert progress == [(1, 3), (2, 3), (3, 3)]
    assert run_count(store) == 1
    assert set(latest_scores(store)) == {"c1"}
    assert (
        load_node_classes(store)["c1"] == by_node["c1"].node_class == "cpu+intel-2c-4000m-amd-epyc"
    )


def test_srun_is_pinned_to_the_node_in_one_of_its_partitions() -> None:
    fake = FakeSlurm({"c1": replay("srun_bench_c1.txt")})
    run_profile(
        fake, ProfileRequest(argv=REQUEST.argv, nodelist="c1", start_timeout_s=7, timeout_s=90)
    )
    (srun,) = [call for call in fake.calls if call[0] == "srun"]
    assert {
        "--nodelist=c1",
        "--nodes=1",
        "--ntasks=1",
        "--exclusive",
        "--immediate=7",
        "--time=2",
        "--partition=cpu",
    } <= set(srun)
    assert srun[srun.index("--") + 1 :] == list(REQUEST.argv)


def test_unknown_node_fails_alone_without_running_anything() -> None:
    fake = FakeSlurm({"c1": replay("srun_bench_c1.txt")})
    outcomes, store = run_profile(fake, ProfileRequest(argv=REQUEST.argv, nodelist="c1,nosuch"))
    assert [(o.node, o.error) for o in outcomes] == [
        ("c1", None),
        ("nosuch", "not a node of this cluster"),
    ]
    assert all(srun_node(call) != "nosuch" for call in fake.calls if call[0] == "srun")
    assert run_count(store) == 1


def test_a_step_that_times_out_is_cancelled_and_not_retried() -> None:
    calls: list[str] = []

    def hang(argv: Sequence[str]) -> CommandResult:
        calls.append("srun")
        raise TransientSlurmError("srun did not answer within 5 s", argv=argv)

    fake = FakeSlurm({"c1": hang})
    outcomes, store = run_profile(
        fake, ProfileRequest(argv=REQUEST.argv, nodelist="c1", timeout_s=5)
    )
    assert outcomes[0].error is not None and "no result within 5 s" in outcomes[0].error
    assert calls == ["srun"]
    scancel = [call for call in fake.calls if call[0] == "scancel"]
    assert len(scancel) == 1 and scancel[0][1].startswith("--name=advisor-profile-")
    assert scancel[0][1].endswith("-c1")
    assert run_count(store) == 0


def test_a_transient_srun_failure_is_retried() -> None:
    answers = iter(
        [
            lambda argv: CommandResult(
                tuple(argv), 1, "", "srun: error: Unable to contact slurm controller"
            ),
            replay("srun_bench_c1.txt"),
        ]
    )
    fake = FakeSlurm({"c1": lambda argv: next(answers)(argv)})
    outcomes, _ = run_profile(fake, ProfileRequest(argv=REQUEST.argv, nodelist="c1"))
    assert outcomes[0].error is None


def test_a_benchmark_from_another_node_is_refused() -> None:
    text, _ = captured("srun_bench_c1.txt")
    with pytest.raises(InputError, match="ran on 'c1', not on 'c2'"):
        parse_step_output("c2", text)
    with pytest.raises(InputError, match="not JSON"):
        parse_step_output("c1", "Traceback (most recent call last):")


def test_selection_by_partition_and_host_list() -> None:
    def names(**kwargs: object) -> list[str]:
        request = ProfileRequest(argv=(), **kwargs)  # type: ignore[arg-type]
        return [t.node for t in select_targets(PARTITIONS, NODES, request)]

    assert names() == ["c1", "c2", "f1"]
    assert names(partitions=("fat",)) == ["f1"]
    assert names(partitions=("cpu", "long")) == ["c1", "c2"]
    assert names(nodelist="c[1-2],f1") == ["c1", "c2", "f1"]
    assert names(nodelist="c[1-2],f1", partitions=("cpu",)) == ["c1", "c2"]
    with pytest.raises(InputError, match="unknown partition 'gpu'"):
        names(partitions=("gpu",))


@pytest.mark.parametrize(
    ("state", "unavailable"),
    [
        ("IDLE", False),
        ("MIXED", False),
        ("ALLOCATED", False),
        ("IDLE+DRAIN", True),
        ("DOWN*", True),
        ("IDLE*", True),
        ("DRAINED", True),
        ("IDLE+POWERED_DOWN", True),
        ("FUTURE", True),
        ("DOWN+NOT_RESPONDING", True),
    ],
)
def test_node_states(state: str, unavailable: bool) -> None:
    assert is_unavailable(state) is unavailable


def test_a_down_node_is_reported_without_a_job() -> None:
    nodes = [n._replace(state="DOWN*") if n.name == "f1" else n for n in NODES]
    targets = {t.node: t for t in select_targets(PARTITIONS, nodes, REQUEST)}
    assert targets["f1"].problem == "node is DOWN*, cannot run a job"
    assert targets["c1"].problem is None


def test_step_error_prefers_the_advisors_own_line() -> None:
    assert step_error("", "advisor: error: boom\nsrun: error: task 0: Exited", 2) == (
        "exited with 2: advisor: error: boom"
    )
    assert step_error("", "", 137) == "exited with 137"
