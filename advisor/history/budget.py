"""A partition's kill budget: what its advised limits did, and the price of the next kill.

Accounting tells, for every finished job of a partition, whether it completed and whether it
was killed at a limit the advisor set.  The budget counts both and keeps a **price**: the time
a limit must free to be worth one kill (seconds per kill).  Its log rises by ``eta`` with
every kill and falls by ``eta × budget`` with every completed job, so

    log price now − log price at the start = eta × (kills − budget × completed),

whatever the jobs were: if the price never exceeds its start, the kills never exceed the
budget's share of the completed jobs (adaptive conformal inference's argument, Gibbs and
Candès 2021, with the price in place of the level).  The start is the first request seen
divided by the budget: then a limit is worth its risk only if it frees a larger share of the
request than its risk is of the budget (at the budget's own risk, none is), so a site gets
bolder limits only as fast as its own completed jobs earn them, and a kill sets the price
back up at once.  ``credit``, the kills
the budget still allows, bounds the jobs of one key that may run under advised limits at once.

The state is a handful of numbers per partition (history_budget in the cache); accounting
ingestion updates it, the sbatch wrapper and the replay read it.
"""

from __future__ import annotations

import math

from advisor.lite import NamedTuple


def budget_step(log_value: float, *, killed: bool, budget: float, eta: float) -> float:
    """A kill budget's log quantity after one more job: up eta if killed, else down eta × budget.

    Summed over jobs, ``eta × (kills − budget × jobs)``: the module docstring's argument.  The
    time policy moves its price by it, the memory advice its margin
    (advisor.models.memory_budget): one promise, one rule.
    """
    return log_value + eta * (float(killed) - budget)


class KillBudget(NamedTuple):
    """One partition's promise, what its jobs did, and the price of a kill."""

    #: The share of completed jobs that may be killed at an advised limit.
    budget: float
    log_price: float
    #: Kills the budget still allows: budget × (completed + killed) − killed.
    credit: float = 0.0
    #: Jobs of the partition that completed (advised or not), and that were killed at an
    #: advised limit; advised jobs that completed.
    completed: int = 0
    killed: int = 0
    advised_completed: int = 0

    @classmethod
    def fresh(cls, budget: float, request_s: float) -> KillBudget:
        """A partition's budget before any of its jobs finished (the module docstring says why)."""
        return cls(budget, math.log(max(request_s, 60.0) / budget))

    def after(self, *, killed: bool, advised: bool, eta: float) -> KillBudget:
        """The budget after one more completed job, or one killed at an advised limit."""
        return KillBudget(
            budget=self.budget,
            log_price=budget_step(self.log_price, killed=killed, budget=self.budget, eta=eta),
            credit=self.credit + self.budget - float(killed),
            completed=self.completed + (not killed),
            killed=self.killed + killed,
            advised_completed=self.advised_completed + (advised and not killed),
        )

    def price(self, *, reserved_risk: float = 0.0, excess_kills: float = 0.0, eta: float) -> float:
        """The price of a kill now, in seconds of freed time.

        reserved_risk: the summed risk of the jobs running under advised limits (they may
        still be killed: the price counts them at once); excess_kills: the user's own kills
        beyond the budget's share of their completed jobs (they pay more for theirs).
        """
        return math.exp(min(700.0, self.log_price + eta * (reserved_risk + excess_kills)))

    @property
    def realised(self) -> float | None:
        """Kills over completed and killed jobs (None before any)."""
        jobs = self.completed + self.killed
        return self.killed / jobs if jobs else None
