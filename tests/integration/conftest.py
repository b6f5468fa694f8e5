"""The real test cluster: required when ADVISOR_TEST_CLUSTER=1 (tests/run.sh sets it)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from tests.helpers.cluster import EXPORT, install_plugin, remove_export
from tests.helpers.cluster_fixtures import live_cache, slurm_cluster  # noqa: F401 (fixtures)
from tests.helpers.cluster_turns import lock_dir, log_turn, needs, turn
from tests.helpers.guard_jobs import guard_cache, guard_task, guards  # noqa: F401 (fixtures)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration/" in str(item.path).replace(os.sep, "/"):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="module", autouse=True)
def cluster_turn(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """The module's turn on the cluster (tests/helpers/cluster_turns.py), held while it runs;
    how long it waited and held it goes to the run's turn log (printed at the end)."""
    parts, folder = needs(request.node), lock_dir(tmp_path_factory)
    asked = time.monotonic()
    with turn(parts, folder):
        began = time.monotonic()
        try:
            yield
        finally:
            log_turn(folder, request.node.nodeid, parts, began - asked, time.monotonic() - began)


@pytest.fixture
def plugin_and_export() -> Iterator[None]:
    """The repository's job_submit.lua installed, and no limits file left behind."""
    install_plugin()
    yield
    remove_export()
    EXPORT.with_name("advisor-limits.guard.json").unlink(missing_ok=True)  # the guard's heartbeat
