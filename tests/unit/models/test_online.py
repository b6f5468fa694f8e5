"""Learning from the cache, online updates per node class, and the predict command."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.models.features import X_UNIT_BYTES
from advisor.models.online import update_online
from advisor.models.task_model import ClassRecord, Reference
from advisor.services.learn import learn
from advisor.services.predict import predict_runtime
from advisor.slurm.records import Node, Partition
from advisor.store import Store
from advisor.store.benchmarks import BenchRun, Measurement, save_bench_run
from advisor.store.cluster import save_cluster
from advisor.store.observations import Observation, add_observations
from advisor.store.task_models import load_task_models
from advisor.validate import validate

GB = X_UNIT_BYTES
SIZES = [0.25 * GB * 2**i for i in range(8)]


def _truth(node: str, x: float) -> float:
    """Ground truth: 'slow' is 1.6x local for this task, while its benchmarks say 2x."""
    base = 20.0 + 6.0 * x / GB
    return {"local": base, "twin": base * 1.2, "slow": base * 1.6}[node]


def _seed_cache(path: Path) -> None:
    rng = random.Random(7)
    with Store.open(path) as store:
        save_bench_run(
            store,
            BenchRun(
                "local",
                "t",
                "test",
                {"cpu_single_events_s": Measurement(400.0), "io_score": Measurement(400.0)},
            ),
        )
        save_bench_run(
            store,
            BenchRun(
                "slow",
                "t",
                "test",
                {"cpu_single_events_s": Measurement(200.0), "io_score": Measurement(200.0)},
            ),
        )
        save_bench_run(
            store,
            BenchRun(
                "twin",
                "t",
                "test",
                {},
                hardware={
                    "same_hardware_as": "local",
                    "cpu_clock_ghz": 3.0,
                    "reference_cpu_clock_ghz": 3.6,
                },
            ),
        )
        runs = [
            Observation(
                "test",
                f"{node}-{i}",
                "align",
                _truth(node, x) * rng.uniform(0.98, 1.02),
                node=node,
                node_class=node,
                workflow="wf",
                label="train",
                input_bytes=int(x),
            )
            for node in ("local", "twin")
            for i, x in enumerate(SIZES)
        ]
        add_observations(store, runs)


@pytest.fixture
def learned(cache_path: Path) -> Path:
    _seed_cache(cache_path)
    with Store.open(cache_path) as store:
        learn(store)
    return cache_path


def test_learn_fits_the_reference_and_the_cpu_weight_from_the_twin(learned: Path) -> None:
    with Store.open(learned) as store:
        rows = {(r.node_class, r.method): r for r in load_task_models(store)}
    ref = rows[("*", "lotaru")].params
    assert ref["reference"] == "local"  # the twin never serves as the reference
    found = Reference.from_params(ref)
    assert found is not None and found.kind in ("line", "power")
    assert ref["cpu_weight_source"] == "twin:twin"
    # 20 % slower at a 3.6/3.0 clock (a fully CPU-bound task would be 20 % slower): w = 1.
    assert ref["cpu_weight"] == pytest.approx(1.0, abs=0.15)
    assert {("*", "naive"), ("*", "online-m"), ("*", "online-p"), ("twin", "online")} <= set(rows)


def test_a_few_runs_on_a_class_beat_the_transferred_model(learned: Path) -> None:
    x = 64 * GB  # far beyond the training sizes
    truth = _truth("slow", x)
    with Store.open(learned) as store:
        before = predict_runtime(store, "align", int(x), node="slow").to_json()["predictions"][0]
        assert before["source"] == "transferred"
        for i, size in enumerate((1 * GB, 4 * GB, 16 * GB)):
            run = Observation(
                "acct", f"job{i}", "align", _truth("slow", size), node="slow", input_bytes=int(size)
            )
            model = update_online(store, run)
            assert model is not None and model.p50_s > 0
        record = ClassRecord.from_params(
            {(r.node_class, r.method): r for r in load_task_models(store)}[
                ("slow", "online")
            ].params
        )
        assert record is not None and record.n == 3
        after = predict_runtime(store, "align", int(x), node="slow").to_json()["predictions"][0]
    assert after["source"] == "online"
    assert after["runs_on_class"] == 3
    assert abs(before["predicted_s"] - truth) / truth > 0.2  # benchmarks say 2x, truth is 1.6x
    assert abs(after["predicted_s"] - truth) / truth < 0.05
    assert after["p95_s"] - after["predicted_s"] < before["p95_s"] - before["predicted_s"]


def test_online_update_equals_learning_from_scratch(learned: Path) -> None:
    run = Observation(
        "acct", "job1", "align", 70.0, node="slow", node_class="slow", input_bytes=int(3 * GB)
    )
    with Store.open(learned) as store:
        assert update_online(store, run) is not None
        online = {(r.node_class, r.method): r for r in load_task_models(store)}[("slow", "online")]
        add_observations(store, [run])
        learn(store)
        relearned = {(r.node_class, r.method): r for r in load_task_models(store)}[
            ("slow", "online")
        ]
    # the same run learnt the same way: its offset and the class's own evidence (only the
    # transferred forecast's score may differ: learn re-estimates the class effect from all runs)
    assert relearned.params["offsets"] == online.params["offsets"]
    assert relearned.params["evidence"]["runs"] == online.params["evidence"]["runs"]
    assert relearned.n_obs == online.n_obs == 1


def test_runs_that_cannot_teach_are_ignored(learned: Path) -> None:
    with Store.open(learned) as store:
        assert (
            update_online(
                store,
                Observation("a", "1", "align", 5.0, node="slow", censored=True, input_bytes=1),
            )
            is None
        )
        assert update_online(store, Observation("a", "2", "align", 5.0, node="slow")) is None
        assert (
            update_online(
                store, Observation("a", "3", "never-learned", 5.0, node="slow", input_bytes=1)
            )
            is None
        )


def _predict(db: Path, *args: str) -> int:
    """``advisor --db DB predict ARGS...`` for the task 'align'."""
    return main(["--db", str(db), "predict", "--task", "align", *args])


def test_predict_prints_every_class_and_validates(
    learned: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _predict(learned, "--input-bytes", str(int(8 * GB)), "--format", "json") == 0
    data = json.loads(capsys.readouterr().out)
    validate(data, "predict-output", source="predict")
    by_class = {p["node_class"]: p for p in data["predictions"]}
    assert set(by_class) == {"local", "slow", "twin"}
    assert by_class["local"]["source"] == "reference"
    assert by_class["local"]["predicted_s"] == pytest.approx(_truth("local", 8 * GB), rel=0.05)
    assert by_class["twin"]["source"] == "online"
    for p in data["predictions"]:
        assert p["p50_s"] <= p["p90_s"] <= p["p95_s"]
    assert _predict(learned, "--input-bytes", "100", "--method", "naive") == 0
    assert "baseline" in capsys.readouterr().out


def test_predict_for_a_partition_and_from_input_files(
    learned: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store.open(learned) as store:
        save_cluster(
            store,
            [Partition("old", ("slow1",), 3600, None, True, "UP")],
            [Node("slow1", 4, 8000, (), ("old",), "IDLE")],
        )
        store.conn.execute("UPDATE nodes SET node_class = 'slow'")
    reads = tmp_path / "reads.fastq"
    reads.write_bytes(b"A" * 1000)
    assert _predict(learned, "--input", str(reads), "--partition", "old", "--format", "json") == 0
    (row,) = json.loads(capsys.readouterr().out)["predictions"]
    assert (row["node_class"], row["input_bytes"]) == ("slow", 1000)
    assert _predict(learned, "--input-bytes", "5", "--partition", "nope") == 2


def test_unknown_task_exits_2_naming_the_known_ones(
    learned: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--db", str(learned), "predict", "--task", "nope", "--input-bytes", "5"]) == 2
    err = capsys.readouterr().err
    assert "unknown task 'nope'" in err
    assert "known tasks: align" in err


def test_bulk_queries_in_csv(
    learned: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "q.csv"
    queries.write_text(f"task,node,input_bytes\nalign,local,{int(GB)}\nalign,slow,{int(2 * GB)}\n")
    assert (
        main(["--db", str(learned), "--format", "csv", "predict", "--queries", str(queries)]) == 0
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "task,node,input_bytes,predicted_s,p50_s,p90_s,p95_s,mem_p50_mb,mem_p95_mb"
    assert [line.split(",")[:3] for line in lines[1:]] == [
        ["align", "local", str(int(GB))],
        ["align", "slow", str(int(2 * GB))],
    ]
    assert float(lines[1].split(",")[3]) == pytest.approx(_truth("local", GB), rel=0.05)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("task,node\nalign,local\n", "q.csv:1: missing column input_bytes"),
        (
            "task,node,input_bytes\nalign,local,-4\n",
            "q.csv:2: input_bytes '-4' is not a non-negative",
        ),
        ("task,node,input_bytes\nalign,local,4\nother,local,4\n", "q.csv:3: unknown task 'other'"),
    ],
)
def test_bad_queries_exit_2_with_the_line(
    learned: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    queries = tmp_path / "q.csv"
    queries.write_text(content)
    assert main(["--db", str(learned), "predict", "--queries", str(queries)]) == 2
    assert expected in capsys.readouterr().err


def test_predict_needs_a_size_or_queries(learned: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _predict(learned) == 2
    assert main(["--db", str(learned), "predict"]) == 2
    assert "--input-bytes" in capsys.readouterr().err


def test_learn_output_validates(learned: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", str(learned), "--format", "json", "learn"]) == 0
    data = json.loads(capsys.readouterr().out)
    validate(data, "learn-output", source="learn")
    assert data["tasks"] == 1
    assert data["task_models"][0]["classes"] == ["twin"]


def test_a_record_kept_between_updates_is_what_the_cache_gives_back() -> None:
    import numpy as np

    from advisor.models.online import _as_stored

    params = {"stats": {"n": 3, "hty": (1.5, -0.0), "hth": [(1.0, 2.0), (2.0, 1e308)]},
              "model": "online", "factor": np.float64(1.25), "count": 4,
              "flag": True, "none": None, "b": {1: 2.0}}  # fmt: skip
    stored = _as_stored(params)
    expected = json.loads(json.dumps(params, sort_keys=True, allow_nan=False))
    assert json.dumps(stored) == json.dumps(expected)  # the same keys, in the same order
    assert [type(v) for v in stored.values()] == [type(v) for v in expected.values()]
    assert type(stored["factor"]) is float and stored["stats"]["hty"] == [1.5, -0.0]
    with pytest.raises(TypeError):  # as the round trip: not a number JSON has
        _as_stored({"count": np.int64(4)})
    for bad in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(ValueError, match="not JSON compliant"):
            _as_stored({"a": [bad]})
