"""The model against a real run: two OS processes and a bounded shared buffer (advisor.insitu.pipeline).

Each run takes about 2 s (100 steps of about 17 ms).  The assertions use the stage times the
processes *measured*, never the configured sleeps, so a loaded machine changes the numbers but
not the verdict; only the configured efficiency is compared with a tolerance that covers the
sleeps' overrun.  A run during which the machine's load changed breaks the hypothesis the
prediction rests on (as the paper says, "without failures and external loads"); the test sees
it in the measurements and runs again, at most seven times (a disturbed run costs 2 s; the
integration modules that share the machine's two cores come and go).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from advisor.errors import InputError
from advisor.insitu.model import paper_pipeline, period_s, replay_makespan_s
from advisor.insitu.pipeline import (
    PRESETS,
    PipelineConfig,
    PipelineRun,
    main,
    run_pipeline,
    write_steps_csv,
)
from advisor.insitu.report import InSituReport, analyse_steps
from advisor.insitu.steps import read_steps

#: Real runs whose measured stage times must not drift: no other unit module beside them.
pytestmark = pytest.mark.quiet

#: Steps the prediction may use, as in the issue: "predicted from the first 10 steps".
FIRST = 10
#: The prediction rests on the consistency hypothesis (paper Sect. 4.2).  Other processes on this
#: shared machine may change the sleeps' overrun in the middle of a run; a run where the steady
#: period or a steady stage time after step FIRST differs from the one within the first FIRST
#: steps by more than this share of the period is disturbed, and re-run.
MAX_DRIFT = 0.02
ATTEMPTS = 8
#: The replay adds up a few hundred recorded stage times, each a difference of two monotonic
#: readings rounded to about 1e-10 s at a machine's uptime; their sum stays far below a
#: microsecond, and one wake-up of a blocked process (tens of microseconds) would show.
ROUNDING_S = 1e-6


@dataclass(frozen=True)
class Attempt:
    run: PipelineRun
    first: InSituReport | None  # from the first FIRST steps; None if they never settled
    whole: InSituReport  # from every step
    drift: float  # change of the steady period or a stage time after step FIRST, / period


def _attempt(config: PipelineConfig, path: Path) -> Attempt:
    run = run_pipeline(config)
    write_steps_csv(run, path)
    table = read_steps(path)
    whole = analyse_steps(table)
    try:
        first = analyse_steps(table, first_steps=FIRST)
    except InputError:  # too noisy to find 3 steady steps among the first 10
        return Attempt(run, None, whole, math.inf)
    # Every later step counts, hiccups included: they are all in the measured makespan.
    later = {stage: float(table.column(stage)[FIRST:].mean()) for stage in first.stages_s}
    period = period_s(table.pipeline, later)
    changes = [abs(first.steady.period_s - period)]
    changes += [abs(first.stages_s[stage] - later[stage]) for stage in later]
    return Attempt(run, first, whole, max(changes) / period)


@pytest.mark.parametrize(
    ("preset", "scenario", "bottleneck"),
    [
        ("idle-simulation", "idle_simulation", "analysis"),
        ("idle-analyzer", "idle_analyzer", "simulation"),
    ],
)
def test_makespan_predicted_from_ten_steps_of_a_real_run(
    tmp_path: Path, preset: str, scenario: str, bottleneck: str
) -> None:
    config = PipelineConfig(steps=100, **PRESETS[preset])
    drifts = []
    for _ in range(ATTEMPTS):
        attempt = _attempt(config, tmp_path / "steps.csv")
        run = attempt.run
        # Whatever the load: frames intact, the constraints explain the run, scenario as set.
        assert run.corrupt_frames == 0  # no slot was overwritten before it was read (Eq. 2)
        replay = replay_makespan_s(paper_pipeline(1), run.steps)
        # Replaying the measured stage times through the model's constraints gives the measured
        # makespan, whatever the load: the pipeline waits for nothing else.
        assert replay == pytest.approx(run.makespan_s, rel=0, abs=ROUNDING_S)
        steady = attempt.whole.steady
        assert (steady.scenario, steady.bottleneck) == (scenario, bottleneck)
        drifts.append(attempt.drift)
        if attempt.drift <= MAX_DRIFT:
            break
    else:
        pytest.fail(f"the load changed within each of {ATTEMPTS} runs: drifts {drifts}")
    report = attempt.first
    assert report is not None

    assert (report.steady.scenario, report.steady.bottleneck) == (scenario, bottleneck)
    assert 3 <= report.window.warmup_steps <= FIRST - 3  # the configured 3 (+ hiccups)
    assert report.makespan_steps == 100
    predicted = report.makespan_s
    error = abs(predicted - run.makespan_s) / run.makespan_s
    assert error < 0.05, f"predicted {predicted:.3f} s, measured {run.makespan_s:.3f} s"
    with_warmup = predicted + report.warmup_excess_s
    assert abs(with_warmup - run.makespan_s) / run.makespan_s < 0.05

    # Efficiency: as the processes' own idle times say (all steps), and as configured (Eq. 7),
    # give or take the sleeps' overrun.
    measured = attempt.whole.measured
    assert measured is not None
    assert report.steady.efficiency == pytest.approx(measured.efficiency, abs=0.05)
    simulation = config.simulate_s + config.write_s
    analysis = config.read_s + config.analyse_s
    configured = min(simulation, analysis) / max(simulation, analysis)
    assert report.steady.efficiency == pytest.approx(configured, abs=0.1)


def test_a_second_buffer_slot_really_halves_a_hand_over_bound_run(tmp_path: Path) -> None:
    """The k-frame generalisation on a real run: with S = A = 0, k = 1 serialises W and R."""
    reports, makespans = {}, {}
    for k in (1, 2):
        config = PipelineConfig(
            steps=40, simulate_s=0.0, write_s=0.005, read_s=0.005, analyse_s=0.0,
            buffer_frames=k, warmup_steps=0,
        )  # fmt: skip
        run = run_pipeline(config)
        assert run.corrupt_frames == 0
        replay = replay_makespan_s(paper_pipeline(k), run.steps)
        assert replay == pytest.approx(run.makespan_s, rel=0, abs=ROUNDING_S)
        path = tmp_path / f"k{k}.csv"
        write_steps_csv(run, path)
        reports[k] = analyse_steps(read_steps(path, buffer_frames=k))
        makespans[k] = run.makespan_s
        assert reports[k].makespan_s == pytest.approx(run.makespan_s, rel=0.1)
    assert reports[1].steady.scenario == "buffer_bound"
    assert reports[2].steady.scenario != "buffer_bound"
    assert 0.4 < makespans[2] / makespans[1] < 0.7


def test_command_line_of_the_pipeline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "steps.csv"
    argv = ["--steps", "12", "--simulate-ms", "5", "--analyse-ms", "2", "--write-ms", "0"]
    assert main([*argv, "--read-ms", "0", "--buffer", "2", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "12 steps in" in printed
    assert ", 0 corrupt frames" in printed
    table = read_steps(out)
    assert len(table) == 12
    assert "buffer_frames=2" in out.read_text()
    assert main(["--steps", "0", "--output", str(out)]) == 2
    assert "steps" in capsys.readouterr().err
