"""Which integration modules may run at once on the one test cluster, and the locks that say so.

An integration module runs while it holds, for each part of the cluster it touches, a lock:
shared where it only uses that part (submits its own jobs under a random name, reads them back),
exclusive where it changes it for everyone.  The parts:

- ``daemons``: slurmctld, slurmdbd and slurm.conf (stopped, restarted, edited);
- ``export``: /etc/slurm/job_submit.lua and /etc/slurm/advisor-limits.json (written, removed);
- ``nodes``: the nodes' state and capacity (drained, or needed idle to be on time).

A module says what it needs with ``pytestmark = pytest.mark.cluster(uses=(...), owns=(...))``
(and, to be started early, about how long it holds them: ``minutes=``);
a module without the mark owns all three, so it runs alone: a new integration test is safe by
default and runs beside other ones once its mark says it may.  The locks are flock(2) locks on
files in the run's temporary directory (every xdist worker of one run shares them), taken in the order of
ORDER (no deadlock), each with a gate that makes a waiting owner go before later users.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

PARTS = ("daemons", "export", "nodes")
#: The order locks are taken in: "cpu" (tests/conftest.py: unit and fuzz modules share it, a
#: module marked ``quiet`` owns it), then the cluster's parts.
ORDER = ("cpu", *PARTS)


def needs(node: pytest.Item | pytest.Collector) -> dict[str, bool]:
    """Part -> exclusive? for a test module (every part exclusive without a mark)."""
    mark = node.get_closest_marker("cluster")
    if mark is None:
        return dict.fromkeys(PARTS, True)
    uses, owns = tuple(mark.kwargs.get("uses", ())), tuple(mark.kwargs.get("owns", ()))
    unknown = (set(uses) | set(owns)) - set(PARTS)
    if unknown or set(uses) & set(owns):
        raise pytest.UsageError(
            f"{node.nodeid}: cluster(uses={uses}, owns={owns}): parts are {PARTS}"
        )
    return {part: part in owns for part in PARTS if part in uses or part in owns}


def run_order(node: pytest.Item | pytest.Collector) -> tuple[bool, bool, bool, float]:
    """Where an integration module goes in the run: those that own nothing first (they run
    beside each other while the cluster's workers are all free), then the owners of the export,
    of the nodes (which every module but a few uses), of the daemons; among equals the longest
    first (its mark's ``minutes``, off the run's turn table: one started last ends last)."""
    mark = node.get_closest_marker("cluster")
    minutes = float(mark.kwargs.get("minutes", 0)) if mark is not None else 0.0
    owns = needs(node)
    return owns.get("daemons", False), owns.get("nodes", False), owns.get("export", False), -minutes


def lock_dir(factory: pytest.TempPathFactory) -> Path:
    """The run's directory for the lock files, the same for all its xdist workers."""
    base = factory.getbasetemp()  # under xdist: the run's directory / popen-gwN
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def _flock(path: Path, operation: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, operation)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases its lock


@contextmanager
def turn(parts: dict[str, bool], folder: Path) -> Iterator[None]:
    """Hold each part's lock, shared or exclusive, in the order of ORDER."""
    with ExitStack() as held:
        for part in sorted(parts, key=ORDER.index):
            with _flock(folder / f"{part}.gate", fcntl.LOCK_EX):
                mode = fcntl.LOCK_EX if parts[part] else fcntl.LOCK_SH
                held.enter_context(_flock(folder / f"{part}.lock", mode))
        yield


#: The run's turn log, in the lock directory: one JSON line per integration module.
TURN_LOG = "turns.jsonl"


def log_turn(folder: Path, module: str, parts: dict[str, bool], waited: float, held: float) -> None:
    """Append a module's turn: what the next speed-up of the run has to go by."""
    line = {"module": module, "parts": parts, "waited": waited, "held": held}
    with (folder / TURN_LOG).open("a", encoding="utf-8") as log:
        log.write(json.dumps(line) + "\n")  # one short write: workers' lines do not interleave


def turn_table(folder: Path) -> list[str]:
    """The logged turns, longest held first, as lines of text (nothing when none were logged)."""
    path = folder / TURN_LOG
    if not path.exists():
        return []
    turns = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    lines = [f"{'held s':>7} {'waited s':>8}  module (parts it owns)"]
    for t in sorted(turns, key=lambda t: -t["held"]):
        owns = ",".join(part for part, exclusive in t["parts"].items() if exclusive) or "-"
        lines.append(f"{t['held']:7.1f} {t['waited']:8.1f}  {t['module']} ({owns})")
    lines.append(f"{sum(t['held'] for t in turns):7.1f} {'':8}  held in all")
    return lines
