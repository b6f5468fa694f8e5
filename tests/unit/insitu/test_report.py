"""``advisor insitu`` end to end on recorded runs, its JSON schema, and the time-limit helper."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.cli import main
from advisor.errors import InputError
from advisor.insitu.model import makespan_s
from advisor.insitu.report import analyse_steps, insitu_time_limit_s
from advisor.insitu.steps import read_steps
from advisor.validate import validate
from tests.helpers.paths import TEST_DATA

DATA = TEST_DATA / "insitu"
RECORDED = {
    "pipeline-idle-analyzer.csv": ("idle_analyzer", "simulation"),
    "pipeline-idle-simulation.csv": ("idle_simulation", "analysis"),
}


def _measured_makespan(path: Path) -> float:
    match = re.search(r"measured makespan_s=([0-9.]+)", path.read_text())
    assert match, f"{path} has no measured makespan line"
    return float(match.group(1))


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["insitu", *argv, "--format", "json"]) == 0
    data: dict[str, object] = json.loads(capsys.readouterr().out)
    validate(data, "insitu-report", source="insitu output")
    return data


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_recorded_run_predicted_from_its_first_ten_steps(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """The paper's claim on a real (recorded) run: a few steps give the makespan within ~5 %."""
    path = DATA / name
    data = _json(capsys, str(path), "--first", "10")
    assert (data["scenario"], data["bottleneck"]) == RECORDED[name]
    assert data["steps_used"] == 10
    assert data["makespan_steps"] == 100  # default: every step in the file
    assert data["warmup_steps"] == 3  # the pipeline slowed its first 3 steps down
    measured = _measured_makespan(path)
    assert abs(float(data["makespan_s"]) - measured) / measured < 0.05  # type: ignore[arg-type]
    # Configured stage times 15/2/2/6 ms (or 6/2/2/15): E = 8/17 give or take sleep overrun.
    assert float(data["efficiency"]) == pytest.approx(8 / 17, abs=0.05)  # type: ignore[arg-type]
    # The model's idle agrees with the idle the processes measured (paper Eq. 4 and 5).
    measured_idle = data["measured"]
    assert isinstance(measured_idle, dict)
    assert measured_idle["idle_s"] == pytest.approx(data["idle_s"], rel=0.3)


def test_papers_keys_and_sigma_relations(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, str(DATA / "pipeline-idle-analyzer.csv"))
    s, w, r, a = (float(data[key]) for key in "SWRA")  # type: ignore[arg-type]
    assert data["model"] == "paper"
    assert data["sigma_bar_s"] == pytest.approx(max(s + w, r + a))
    assert data["idle_s"] == pytest.approx(abs(s + w - (r + a)))
    assert data["efficiency"] == pytest.approx(1 - abs(s + w - (r + a)) / max(s + w, r + a))
    assert data["sigma_prime_s"] == pytest.approx(min(s + w, r + a))
    assert data["sigma_s"] == pytest.approx(s + w + r + a)
    assert data["makespan_s"] == pytest.approx(100 * max(s + w, r + a) + min(s + w, r + a))
    assert data["stages_s"] == {"S": s, "W": w, "R": r, "A": a}


def test_steps_option_scales_the_makespan(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(DATA / "pipeline-idle-simulation.csv")
    short = _json(capsys, path, "--steps", "100")
    long = _json(capsys, path, "--steps", "1000000")
    period = float(short["sigma_bar_s"])  # type: ignore[arg-type]
    grown = float(long["makespan_s"]) - float(short["makespan_s"])  # type: ignore[arg-type]
    assert grown == pytest.approx((1_000_000 - 100) * period, rel=1e-9)


def test_three_component_pipeline(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, str(DATA / "three-components.json"))
    assert data["model"] == "pipeline"
    assert data["buffer_frames"] == [2, 1]
    assert data["warmup_steps"] == 2
    assert (data["scenario"], data["bottleneck"]) == ("idle_simulation", "filter")
    assert "S" not in data and "R1" not in data  # stage keys at the top: the paper's layout only
    assert set(data["stages_s"]) == {"S", "W", "R1", "F", "W1", "R2", "A"}  # type: ignore[arg-type]
    assert data["measured"] is None
    assert 0 < float(data["efficiency"]) < 1  # type: ignore[arg-type]


def test_bigger_buffer_option(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, str(DATA / "pipeline-idle-analyzer.csv"), "--buffer", "4")
    assert data["model"] == "pipeline"
    assert data["buffer_frames"] == [4]


@pytest.mark.parametrize("fmt", ["table", "csv", "github"])
def test_human_formats(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    assert main(["insitu", str(DATA / "pipeline-idle-analyzer.csv"), "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert "idle_analyzer" in out
    assert "simulation" in out
    if fmt == "table":
        assert "σ'*" in out and "fill-and-drain" in out


def test_too_few_steady_steps_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "short.csv"
    path.write_text("step,S,W,R,A\n0,9,1,1,1\n1,1,1,1,1\n2,1,1,1,1\n")
    assert main(["insitu", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert f"{path}: only 2 steady steps among the 3 steps used (1 warm-up" in err
    assert main(["insitu", str(DATA / "pipeline-idle-analyzer.csv"), "--first", "0"]) == 2
    assert main(["insitu", str(DATA / "pipeline-idle-analyzer.csv"), "--steps", "-1"]) == 2
    assert main(["insitu", str(DATA / "pipeline-idle-analyzer.csv"), "--buffer", "257"]) == 2


def test_bad_balance_tolerance_is_an_input_error() -> None:
    table = read_steps(DATA / "pipeline-idle-analyzer.csv")
    with pytest.raises(InputError, match="balance"):
        analyse_steps(table, balance_tolerance=1.5)


def test_time_limit_covers_makespan_and_warmup_with_the_margin() -> None:
    report = analyse_steps(read_steps(DATA / "pipeline-idle-analyzer.csv"), first_steps=10)
    expected = makespan_s(report.pipeline, report.stages_s, 100_000) + report.warmup_excess_s
    limit = insitu_time_limit_s(report, 100_000, 0.2)
    assert isinstance(limit, int)
    assert expected * 1.2 <= limit < expected * 1.2 + 1
    assert insitu_time_limit_s(report, 0, 0.0) == 1  # never a zero limit
    with pytest.raises(ValueError, match="margin"):
        insitu_time_limit_s(report, 10, -0.1)
    with pytest.raises(ValueError, match="negative"):
        insitu_time_limit_s(report, -1, 0.1)


_REPORT = analyse_steps(read_steps(DATA / "pipeline-idle-simulation.csv"), first_steps=10)


@given(st.integers(0, 10**8), st.integers(0, 10**8), st.floats(0, 3), st.floats(0, 3))
def test_time_limit_is_monotone(
    steps_a: int, steps_b: int, margin_a: float, margin_b: float
) -> None:
    report = _REPORT
    low_steps, high_steps = sorted((steps_a, steps_b))
    low_margin, high_margin = sorted((margin_a, margin_b))
    assert insitu_time_limit_s(report, low_steps, low_margin) <= insitu_time_limit_s(
        report, high_steps, high_margin
    )


def test_the_json_form_round_trips_and_says_what_the_attributes_say() -> None:
    data = _REPORT.to_json()
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert data["sigma_bar_s"] == _REPORT.steady.period_s
    assert data["sigma_s"] == pytest.approx(_REPORT.steady.period_s + _REPORT.sigma_prime_s)
    assert data["steps_used"] == _REPORT.window.total_steps
    assert [c["name"] for c in data["components"]] == [c.name for c in _REPORT.components]
    assert [c["utilisation"] for c in data["components"]] == [
        c.utilisation for c in _REPORT.components
    ]
    assert data["model"] == _REPORT.model == "paper"  # S, W, R, A with a one-frame buffer
    assert all(0.0 <= c.utilisation <= 1.0 for c in _REPORT.components)
