"""The wrapper against a real cache: snapshot, model predictions, advice rows, export, retries."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from advisor.accounting.sacct_file import dump_format
from advisor.advice.snapshot import load_snapshot
from advisor.errors import CacheError
from advisor.services.export import UserLimits, export_document, write_atomically, write_export
from advisor.slurm.conf import local_cluster_name
from advisor.slurm.runner import AmbiguousSubmitError, CommandResult, RetryPolicy, run_subprocess
from advisor.store.advice import Advice
from advisor.store.connection import Store
from advisor.store.names import name_key
from advisor.validate import validate
from advisor.wrapper import effects
from tests.helpers.caches import NODES, PARTITIONS, train


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cache of train() for task 'align' on a made-up cluster."""
    return train(tmp_path_factory.mktemp("cache") / "cache.db", "align", PARTITIONS, NODES)


def test_snapshot_and_model_predictor_forecast_per_class(trained: Path) -> None:
    with Store.open(trained, readonly=True) as store:
        snap = load_snapshot(store, ("align", "unknown"))
    assert snap.tasks == ("align",)
    assert snap.default_partition() == "cpu"
    assert snap.classes_of("cpu") == ("small",)
    small = snap.predictor.forecast("align", 1_000_000_000, "small", 0.95)
    big = snap.predictor.forecast("align", 1_000_000_000, "big", 0.95)
    assert small is not None and big is not None
    assert 300 < small.p50_s < 360 and 140 < big.p50_s < 200  # what the runs say, about
    assert small.p50_s <= small.p90_s <= small.p95_s == small.quantile_s
    assert small.runs == 12 and small.source == "reference"
    assert snap.predictor.forecast("align", 10**9, "nowhere", 0.95) is None
    assert snap.predictor.forecast("other", 10**9, "small", 0.95) is None
    assert snap.predictor.default_input_bytes("align") == 2_400_000_000


def test_effects_read_the_cache_read_only_and_record_advice(trained: Path, tmp_path: Path) -> None:
    copy = tmp_path / "cache.db"
    copy.write_bytes(trained.read_bytes())
    snap = effects.load_snapshot(str(copy), "align", "alice")
    assert "align" in snap.tasks
    effects.record(
        str(copy), Advice(user="u", policy="fill", argv=["x"], outcome="submitted", job_id=3)
    )
    with Store.open(copy, readonly=True) as store:
        rows = store.query("SELECT job_id, outcome, argv FROM advice")
    assert rows == [{"job_id": 3, "outcome": "submitted", "argv": '["x"]'}]


def test_a_missing_cache_is_an_error_to_read_and_is_not_created_to_write(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    with pytest.raises(CacheError):
        effects.load_snapshot(str(missing), "align", "alice")
    effects.record(str(missing), Advice(user="u", policy="fill", argv=[], outcome="fallback"))
    assert not missing.exists()


def test_a_corrupt_cache_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(os.urandom(4096))
    with pytest.raises(CacheError):
        effects.load_snapshot(str(bad), "align", "alice")


def test_export_is_per_task_and_partition_clamped_and_valid(trained: Path, tmp_path: Path) -> None:
    with Store.open(trained, readonly=True) as store:
        snap = load_snapshot(store, None)
    doc = export_document(
        snap, quantile=0.95, margin=0.1, generated_at="now",
        users={"alice": UserLimits({"align": {"cpu": 5}}, {})}, key=b"k" * 32,
    )  # fmt: skip
    validate(doc, "export", source="export")
    parts = doc["tasks"]["align"]["partitions"]
    assert set(parts) == {"cpu", "fat"}
    assert parts["cpu"]["limit_min"] > parts["fat"]["limit_min"] >= 1
    assert parts["fat"]["limit_min"] <= 60  # fat's MaxTime
    assert doc["users"]["alice"]["tasks"][name_key("alice", "align", b"k" * 32)]["partitions"][
        "cpu"
    ] == {"limit_min": 5}
    out = write_export(tmp_path / "limits.json", doc)
    assert json.loads(out.read_text()) == doc
    assert stat.S_IMODE(out.stat().st_mode) == 0o640  # the writer's and slurmctld's group
    assert [p.name for p in tmp_path.iterdir()] == ["limits.json"]  # no temporary left


def test_atomic_write_replaces_and_leaves_no_temporary_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    write_atomically(target, "old")
    write_atomically(target, "new")
    assert target.read_text() == "new"
    with pytest.raises(Exception, match="cannot write"):
        write_atomically(tmp_path / "no-such-dir" / "f.json", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


def test_cluster_name_comes_from_slurm_conf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("# c\nSlurmctldHost=vm\n ClusterName = Advisor\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    assert effects.real().cluster() == "advisor"
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "none"))
    assert effects.real().cluster() is None


def test_advice_and_accounting_read_one_cluster_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Advice rows and accounting rows are joined on (cluster, job id): one reading of slurm.conf.

    With two ClusterName lines the last one wins, and a comment is no part of the name.
    """
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=alpha\nSlurmctldHost=vm\nClusterName=Beta#renamed in 2026\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    assert effects.real().cluster() == local_cluster_name() == dump_format().cluster == "beta"


def _scripted(results: list[CommandResult], calls: list[Sequence[str]]):  # type: ignore[no-untyped-def]
    def runner(argv: Sequence[str], timeout_s: float, stdin: str | None = None) -> CommandResult:
        calls.append(tuple(argv))
        return results.pop(0)

    return runner


FAST = RetryPolicy(attempts=3, max_delay_s=5, first_wait_s=0.0, max_wait_s=0.0)


DOWN = "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)\n"
LOST = "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n"
BAD = "sbatch: error: invalid partition specified: x\n"
OK = "Submitted batch job 5\n"


@pytest.mark.parametrize(
    ("answers", "calls_made", "returned"),
    [
        ([DOWN, DOWN, DOWN], 3, DOWN),  # retried within the policy, then sbatch's own error
        ([DOWN, OK], 2, OK),  # the controller came back
        ([LOST, OK], 1, LOST),  # the job may exist: never submitted twice
        ([BAD, OK], 1, BAD),  # a permanent error passes at once
    ],
)
def test_only_failures_that_created_no_job_are_retried(
    answers: list[str], calls_made: int, returned: str
) -> None:
    results = [
        CommandResult(("sbatch",), 0, a, "") if a == OK else CommandResult(("sbatch",), 1, "", a)
        for a in answers
    ]
    calls: list[Sequence[str]] = []
    got = effects.run_sbatch(["j.sh"], None, False, policy=FAST, runner=_scripted(results, calls))
    assert len(calls) == calls_made
    assert (got.stdout if returned == OK else got.stderr) == returned


def test_missing_sbatch_gives_127() -> None:
    got = effects.run_sbatch(
        ["x"],
        None,
        False,
        policy=FAST,
        runner=lambda a, t, s=None: run_subprocess(["/nonexistent/sbatch"], t, s),
    )
    assert got.returncode == 127
    assert "not found" in got.stderr


def test_verbatim_runner_keeps_every_byte() -> None:
    raw = b"caf\xe9 \xff\n\x00end"
    code = "import sys; data = sys.stdin.buffer.read(); sys.stdout.buffer.write(data); sys.stderr.buffer.write(data[::-1])"
    got = run_subprocess([sys.executable, "-c", code], 30, raw.decode("utf-8", "surrogateescape"))
    assert got.stdout.encode("utf-8", "surrogateescape") == raw
    assert got.stderr.encode("utf-8", "surrogateescape") == raw[::-1]


def test_ambiguous_error_carries_the_result() -> None:
    result = CommandResult(("sbatch",), 1, "", "x")
    assert AmbiguousSubmitError(result, "m").result is result


def test_an_unexpected_failure_while_sbatch_runs_is_reported_not_repeated() -> None:
    calls: list[Sequence[str]] = []

    def broken(argv: Sequence[str], timeout_s: float, stdin: str | None = None) -> CommandResult:
        calls.append(tuple(argv))
        raise OverflowError("timeout is too large")

    got = effects.run_sbatch(["j.sh"], None, True, policy=FAST, runner=broken)
    assert len(calls) == 1
    assert got.returncode == 1
    assert "check squeue" in got.stderr and "sbatch: error:" not in got.stderr


def test_an_infinite_timeout_waits_for_the_command() -> None:
    got = run_subprocess([sys.executable, "-c", "print('done')"], float("inf"))
    assert (got.returncode, got.stdout) == (0, "done\n")


def test_a_rewrite_keeps_the_exports_mode_and_group(tmp_path: Path) -> None:
    """The guard rewrites the export for its heartbeat: it stays as private as export made it
    (issue 31 N4: 0640, slurmctld's group), with no moment of another mode or group."""
    target = tmp_path / "limits.json"
    target.write_text("{}")
    target.chmod(0o640)
    group = 1 if os.geteuid() == 0 else os.getegid()
    os.chown(target, -1, group)
    write_atomically(target, "new")
    info = target.stat()
    assert (stat.S_IMODE(info.st_mode), info.st_gid, target.read_text()) == (0o640, group, "new")
    write_atomically(tmp_path / "fresh.json", "x")
    assert stat.S_IMODE((tmp_path / "fresh.json").stat().st_mode) == 0o640
