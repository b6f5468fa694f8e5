"""The schedulers, by name.  Each is a module with ``NAME``, ``CITATION`` and ``schedule``.

The shared contract: ``schedule(problem) -> Plan``, a pure function of the problem; the
``Plan`` checks itself, and tests/unit/planner/test_contract.py runs every entry here over
chains, forks, diamonds, single tasks, empty workflows and random DAGs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from advisor.errors import UsageError
from advisor.planner.scheduling import fdws, heft, peft
from advisor.planner.scheduling.plan import Plan
from advisor.planner.scheduling.problem import Problem


@dataclass(frozen=True)
class Scheduler:
    """A registered scheduling algorithm."""

    name: str
    citation: str
    schedule: Callable[[Problem], Plan]


SCHEDULERS: Mapping[str, Scheduler] = MappingProxyType(
    {
        module.NAME: Scheduler(module.NAME, module.CITATION, module.schedule)
        for module in (heft, peft, fdws)
    }
)


def get(name: str) -> Scheduler:
    """The scheduler called ``name``."""
    try:
        return SCHEDULERS[name]
    except KeyError:
        raise UsageError(
            f"unknown algorithm {name!r}", hint="choose from " + ", ".join(SCHEDULERS)
        ) from None
