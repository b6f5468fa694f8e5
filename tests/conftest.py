"""Fixtures shared by unit and integration tests, and two rules of a run.

- **Where a test runs** (tests/run.sh runs the suite under pytest-xdist, ``--dist loadgroup``):
  every test under tests/integration joins the xdist group ``cluster`` unless it names another
  group, so the tests that share the one real test cluster run one after another on one worker,
  while the unit and fuzz tests, a module at a time, spread over the other workers as the
  integration tests wait on Slurm.  A new test falls into that scheme without a line of its own.
- **No skips in CI**: with ``CI`` or ``ADVISOR_TEST_CLUSTER=1`` set (CI, tests/run.sh), a skipped
  test is reported as failed: a skip there means a missing dependency or missing data, and a
  skipped test counted as passing hides it.  ``ADVISOR_ALLOW_SKIPS=1`` turns the rule off.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest

from tests.helpers.paths import REPO, unpack_pwa_logs

#: The xdist group of the tests that use the real test cluster (one worker, one at a time).
CLUSTER_GROUP = "cluster"
INTEGRATION = REPO / "tests" / "integration"


def skips_fail() -> bool:
    """Whether this run treats a skipped test as a failure (CI and tests/run.sh)."""
    if os.environ.get("ADVISOR_ALLOW_SKIPS") == "1":
        return False
    return bool(os.environ.get("CI")) or os.environ.get("ADVISOR_TEST_CLUSTER") == "1"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test's xdist group, and the cluster's tests first.

    Integration tests join the cluster's group unless they name their own; every other test
    is grouped with its module, so a module's fixtures are built on one worker only.  The
    integration tests go first so that their worker starts on them at once (tests/run.sh passes
    ``--no-loadscope-reorder``, which keeps this order).
    """
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        if INTEGRATION in item.path.parents:
            item.add_marker(pytest.mark.xdist_group(CLUSTER_GROUP))
        else:
            item.add_marker(pytest.mark.xdist_group(item.path.relative_to(REPO).as_posix()))
    items.sort(key=lambda item: INTEGRATION not in item.path.parents)


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


@pytest.fixture(scope="session")
def pwa_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two whole Parallel Workloads Archive logs of tests/data/traces/pwa, unpacked once."""
    return unpack_pwa_logs(tmp_path_factory.mktemp("pwa"))


@pytest.fixture
def cache_path(tmp_path: Path) -> Path:
    """A fresh cache file path; nothing is created until a Store opens it."""
    return tmp_path / "cache.db"
