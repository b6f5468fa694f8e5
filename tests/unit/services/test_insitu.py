"""services.insitu: the step file read and analysed as the request says."""

from __future__ import annotations

import pytest

from advisor.errors import InputError
from advisor.insitu.report import analyse_steps
from advisor.insitu.steps import read_steps
from advisor.services.insitu import InSituRequest, insitu
from advisor.validate import validate
from tests.helpers.paths import TEST_DATA

STEPS = TEST_DATA / "insitu"


def test_the_request_is_what_analyse_steps_is_given() -> None:
    path = STEPS / "pipeline-idle-simulation.csv"
    report = insitu(InSituRequest(str(path), steps=40, first=10, balance_tolerance=0.1))
    expected = analyse_steps(read_steps(path), steps=40, first_steps=10, balance_tolerance=0.1)
    assert report.to_json() == expected.to_json()
    assert report.makespan_steps == 40 and report.window.total_steps == 10
    validate(report.to_json(), "insitu-report", source="services.insitu")


def test_a_buffer_makes_it_the_pipeline_model() -> None:
    path = STEPS / "pipeline-idle-analyzer.csv"
    one, two = insitu(InSituRequest(str(path))), insitu(InSituRequest(str(path), buffer=2))
    assert (one.model, two.model) == ("paper", "pipeline")
    assert two.to_json()["buffer_frames"] == list(two.pipeline.buffer_frames)
    assert "S" in one.to_json() and "S" in two.to_json()  # the paper's stages either way


def test_three_components_have_no_paper_stage_keys() -> None:
    report = insitu(InSituRequest(str(STEPS / "three-components.json")))
    data = report.to_json()
    assert report.model == "pipeline" and "S" not in data
    assert [c["name"] for c in data["components"]] == [c.name for c in report.components]
    validate(data, "insitu-report", source="services.insitu")


def test_a_bad_tolerance_is_an_input_error() -> None:
    with pytest.raises(InputError, match="balance-tolerance"):
        insitu(InSituRequest(str(STEPS / "pipeline-idle-analyzer.csv"), balance_tolerance=1.5))
