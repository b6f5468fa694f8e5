"""advisor demo runs the main job: its limits are the wrapper's, its plan and replay are real."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.services.demo import SAMPLE_LOG, sample_file
from advisor.validate import validate


def _demo(capsys: pytest.CaptureFixture[str], db: Path, *options: str) -> dict:  # type: ignore[type-arg]
    assert main(["--db", str(db), "demo", "--format", "json", *options]) == 0
    data = json.loads(capsys.readouterr().out)
    validate(data, "demo-output", source="demo")
    return data


def test_limits_are_what_advisor_sbatch_dry_run_prints_on_the_same_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("advisor.services.demo.plots_available", lambda: False)
    db = tmp_path / "demo.db"
    data = _demo(capsys, db)
    # The second of the commands to try next is the sample job through the real wrapper.
    command = shlex.split(data["next_commands"][1])
    assert command[:4] == ["advisor", "--db", str(db), "sbatch"]
    job = command[4:]
    assert main(["--db", str(db), "sbatch", "--advisor-format", "json", *job]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert data["sbatch"]["explain"] == printed
    by_partition = {p["partition"]: p for p in printed["partitions"]}
    assert [row["partition"] for row in data["limits"]] == ["fast", "legacy"]
    for row in data["limits"]:
        part = by_partition[row["partition"]]
        assert row["limit_s"] == part["limit_s"] and row["limit_s"] > 0
        slowest = max(part["node_classes"], key=lambda c: c["quantile_s"])
        assert (row["p50_s"], row["p95_s"]) == (slowest["p50_s"], slowest["p95_s"])
    # and the plain dry run's sbatch line (stdout) carries the demo's --time
    plain = [word for word in job if word != "--advisor-explain"]
    assert main(["--db", str(db), "sbatch", *plain]) == 0
    line = capsys.readouterr().out.strip()
    assert line == data["sbatch"]["explain"]["command"]
    assert f"--time={data['sbatch']['explain']['decision']['time_s'] // 60 // 60:02d}:" in line


def test_the_plan_spreads_over_node_classes_pins_each_task_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("advisor.services.demo.plots_available", lambda: False)
    plan = _demo(capsys, tmp_path / "demo.db")["plan"]
    tasks, classes = plan["tasks"], {c["node_class"]: c for c in plan["classes"]}
    assert sum(c["tasks"] for c in classes.values()) == len(tasks)
    assert len({t["node_class"] for t in tasks}) >= 3
    # the class that runs every task fastest has fewer cores than tasks, so the plan spreads
    (fastest,) = {t["fastest_class"] for t in tasks}
    assert classes[fastest]["cores"] < len(tasks)
    displaced = [t for t in tasks if t["node_class"] != fastest]
    assert displaced and len(displaced) < len(tasks)
    for task in tasks:
        if task["node_class"] == fastest:
            assert task["why"] == f"{fastest} is its fastest class"
        else:
            match = re.fullmatch(
                rf"{fastest} \(fastest\) busy until t=(\d+) s: done here at t=(\d+) s, there at "
                r"t=(\d+) s",
                task["why"],
            )
            assert match, task["why"]
            busy_until, here, there = map(int, match.groups())
            assert here == round(task["finish_s"]) and here <= there and busy_until > 0
    # each task pinned by the features of its class's nodes, which no other node has all of
    sample = json.loads(sample_file("cluster.json").read_text())
    features = {n["name"]: set(n["features"]) for n in sample["nodes"]}
    for task in tasks:
        wanted = set(task["constraint"].split("&"))
        (partition,) = [p for p in sample["partitions"] if p["name"] == task["partition"]]
        holders = {n for n in partition["nodes"] if wanted <= features[n]}
        assert holders == {task["node_class"]}, task
    assert f"--constraint={tasks[0]['constraint']}" in plan["submit_lines"][0]


def test_every_part_is_there_with_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    db = tmp_path / "demo.db"
    data = _demo(capsys, db)
    assert {m["task"] for m in data["models"]} == {
        "fastqc",
        "adapter_removal",
        "bwa",
        "markduplicates",
    }
    plan = data["plan"]
    assert 20 <= len(plan["tasks"]) <= 50
    assert plan["algorithm"] == "heft"
    assert plan["p95_s"] >= plan["p50_s"] > 0 and plan["makespan_s"] > 0
    assert all(t["partition"] for t in plan["tasks"])
    assert plan["submit_lines"][0].startswith("sbatch --job-name=")
    replay = data["replay"]
    assert 2000 <= replay["jobs"] <= 5000
    policies = {p["policy"]: p for p in replay["policies"]}
    assert {"advisor", "user", "ave2x1", "max5x3"} <= set(policies)
    assert replay["killed_completed_pct"] == policies["advisor"]["killed_completed_pct"]
    assert policies["advisor"]["killed_completed_pct"] < policies["ave2x1"]["killed_completed_pct"]
    assert len(data["plots"]) == 2
    for png in data["plots"]:
        assert Path(png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert Path(png).parent == tmp_path / "demo-demo"
    assert len(data["next_commands"]) == 3


def test_text_has_five_parts_and_says_how_to_get_plots_without_matplotlib(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("advisor.services.demo.plots_available", lambda: False)
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for part in range(1, 6):
        assert f"\n{part}. " in "\n" + out
    assert "sbatch -p fast,legacy --time=" in out
    assert " why" in out and "(fastest) busy until t=" in out and "--constraint=" in out
    assert "pip install" in out and ".png" not in out
    assert out.rstrip().splitlines()[-3:][0].startswith("  advisor --db demo.db")


def test_the_bundled_log_keeps_its_attribution() -> None:
    head = sample_file(SAMPLE_LOG).read_text().splitlines()[:6]
    assert any("Parallel Workloads Archive" in line for line in head)
    assert "curie-3000.swf" in sample_file("PROVENANCE.md").read_text()
