"""Planned tasks as jobs: pinning to a class, the partition, and the wrapper's time limit."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from advisor.advice.settings import AdvisorOptions
from advisor.advice.snapshot import load_snapshot
from advisor.models.distributions import predictive
from advisor.planner.cluster.constraints import Pinning, pinning
from advisor.planner.cluster.job_advice import (
    PlannedFallback,
    advise_job,
    choose_partition,
    estimate_forecast,
    lognormal_quantile_s,
)
from advisor.planner.cluster.jobs import JobSpec, base_argv, placeholder
from advisor.planner.cluster.matrix import Estimate
from advisor.planner.cluster.nodes import Cluster, ClusterNode
from advisor.slurm.records import Partition
from advisor.store.connection import Store
from advisor.wrapper import effects
from advisor.wrapper.command import main as sbatch_main
from tests.helpers.caches import NODES, PARTITIONS, train

C1 = ClusterNode("c1", 2, ("cpu", "intel", "ib"), "small")
C2 = ClusterNode("c2", 2, ("cpu", "intel", "ib"), "small")
F1 = ClusterNode("f1", 8, ("fat", "bigmem", "intel", "ib"), "big")
G1 = ClusterNode("g1", 8, ("bigmem", "intel"), "gpu")
X1 = ClusterNode("x1", 2, ("cpu", "intel", "ib"), "small-amd")


def test_a_partition_of_one_class_needs_no_pinning() -> None:
    assert pinning(C1, [C1, C2]) == Pinning()
    assert Pinning().options() == ()


def test_the_smallest_set_of_telling_features_becomes_the_constraint() -> None:
    assert pinning(F1, [C1, C2, F1]) == Pinning(constraint="bigmem")  # alphabetical among 1
    assert pinning(C1, [C1, C2, F1]) == Pinning(constraint="cpu")
    # bigmem alone would also match g1: the next single feature, fat, tells f1 apart
    assert pinning(F1, [C1, F1, G1]) == Pinning(constraint="fat")
    # with h1 (fat, no bigmem) beside g1 (bigmem, no fat) only the pair tells f1 apart
    assert pinning(F1, [C1, G1, F1, ClusterNode("h1", 8, ("fat", "intel"), "h")]) == Pinning(
        constraint="bigmem&fat"
    )
    assert Pinning(constraint="bigmem&fat").options() == ("--constraint=bigmem&fat",)


def test_classes_features_cannot_tell_apart_pin_the_planned_node() -> None:
    assert pinning(C2, [C1, C2, X1]) == Pinning(nodelist="c2")
    assert Pinning(nodelist="c2").options() == ("--nodelist=c2",)


def test_base_argv_has_the_workflows_options_and_the_command_verbatim() -> None:
    job = JobSpec(
        "t 1",
        "align",
        ("a", "b"),
        "f1",
        "big",
        "mix",
        Pinning(constraint="fat"),
        0.0,
        1.0,
        "recorded",
        command="echo \"$HOME\" 'x' | wc -c; sleep 1",
    )
    argv = base_argv(job, [placeholder(p) for p in job.parents])
    assert argv == (
        "--job-name=t 1",
        "--partition=mix",
        "--constraint=fat",
        "--dependency=afterok:<a>:<b>",
        "--wrap=echo \"$HOME\" 'x' | wc -c; sleep 1",
    )
    no_parents = base_argv(job, [])
    assert not any(a.startswith("--dependency") for a in no_parents)


def test_lognormal_quantiles_and_forecasts_from_cells() -> None:
    assert lognormal_quantile_s(10.0, 0.0, 0.95) == 10.0
    assert lognormal_quantile_s(0.0, 0.3, 0.95) == 0.0
    assert lognormal_quantile_s(10.0, 0.2, 0.5) < 10.0 < lognormal_quantile_s(10.0, 0.2, 0.95)
    recorded = estimate_forecast(Estimate(10.0, "recorded"), "small", 0.95, 0.2)
    assert recorded.quantile_s == recorded.p95_s == lognormal_quantile_s(10.0, 0.2, 0.95)
    assert recorded.runs == 0 and recorded.source == "recorded"
    model = Estimate(10.0, "model:online", predictive(10.0, 1.0, 1e8))
    assert estimate_forecast(model, "small", 0.95, 0.2).quantile_s == pytest.approx(
        11.645, abs=1e-3
    )


def test_fallback_forecasts_only_for_its_task_and_only_where_the_model_is_silent(
    tmp_path: Path,
) -> None:
    cache = train(tmp_path / "cache.db", "align", PARTITIONS, NODES)
    with Store.open(cache, readonly=True) as store:
        snap = load_snapshot(store, ("align",))
    planned = {"small": Estimate(7.0, "recorded"), "big": None, "odd": Estimate(9.0, "cpu-work")}
    fallback = PlannedFallback(snap.predictor, "align", planned, 0.0)
    assert fallback.forecast("align", 10**9, "small", 0.95) == snap.predictor.forecast(
        "align", 10**9, "small", 0.95
    )
    odd = fallback.forecast("align", 10**9, "odd", 0.95)
    assert odd is not None and odd.quantile_s == 9.0 and odd.source == "cpu-work"
    assert fallback.forecast("other", 10**9, "odd", 0.95) is None
    assert fallback.forecast("align", 10**9, "nowhere", 0.95) is None
    assert fallback.default_input_bytes("align") == snap.predictor.default_input_bytes("align")


def test_the_limit_is_what_advisor_sbatch_sets(tmp_path: Path) -> None:
    cache = train(tmp_path / "cache.db", "align", PARTITIONS, NODES)
    data = tmp_path / "reads.bin"
    with data.open("wb") as out:
        out.truncate(1_500_000_000)
    with Store.open(cache, readonly=True) as store:
        snap = load_snapshot(store, ("align",))
    options = AdvisorOptions(policy="fill")
    for partition in ("cpu", "fat"):
        out = io.StringIO()
        code = sbatch_main(
            [
                "--advisor-db",
                str(cache),
                "--advisor-dry-run",
                "--advisor-format",
                "json",
                "--advisor-task",
                "align",
                "--advisor-input",
                str(data),
                "-p",
                partition,
                "--wrap",
                "true",
            ],
            side=effects.real(),
            out=out,
            err=io.StringIO(),
        )
        assert code == 0
        wrapper = json.loads(out.getvalue())["decision"]["time_s"]
        _, advice = advise_job(
            ["--job-name=x", f"--partition={partition}", "--wrap=true"],
            "align",
            1_500_000_000,
            snap,
            options,
        )
        assert advice.decision.time_s == wrapper is not None
        assert any(a.startswith("--comment=advisor:wrapper,action=set") for a in advice.argv)


def test_a_partition_whose_limit_would_be_clamped_is_passed_over(tmp_path: Path) -> None:
    cache = train(tmp_path / "cache.db", "align", PARTITIONS, NODES)
    with Store.open(cache, readonly=True) as store:
        snap = load_snapshot(store, ("align",))
    tiny = Partition("tiny", ("f1",), 60, 60, False, "UP")
    snap = snap._replace(partitions={**snap.partitions, "tiny": tiny})
    cluster = Cluster((tiny, snap.partitions["fat"]), {"tiny": (F1,), "fat": (F1,)})
    options = AdvisorOptions()
    chosen, _ = choose_partition(F1, cluster, "align", 10**9, snap, options)
    assert chosen.name == "fat"  # tiny's MaxTime of one minute would clamp the limit
    only, _ = choose_partition(F1, Cluster((tiny,), {"tiny": (F1,)}), "align", 10**9, snap, options)
    assert only.name == "tiny"  # no better choice: the first one


def test_a_class_without_forecast_limits_the_job_to_its_own_class(tmp_path: Path) -> None:
    cache = train(tmp_path / "cache.db", "align", PARTITIONS, NODES)
    with Store.open(cache, readonly=True) as store:
        snap = load_snapshot(store, ("align",))
    mix = Partition("mix", ("c1", "x1"), None, None, False, "UP")
    snap = snap._replace(partitions={**snap.partitions, "mix": mix})
    cluster = Cluster((mix,), {"mix": (C1, X1)})
    partition, view = choose_partition(C1, cluster, "align", 10**9, snap, AdvisorOptions())
    assert partition.name == "mix" and view.partitions["mix"].nodes == ("c1",)
    _, advice = advise_job(
        ["--partition=mix", "--wrap=true"], "align", 10**9, view, AdvisorOptions()
    )
    assert advice.decision.time_s is not None
