"""The history policy's rules, one by one, and its invariants under random histories."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from advisor.history.book import HistoryBook
from advisor.history.keys import HistoryKey, keys_for
from advisor.history.policy import (
    DEFAULT_CONFIG,
    KeyState,
    Proposal,
    Refusal,
    SiteBudget,
    clamp,
    propose,
)

NONE_RUNNING = {"in_flight": lambda key: 0}
ALICE = HistoryKey("user", "alice")


def state(*runtimes: float, censored: tuple[float, ...] = (), cap: float = 1.0) -> KeyState:
    current = KeyState(cap=cap)
    for runtime in runtimes:
        current = current.learned(runtime, censored=False)
    for runtime in censored:
        current = current.learned(runtime, censored=True)
    return current


def test_keys_go_from_most_to_least_specific_and_skip_missing_parts() -> None:
    assert [k.kind for k in keys_for("alice", "sim", "cpu")] == [
        "user+name", "user+partition", "user",
    ]  # fmt: skip
    assert [k.kind for k in keys_for("alice", "", None)] == ["user"]


def test_every_key_is_one_users() -> None:
    # A partition-wide key pooled all users: one user's flood of short jobs shortened the
    # limits of every user without a history of their own (issue #8).
    assert keys_for(None, "sim", "cpu") == ()
    assert all(k.user == "alice" for k in keys_for("alice", "sim", "cpu"))


def test_too_few_completed_runs_give_no_limit() -> None:
    found = propose([(ALICE, state(600, 600, 600, 600))], **NONE_RUNNING)
    assert isinstance(found, Refusal)


def test_the_longest_recent_run_plus_the_margin_or_the_floor() -> None:
    short = propose([(ALICE, state(100, 200, 300, 400, 500))], **NONE_RUNNING)
    assert isinstance(short, Proposal) and short.proposal_s == 500 + 3600  # the 1 h floor
    long = propose([(ALICE, state(1000, 9000, 8000, 7000, 10000))], **NONE_RUNNING)
    assert isinstance(long, Proposal) and long.proposal_s == 15000  # + 50 %
    assert "longest of the last 5 runs 10000 s" in long.explanation()


def test_the_most_specific_key_with_enough_runs_answers() -> None:
    name, user = keys_for("alice", "sim", None)
    few = state(50, 50)
    many = state(*(9000,) * 6)
    found = propose([(name, few), (user, many)], **NONE_RUNNING)
    assert isinstance(found, Proposal) and found.key == user
    found = propose([(name, state(*(50,) * 5)), (user, many)], **NONE_RUNNING)
    assert isinstance(found, Proposal) and found.key == name


def test_a_timeout_counts_as_at_least_its_limit() -> None:
    found = propose([(ALICE, state(*(600,) * 5, censored=(20000,)))], **NONE_RUNNING)
    assert isinstance(found, Proposal) and found.basis_s == 20000


def test_the_at_risk_budget_refuses_when_the_key_has_enough_advised_jobs_running() -> None:
    busy = propose([(ALICE, state(*(600,) * 5, cap=2.0))], in_flight=lambda key: 2)
    assert isinstance(busy, Refusal) and "at-risk budget 2" in busy.reason
    free = propose([(ALICE, state(*(600,) * 5, cap=2.0))], in_flight=lambda key: 1)
    assert isinstance(free, Proposal)


def test_aimd_halves_on_a_kill_and_grows_by_one_over_cap_otherwise() -> None:
    grown = KeyState(cap=2.0).after_advised(killed=False)
    assert grown.cap == 2.5 and grown.kills == 0
    halved = grown.after_advised(killed=True)
    assert halved.cap == 1.25 and halved.kills == 1
    assert KeyState(cap=1.0).after_advised(killed=True).cap == 1.0
    capped = KeyState(cap=DEFAULT_CONFIG.cap_max).after_advised(killed=False)
    assert capped.cap == DEFAULT_CONFIG.cap_max


def test_the_site_budget_widens_after_kills_above_budget_and_relaxes_below_half() -> None:
    site = SiteBudget(kill_rate=0.05, widen=1.0)
    wider = site.after(killed=True)
    assert wider.widen == 2.0 and wider.kill_rate > site.kill_rate
    calm = SiteBudget(kill_rate=0.001, widen=4.0).after(killed=False)
    assert calm.widen == 4.0 * DEFAULT_CONFIG.site_relax
    assert SiteBudget(kill_rate=0.0, widen=1.0).after(killed=False).widen == 1.0
    found = propose([(ALICE, state(*(10000,) * 5))], site=SiteBudget(0.05, 2.0), **NONE_RUNNING)
    assert isinstance(found, Proposal) and found.proposal_s == 30000
    assert "site kill budget" in found.explanation()


def test_only_completed_and_timeout_teach_runtimes_but_every_job_counts_for_the_site() -> None:
    book = HistoryBook()
    book.learn("alice", "sim", "cpu", runtime_s=5, state="FAILED")
    assert book.states == {} and book.site.jobs == 1
    book.learn("alice", "sim", "cpu", runtime_s=5, state="COMPLETED")
    assert set(book.states) == set(keys_for("alice", "sim", "cpu"))
    book.learn("alice", "sim", "cpu", runtime_s=60, state="TIMEOUT", advised=True)
    assert book.site.kill_rate > 0


@given(
    runtimes=st.lists(st.floats(0, 1e6), min_size=1, max_size=200),
    timeouts=st.lists(st.booleans(), min_size=1, max_size=200),
)
def test_the_state_stays_bounded_whatever_the_number_of_runs(
    runtimes: list[float], timeouts: list[bool]
) -> None:
    current = KeyState()
    for runtime, censored in zip(runtimes, timeouts, strict=False):
        current = current.learned(runtime, censored=censored)
    assert len(current.runs) <= DEFAULT_CONFIG.window
    assert current.basis_s == max(r for r, _ in current.runs)


@given(
    proposal=st.floats(0, 1e7),
    request=st.one_of(st.none(), st.integers(1, 10**6)),
    max_time=st.one_of(st.none(), st.integers(60, 10**6)),
)
def test_a_limit_is_whole_minutes_at_least_one_and_never_above_request_or_maxtime(
    proposal: float, request: int | None, max_time: int | None
) -> None:
    limit = clamp(proposal, request_s=request, max_time_s=max_time)
    assert limit <= (request or limit) and limit <= (max_time or limit)
    if request is None or request >= 60:
        assert limit >= 60 or (max_time is not None and limit == max_time)
    unclamped = clamp(proposal, request_s=None, max_time_s=None)
    assert unclamped % 60 == 0 and unclamped >= proposal
