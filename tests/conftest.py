"""Fixtures shared by unit and integration tests, and two rules of a run.

- **Where a test runs** (tests/run.sh runs the suite under pytest-xdist, ``--dist loadscope``):
  a module at a time, on a worker of its kind (tests/helpers/xdist_schedule.py): some workers
  take the integration modules, which mostly wait on Slurm, the others the unit and fuzz
  modules meanwhile.  Integration modules run at once only where their ``cluster`` marks allow
  (tests/helpers/cluster_turns.py): an unmarked one runs alone.  A new test falls into that
  scheme without a line of its own.
- **No skips in CI**: with ``CI`` or ``ADVISOR_TEST_CLUSTER=1`` set (CI, tests/run.sh), a skipped
  test is reported as failed: a skip there means a missing dependency or missing data, and a
  skipped test counted as passing hides it.  ``ADVISOR_ALLOW_SKIPS=1`` turns the rule off.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.helpers.cluster_turns import lock_dir, run_order, turn, turn_table
from tests.helpers.paths import REPO, unpack_pwa_logs

INTEGRATION = REPO / "tests" / "integration"


def skips_fail() -> bool:
    """Whether this run treats a skipped test as a failure (CI and tests/run.sh)."""
    if os.environ.get("ADVISOR_ALLOW_SKIPS") == "1":
        return False
    return bool(os.environ.get("CI")) or os.environ.get("ADVISOR_TEST_CLUSTER") == "1"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The integration modules first (with ``--no-loadscope-reorder`` their workers start at
    once), in the order of tests/helpers/cluster_turns.py's ``run_order``."""
    items.sort(key=lambda item: (INTEGRATION not in item.path.parents, run_order(item)))


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """By module, ADVISOR_CLUSTER_WORKERS workers kept for the cluster's (``--dist loadscope``)."""
    if config.getoption("dist") != "loadscope":
        return None
    from tests.helpers.xdist_schedule import ClusterFirstScheduling

    scheduler = ClusterFirstScheduling(config, log)
    scheduler.cluster_workers = int(os.environ.get("ADVISOR_CLUSTER_WORKERS", "4"))
    return scheduler


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    """The integration modules' turns on the cluster: which ones the run's length hangs on."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller prints the run's table
        return
    factory = getattr(config, "_tmp_path_factory", None)  # pytest's, as its tmp_path fixture uses
    lines = turn_table(lock_dir(factory)) if factory is not None else []
    if lines:
        terminalreporter.write_sep("=", "integration modules' turns on the cluster")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.skipped and not hasattr(report, "wasxfail") and skips_fail():
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} was skipped in a run that allows no skips (CI or "
            f"ADVISOR_TEST_CLUSTER=1): {reason}"
        )
    return report


@pytest.fixture(scope="module", autouse=True)
def cpu_turn(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Unit and fuzz modules share the cores; one marked ``quiet`` (it measures real timings)
    runs while no other does.  Integration modules, which mostly wait on Slurm, take no part."""
    if INTEGRATION in request.path.parents:
        yield
        return
    quiet = request.node.get_closest_marker("quiet") is not None
    with turn({"cpu": quiet}, lock_dir(tmp_path_factory)):
        yield


@pytest.fixture(scope="session")
def pwa_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two whole Parallel Workloads Archive logs of tests/data/traces/pwa, unpacked once."""
    return unpack_pwa_logs(tmp_path_factory.mktemp("pwa"))


@pytest.fixture
def cache_path(tmp_path: Path) -> Path:
    """A fresh cache file path; nothing is created until a Store opens it."""
    return tmp_path / "cache.db"
