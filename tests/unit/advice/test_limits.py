"""Per-partition limits and what each policy decides."""

from __future__ import annotations

import pytest

from advisor.advice.forecast import Forecast
from advisor.advice.limits import MIN_RUNS_TO_TIGHTEN, PartitionLimit, decide, partition_limit


def forecast(node_class: str, q_s: float, runs: int = 10) -> Forecast:
    return Forecast(node_class, q_s * 0.8, q_s * 0.8, q_s * 0.95, q_s, 0.95, q_s, runs, "online")


def limit(name: str, limit_s: int | None, runs: int = 10) -> PartitionLimit:
    forecasts = (forecast("c", 100.0, runs),)
    return PartitionLimit(name, ("c",), forecasts, None, 100.0, limit_s, False, "test")


def test_limit_is_the_slowest_class_quantile_plus_margin_rounded_up() -> None:
    got = partition_limit(
        "cpu", ["a", "b"], [forecast("a", 500.0), forecast("b", 700.0)], max_time_s=None, margin=0.1
    )
    assert got.predicted_s == 700.0
    assert got.limit_s == 780  # 770 s -> 13 min
    assert "P95 on b" in got.reason
    assert not got.clamped


def test_limit_is_clamped_to_max_time() -> None:
    got = partition_limit("cpu", ["a"], [forecast("a", 10_000.0)], max_time_s=3600, margin=0.1)
    assert (got.limit_s, got.clamped) == (3600, True)
    assert "clamped" in got.reason


def test_a_class_without_prediction_gives_no_limit() -> None:
    got = partition_limit(
        "cpu", ["a", "b"], [forecast("a", 10.0), None], max_time_s=None, margin=0.1
    )
    assert got.limit_s is None
    assert "b" in got.reason


def test_fill_sets_largest_and_passes_smallest_as_time_min() -> None:
    got = decide(
        [limit("cpu", 600), limit("fat", 300)], policy="fill", user_time=None, user_time_min=None
    )
    assert (got.action, got.time_s, got.time_min_s) == ("set", 600, 300)


def test_fill_keeps_a_users_time_and_time_min() -> None:
    assert (
        decide([limit("cpu", 600)], policy="fill", user_time="5", user_time_min=None).time_s is None
    )
    kept = decide(
        [limit("a", 600), limit("b", 300)], policy="fill", user_time=None, user_time_min="2"
    )
    assert (kept.time_s, kept.time_min_s) == (600, None)


@pytest.mark.parametrize(
    ("user", "runs", "action", "time_s"),
    [
        ("60", 10, "lowered", 600),
        ("UNLIMITED", 10, "lowered", 600),
        ("5", 10, "kept", None),  # never raised
        ("60", MIN_RUNS_TO_TIGHTEN - 1, "kept", None),  # not confident
        ("soon", 10, "kept", None),  # unreadable
    ],
)
def test_tighten_only_lowers_when_confident(
    user: str, runs: int, action: str, time_s: int | None
) -> None:
    got = decide([limit("cpu", 600, runs)], policy="tighten", user_time=user, user_time_min=None)
    assert (got.action, got.time_s) == (action, time_s)


def test_advise_changes_nothing_and_unknown_partitions_leave_the_job_alone() -> None:
    advise = decide([limit("cpu", 600)], policy="advise", user_time=None, user_time_min=None)
    assert (advise.action, advise.time_s, advise.advised_s) == ("advise", None, 600)
    none = decide(
        [limit("cpu", 600), limit("x", None)], policy="fill", user_time=None, user_time_min=None
    )
    assert (none.action, none.time_s) == ("none", None)
    assert decide([], policy="fill", user_time=None, user_time_min=None).action == "none"
