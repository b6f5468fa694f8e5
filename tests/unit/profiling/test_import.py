"""``advisor nodes import``: the Lotaru table as is, the advisor's format, bench output, bad files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.errors import InputError
from advisor.profiling.imports import read_node_import
from advisor.profiling.twins import clock_twins
from advisor.store import Store
from advisor.store.benchmarks import latest_scores
from advisor.store.node_classes import latest_runs, run_count
from advisor.validate import validate
from tests.helpers.paths import REPO, TEST_DATA

#: Lotaru's Table 2 (the paper's published scores; tests/data/imports/README.md).
LOTARU = TEST_DATA / "imports" / "lotaru-table2" / "nodes.json"


def write(tmp_path: Path, doc: Any, name: str = "scores.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_lotaru_table_imports_as_is() -> None:
    runs = {run.node: run for run in read_node_import(LOTARU)}
    assert set(runs) == {"local", "wallyRedCpu", "asok01", "asok02", "n1", "n2", "c2"}
    a1 = runs["asok01"]
    assert {m: r.value for m, r in a1.results.items()} == {
        "cpu_single_events_s": 223,
        "io_score": 303,
    }
    assert a1.hardware == {"label": "A1"}
    assert runs["n1"].results["linpack_kflops"].value == 3620426
    assert all(run.source == "import:nodes.json" for run in runs.values())


def test_reduced_clock_twin_scales_cpu_scores_only() -> None:
    runs = {run.node: run for run in read_node_import(LOTARU)}
    twin, local = runs["wallyRedCpu"], runs["local"]
    ratio = 3.0 / 3.7
    assert twin.results["cpu_single_events_s"].value == pytest.approx(458 * ratio)
    assert twin.results["linpack_kflops"].value == pytest.approx(3959800 * ratio)
    assert twin.results["io_score"] == local.results["io_score"]
    assert twin.results["memory_score"] == local.results["memory_score"]
    assert twin.hardware["same_hardware_as"] == "local"
    assert twin.tool == local.tool


def test_twin_is_found_again_in_the_cache(cache_path: Path) -> None:
    assert main(["--db", str(cache_path), "nodes", "import", str(LOTARU)]) == 0
    with Store.open(cache_path) as store:
        twins = clock_twins(latest_runs(store))
    assert set(twins) == {"wallyRedCpu"}
    twin = twins["wallyRedCpu"]
    assert twin.same_hardware_as == "local"
    assert twin.clock_ratio == pytest.approx(3.0 / 3.7)
    assert twin.cpu_bound_slowdown == pytest.approx(3.7 / 3.0 - 1)


def test_paper_ratios_against_local(cache_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--db", str(cache_path)]
    assert main([*db, "nodes", "import", str(LOTARU), "--format", "json"]) == 0
    imported = json.loads(capsys.readouterr().out)
    validate(imported, "nodes-output", source="nodes import")
    assert len(imported["imported"]) == 7
    assert main([*db, "nodes", "--reference", "local", "--format", "json"]) == 0
    view = json.loads(capsys.readouterr().out)
    validate(view, "nodes-output", source="advisor nodes")
    ratios = {row["name"]: row["ratios"] for row in view["nodes"]}
    assert ratios["asok01"]["cpu"] == pytest.approx(458 / 223)  # 2.05, sysbench alone
    assert ratios["asok01"]["io"] == pytest.approx(415 / 303)
    assert ratios["asok02"]["io"] == pytest.approx(415 / 339)
    assert ratios["n1"]["cpu"] == pytest.approx((458 / 369 + 3959800 / 3620426) / 2)
    assert ratios["c2"]["cpu"] == pytest.approx((458 / 523 + 3959800 / 4602096) / 2)
    assert ratios["c2"]["memory"] == pytest.approx(18600 / 18900)
    assert ratios["local"] == {"cpu": 1.0, "io": 1.0, "memory": 1.0}
    assert ratios["wallyRedCpu"]["cpu"] == pytest.approx(3.7 / 3.0)
    assert ratios["wallyRedCpu"]["io"] == 1.0


def test_advisor_format_with_spreads_and_a_twin_of_a_cached_node(
    tmp_path: Path, cache_path: Path
) -> None:
    first = write(
        tmp_path,
        {
            "nodes": [
                {
                    "name": "gpu7",
                    "tool": "sysbench",
                    "hardware": {"cores": 32},
                    "measured_at": "2026-01-01T00:00:00+00:00",
                    "scores": {
                        "cpu_single_events_s": 1000,
                        "seq_read_mib_s": {"value": 500, "spread": 12},
                    },
                }
            ]
        },
    )
    assert main(["--db", str(cache_path), "nodes", "import", str(first)]) == 0
    second = write(
        tmp_path,
        {
            "nodes": [
                {
                    "name": "gpu7-slow",
                    "same_hardware_as": "gpu7",
                    "cpu_clock_ghz": 1.0,
                    "reference_cpu_clock_ghz": 2.0,
                }
            ]
        },
        "b.json",
    )
    with Store.open(cache_path) as store:
        runs = read_node_import(second, known_scores=latest_scores(store))
    assert {m: r.value for m, r in runs[0].results.items()} == {
        "cpu_single_events_s": 500.0,
        "seq_read_mib_s": 500.0,
    }


def test_bench_output_is_importable(tmp_path: Path) -> None:
    doc = json.loads((REPO / "schemas" / "bench-output.json").read_text())
    path = write(tmp_path, doc["examples"][0])
    (run,) = read_node_import(path)
    assert run.node == "c1" and run.tool == "builtin"
    assert run.results["cpu_single_events_s"].value == 246.0
    assert run.hardware["dir"] == "/tmp"


def _lotaru_doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(LOTARU.read_text())
    return doc


def _missing(doc: dict[str, Any]) -> None:
    del doc["nodes"][2]["fio_io_score"]


def _negative(doc: dict[str, Any]) -> None:
    doc["nodes"][4]["sysbench_cpu_events_per_s"] = -369


def _unknown_twin(doc: dict[str, Any]) -> None:
    doc["nodes"][1]["same_hardware_as"] = "nowhere"


def _duplicate(doc: dict[str, Any]) -> None:
    doc["nodes"].append(dict(doc["nodes"][0]))


def _zero_clock(doc: dict[str, Any]) -> None:
    doc["nodes"][1]["cpu_clock_ghz"] = 0


@pytest.mark.parametrize(
    ("spoil", "where"),
    [
        (_missing, "$.nodes[2]: 'fio_io_score' is a required property"),
        (_negative, "$.nodes[4].sysbench_cpu_events_per_s: -369"),
        (_unknown_twin, "$.nodes[1].same_hardware_as: 'nowhere' has no scores"),
        (_duplicate, "$.nodes[7].name: 'local' appears twice"),
        (_zero_clock, "$.nodes[1].cpu_clock_ghz: 0"),
    ],
)
def test_bad_files_exit_2_with_one_line_and_store_nothing(
    tmp_path: Path,
    cache_path: Path,
    capsys: pytest.CaptureFixture[str],
    spoil: Any,
    where: str,
) -> None:
    doc = _lotaru_doc()
    spoil(doc)
    path = write(tmp_path, doc)
    assert main(["--db", str(cache_path), "nodes", "import", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert str(path) in err and where in err
    with Store.open(cache_path) as store:
        assert run_count(store) == 0


@pytest.mark.parametrize(
    "doc",
    [
        {"nodes": [{"name": "x", "scores": {}}]},
        {"nodes": [{"name": "x", "scores": {"io_score": -1}}]},
        {"nodes": [{"name": "x", "scores": {"no_such_metric": 1}}]},
        {"nodes": []},
    ],
)
def test_bad_advisor_format(tmp_path: Path, doc: dict[str, Any]) -> None:
    with pytest.raises(InputError) as info:
        read_node_import(write(tmp_path, doc))
    assert info.value.exit_code == 2 and "scores.json" in info.value.one_line()


def test_unknown_reference_on_import_stores_nothing(
    cache_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "--db",
            str(cache_path),
            "nodes",
            "import",
            str(LOTARU),
            "--reference",
            "nosuch",
        ]
    )
    assert code == 2
    assert "unknown node 'nosuch'" in capsys.readouterr().err
    with Store.open(cache_path) as store:
        assert run_count(store) == 0
