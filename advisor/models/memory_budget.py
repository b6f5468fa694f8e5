"""The kill budget for OUT_OF_MEMORY: a margin held by what the advised jobs did.

The promise is the time policy's (advisor.history.policy): a share of a partition's jobs that
ran under memory the advisor set may be killed for lack of it.  The measured margin
(advisor.models.memory: the conformal quantile of the site's prediction errors) is a start;
what the advised jobs then do moves a correction ``log_margin`` per partition, in log memory,
by ``eta`` for every kill and down by ``eta × budget`` for every job that ran, so

    log_margin now − log_margin at the start = eta × (kills − budget × jobs),

whatever the jobs' peaks were: while the correction stays bounded the kills settle at the
budget's share of the jobs (quantile tracking, the argument of adaptive conformal inference,
Gibbs and Candès 2021; the time policy's price moves by the same rule).  The correction never
takes the margin below 0 (the model's own P95), so a long calm does not store up a debt that
the next kills would have to pay off.
"""

from __future__ import annotations

from collections.abc import Iterable

from advisor.history.budget import budget_step
from advisor.history.policy import DEFAULT_BUDGET, DEFAULT_CONFIG
from advisor.lite import NamedTuple
from advisor.store.connection import Store
from advisor.store.memory_models import load_margins, load_memory_budgets, save_memory_budgets

__all__ = ["DEFAULT_BUDGET", "ETA", "MemoryBudget", "learn_budgets"]

#: The step in log memory per kill, the time policy's (0.2): a kill raises every advised value
#: of the partition by 22 % (e^0.2), and 100 jobs that ran at the 1 % budget take 0.2 back.
#: The promise when the site states none is the time policy's too (DEFAULT_BUDGET, 1 %).
ETA = DEFAULT_CONFIG.eta


class MemoryBudget(NamedTuple):
    """One partition's promise, what its advised jobs did, and the correction it holds."""

    budget: float = DEFAULT_BUDGET
    log_margin: float = 0.0
    ran: int = 0
    killed: int = 0

    def after(self, *, killed: bool, floor: float = 0.0, eta: float = ETA) -> MemoryBudget:
        """The budget after one more advised job (killed: OUT_OF_MEMORY under the advice).

        floor: the lowest the correction may go (minus the measured margin: never below P95).
        """
        moved = budget_step(self.log_margin, killed=killed, budget=self.budget, eta=eta)
        return MemoryBudget(self.budget, max(-floor, moved), self.ran + (not killed),
                            self.killed + killed)  # fmt: skip

    @property
    def realised(self) -> float | None:
        """Kills over the advised jobs (None before any)."""
        jobs = self.ran + self.killed
        return self.killed / jobs if jobs else None


def learn_budgets(
    store: Store,
    outcomes: Iterable[tuple[str, bool]],
    *,
    budget: float = DEFAULT_BUDGET,
    restate: bool = False,
) -> int:
    """(partition, killed) of advised jobs that ended, in order, into their partitions' budgets.

    budget: the promise of partitions without one yet, and of every partition when ``restate``
    (``advisor update --kill-budget``: the one promise of time limits and memory alike).  The
    correction's floor is minus the site's largest measured margin (at distance 0): the margin
    it adds to never goes below 0 for any pool (advisor.models.memory.forecast_from).
    """
    states = {name: MemoryBudget(*row) for name, row in load_memory_budgets(store).items()}
    if restate:
        states = {name: state._replace(budget=budget) for name, state in states.items()}
    floor = max((m for margins in load_margins(store).values() for d, m in margins[:1] if d == 0),
                default=0.0)  # fmt: skip
    count = 0
    for partition, killed in outcomes:
        state = states.get(partition, MemoryBudget(budget))
        states[partition] = state.after(killed=killed, floor=floor)
        count += 1
    save_memory_budgets(
        store, {name: (s.budget, s.log_margin, s.ran, s.killed) for name, s in states.items()}
    )
    return count
