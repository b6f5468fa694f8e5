"""The history policy's rules, one by one, and the kill budget's invariants under random logs."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.history.book import HistoryBook
from advisor.history.budget import KillBudget
from advisor.history.cells import BELOW, KEPT, KILLED, LEVELS, ScoreCell, request_cell
from advisor.history.keys import HistoryKey, keys_for, name_family
from advisor.history.policy import (
    DEFAULT_CONFIG,
    KeyState,
    Proposal,
    Refusal,
    clamp,
    key_score,
    margin_limit_s,
    propose,
)

ALICE = HistoryKey("user", "alice")
#: A budget whose price makes a limit worth a kill: what a partition with many completed jobs
#: and no kills has earned.
CHEAP = KillBudget(0.01, math.log(1000.0), credit=50.0, completed=5000)


def state(*runtimes: float, censored: tuple[float, ...] = ()) -> KeyState:
    current = KeyState()
    for runtime in runtimes:
        current = current.learned(runtime, censored=False)
    for runtime in censored:
        current = current.learned(runtime, censored=True)
    return current


def cell(*scores: float) -> tuple[float, ...]:
    return ScoreCell.of(scores).quantiles()


#: A cell whose 2000 jobs needed at most a margin of e^-2 of (basis + tau): every level answers.
CALM = cell(*([BELOW] * 1000 + [-2.0 - i / 1000 for i in range(1000)]))


def proposal(states: list[tuple[HistoryKey, KeyState | None]], **given: object) -> object:
    options: dict[str, object] = {
        "partition": "cpu", "request_s": 86400, "budget": CHEAP,
        "quantiles": lambda _cell: CALM,
    }  # fmt: skip
    options.update(given)
    return propose(states, **options)  # type: ignore[arg-type]


def test_keys_go_from_most_to_least_specific_and_skip_missing_parts() -> None:
    assert [k.kind for k in keys_for("alice", "sim", "cpu")] == [
        "user+name", "user+partition", "user",
    ]  # fmt: skip
    assert [k.kind for k in keys_for("alice", "sim_3", "cpu")] == [
        "user+name", "user+family", "user+partition", "user",
    ]  # fmt: skip
    assert keys_for("alice", "sim_3", None)[1] == HistoryKey("user+family", "alice", "sim_#")
    assert [k.kind for k in keys_for("alice", "", None)] == ["user"]


def test_a_name_family_masks_every_run_of_digits() -> None:
    assert name_family("bwa.P12-4_2_L007") == "bwa.P#-#_#_L#"
    assert name_family("snakejob.x.17.sh") == "snakejob.x.#.sh"
    assert name_family("plain") == "plain"


def test_every_key_is_one_users() -> None:
    # A partition-wide key pooled all users: one user's flood of short jobs shortened the
    # limits of every user without a history of their own (issue #8).
    assert keys_for(None, "sim", "cpu") == ()
    assert all(k.user == "alice" for k in keys_for("alice", "sim_1", "cpu"))


def test_a_cells_margin_is_the_conformal_rank_of_its_scores() -> None:
    scores = [float(i) for i in range(99)]  # n = 99: the 1 % level is the 99th of 100 ranks
    margins = cell(*scores)
    assert margins[LEVELS.index(0.01)] == 98.0  # ceil(100 × 0.99) = 99th smallest
    assert margins[LEVELS.index(0.1)] == 89.0  # ceil(100 × 0.9) = 90th
    assert math.isinf(margins[LEVELS.index(0.005)])  # 100 scores are too few for 0.5 %


def test_a_kill_in_a_cell_is_above_every_margin() -> None:
    margins = cell(*([0.0] * 99 + [KILLED]))
    assert math.isinf(margins[LEVELS.index(0.005)])
    assert margins[LEVELS.index(0.1)] == 0.0


def test_a_cell_keeps_its_latest_scores() -> None:
    current = ScoreCell()
    for score in range(KEPT + 5, 0, -1):
        current.add(float(score))
    assert current.scores[0] == KEPT and len(current.scores) == KEPT
    assert list(current.ordered) == sorted(current.scores)


def test_requests_within_a_factor_of_four_share_a_cell() -> None:
    assert request_cell("cpu", 4000) == request_cell("cpu", 14000)  # 64 to 256 min
    assert request_cell("cpu", 3600) != request_cell("cpu", 4000)
    assert request_cell("cpu", 3600) != request_cell("cpu", 864000)


def test_the_score_inverts_the_limit() -> None:
    basis = 600.0
    for runtime in (700.0, 5000.0, 40000.0):
        limit = margin_limit_s(basis, key_score(basis, runtime))
        assert math.isclose(limit, runtime)
    assert key_score(basis, 500.0) == BELOW


def test_no_budget_no_request_no_key_no_limit() -> None:
    runs = [(ALICE, state(*(600,) * 5))]
    assert isinstance(proposal(runs, budget=None), Refusal)
    assert isinstance(proposal(runs, request_s=None), Refusal)
    assert isinstance(proposal([(ALICE, state(600, 600))], request_s=None), Refusal)


def test_a_fresh_budget_takes_risks_only_far_below_the_budget() -> None:
    # Priced at the request over the budget, a limit is worth its risk only when it frees a
    # larger share of the request than its risk is of the budget.
    fresh = KillBudget.fresh(0.01, 86400)
    found = proposal([(ALICE, state(*(600,) * 5))], budget=fresh)
    assert isinstance(found, Proposal) and found.risk <= 0.001
    tight = proposal([(ALICE, state(*(80000,) * 5))], budget=fresh)
    assert isinstance(tight, Refusal) and "price of a kill" in tight.reason


def test_the_limit_is_the_basis_plus_the_cells_margin_below_the_request() -> None:
    found = proposal([(ALICE, state(100, 200, 300, 400, 600))])
    assert isinstance(found, Proposal)
    assert found.basis_s == 600 and found.key == ALICE
    assert 600 < found.limit_s < 86400 and found.limit_s % 60 == 0
    assert found.risk <= DEFAULT_CONFIG.max_risk * CHEAP.budget
    assert "kill budget 1%" in found.explanation()


def test_a_higher_price_never_gives_a_tighter_limit() -> None:
    runs = [(ALICE, state(*(600,) * 5))]
    limits = []
    for log_price in (5.0, 8.0, 11.0, 12.0, 13.0, 20.0):
        found = proposal(runs, budget=CHEAP._replace(log_price=log_price))
        limits.append(found.limit_s if isinstance(found, Proposal) else 86400)
    assert limits == sorted(limits) and limits[-1] == 86400 and limits[0] < 86400


def test_the_most_specific_key_with_enough_runs_answers() -> None:
    name, user = keys_for("alice", "sim", None)
    few, many = state(50, 50), state(*(9000,) * 6)
    found = proposal([(name, few), (user, many)])
    assert isinstance(found, Proposal) and found.key == user
    found = proposal([(name, state(*(50,) * 5)), (user, many)])
    assert isinstance(found, Proposal) and found.key == name


def test_a_job_without_a_key_is_limited_by_its_requests_cell() -> None:
    shares = cell(*[math.log(0.01)] * 2000)  # jobs with requests like it used 1 % of them
    found = proposal([(ALICE, state(50))], quantiles=lambda _cell: shares)
    assert isinstance(found, Proposal) and found.key is None
    assert found.limit_s == 900  # 1 % of 86400 s, up to whole minutes
    assert "its request 86400 s" in found.explanation()


def test_a_timeout_counts_as_at_least_its_limit() -> None:
    found = proposal([(ALICE, state(*(600,) * 5, censored=(20000,)))])
    assert isinstance(found, Proposal) and found.basis_s == 20000


def test_a_burst_gets_limits_while_the_budget_could_absorb_it() -> None:
    runs = [(ALICE, state(*(600,) * 5))]
    assert isinstance(proposal(runs, running=49), Proposal)  # 50 credits
    busy = proposal(runs, running=50)
    assert isinstance(busy, Refusal) and "could absorb (50)" in busy.reason
    assert isinstance(proposal(runs, budget=CHEAP._replace(credit=-3.0)), Proposal)  # one


def test_jobs_at_risk_and_a_users_own_kills_raise_the_price() -> None:
    runs = [(ALICE, state(*(600,) * 5))]
    base = proposal(runs)
    risky = proposal(runs, reserved_risk=30.0)
    bad = proposal(runs, user=KeyState(completed=100, kills=40))
    assert isinstance(base, Proposal)
    for other in (risky, bad):
        assert isinstance(other, Refusal) or (
            isinstance(other, Proposal) and other.limit_s >= base.limit_s
        )


def test_a_user_killed_beyond_the_budgets_share_of_their_jobs_gets_no_limit() -> None:
    # The promise holds per user too: a flood of another user's completed jobs makes the
    # partition bolder, but cannot cost this user more than the slack beyond their own share.
    runs = [(ALICE, state(*(600,) * 5))]
    within = KeyState(completed=100, kills=1 + 3)  # 1 % of 100, plus the slack
    beyond = KeyState(completed=100, kills=1 + 4)
    assert isinstance(proposal(runs, user=within), Proposal)
    found = proposal(runs, user=beyond)
    assert isinstance(found, Refusal) and "more often than the kill budget allows" in found.reason


def test_clamp_never_exceeds_the_request_or_maxtime() -> None:
    assert clamp(5000.4, request_s=None, max_time_s=None) == 5040
    assert clamp(5000, request_s=3000, max_time_s=None) == 3000
    assert clamp(5000, request_s=None, max_time_s=1800) == 1800
    assert clamp(10, request_s=None, max_time_s=None) == 60


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), max_size=300), st.sampled_from([0.001, 0.01, 0.05]))
def test_the_price_moves_by_eta_times_kills_minus_the_budgets_share(
    kills: list[bool], budget: float
) -> None:
    # Whatever the outcomes, log price − log start = eta × (kills − budget × jobs): the price
    # ends at or under its start exactly when the kills stayed within the budget's share.
    start = KillBudget.fresh(budget, 3600)
    current = start
    for killed in kills:
        current = current.after(killed=killed, advised=True, eta=DEFAULT_CONFIG.eta)
    jobs, killed_n = len(kills), sum(kills)
    assert current.killed == killed_n and current.completed == jobs - killed_n
    expected = DEFAULT_CONFIG.eta * (killed_n - budget * jobs)
    assert math.isclose(current.log_price - start.log_price, expected, abs_tol=1e-9)
    assert math.isclose(current.credit, budget * jobs - killed_n, abs_tol=1e-9)


def test_the_book_counts_recorded_kills_and_completed_jobs_per_partition() -> None:
    book = HistoryBook()
    for n in range(10):
        book.learn("alice", "sim", "cpu", runtime_s=600 + n, state="COMPLETED", request_s=3600)
    book.learn("alice", "sim", "cpu", runtime_s=60, state="FAILED", request_s=3600)
    book.learn("alice", "sim", "cpu", runtime_s=900, state="TIMEOUT", advised=True, request_s=3600)
    book.learn("bob", "x", "cpu", runtime_s=900, state="TIMEOUT", advised=True, recorded=False)
    budget = book.budgets["cpu"]
    assert (budget.completed, budget.killed) == (10, 1)  # FAILED and bob's bare tag: no
    states = book.states
    assert states[HistoryKey("user+name", "alice", "sim")].kills == 1
    assert states[HistoryKey("user", "bob")].kills == 1  # bob's own keys learn it
    scores = book.cells[("cpu", "user+name")].scores
    assert KILLED in scores and len(scores) == 6  # the first 5 runs built the key
    assert len(book.cells[request_cell("cpu", 3600)].scores) == 5  # before, by request


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_slow_down_of_every_job_is_held_near_the_budget(seed: int) -> None:
    # A site whose jobs all get 3x slower at once: the limits in flight die, and the price
    # (with the burst cap) stops the advisor before it kills more than the budget allows.
    import random

    from advisor.replay.advised import AdvisorPolicy
    from advisor.replay.engine import replay
    from advisor.replay.jobs import ReplayJob

    rng = random.Random(seed)
    jobs = []
    for index in range(3000):
        slow = 3.0 if index > 2000 else 1.0
        run = int(rng.uniform(500, 700) * slow)
        jobs.append(ReplayJob(index, index, index * 60, 0, run, 86400, True, "COMPLETED",
                              f"u{index % 7}", f"job{index % 3}", "cpu"))  # fmt: skip
    policy = AdvisorPolicy(DEFAULT_CONFIG._replace(budget=0.01))
    figures = replay(jobs, [policy])["advisor"].result()
    assert figures.freed_pct > 50  # the calm part is advised
    assert figures.killed_completed_pct <= 1.0 + 1.0  # within a point of the budget


def test_another_users_flood_cannot_cost_a_user_more_than_their_own_share() -> None:
    # mallory's 6000 completed jobs earn the partition credit and a low price; alice's jobs
    # then run twice as long as her history: one at a time, she loses at most her share of
    # her completed jobs plus the slack (and the one job then running).
    from advisor.replay.advised import AdvisorPolicy
    from advisor.replay.engine import replay
    from advisor.replay.jobs import ReplayJob

    jobs = [ReplayJob(i, i, i, 0, 30, 86400, True, "COMPLETED", "mallory", "flood", "cpu")
            for i in range(6000)]  # fmt: skip
    start = 6000 + 31
    for n in range(200):
        run = 600 if n < 20 else 1200 + n
        index = len(jobs)
        jobs.append(ReplayJob(index, index, start, 0, run, 86400, True, "COMPLETED", "alice",
                              "sim", "cpu"))  # fmt: skip
        start += run + 1
    policy = AdvisorPolicy()
    replay(jobs, [policy])
    alice = policy.book.states[HistoryKey("user", "alice")]
    assert alice.kills > 0  # the flood did make her limits bold
    assert alice.kills <= 0.01 * alice.completed + DEFAULT_CONFIG.user_slack + 1
