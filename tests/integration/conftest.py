"""The real test cluster: required when ADVISOR_TEST_CLUSTER=1 (tests/run.sh sets it)."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.cluster import PLUGIN, remove_export
from tests.helpers.paths import REPO


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration/" in str(item.path).replace(os.sep, "/"):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def slurm_cluster() -> None:
    """Fails (not skips) when the cluster was asked for but does not answer."""
    if os.environ.get("ADVISOR_TEST_CLUSTER") != "1":
        pytest.skip("the real test cluster is not running (use tests/run.sh)")
    if shutil.which("scontrol") is None:
        pytest.fail("ADVISOR_TEST_CLUSTER=1 but scontrol is not installed")
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, check=False)
    if "UP" not in ping.stdout:
        pytest.fail(
            f"ADVISOR_TEST_CLUSTER=1 but slurmctld does not answer: {ping.stdout}{ping.stderr}"
        )


@pytest.fixture(scope="module")
def live_cache(slurm_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache of the live cluster's snapshot, nodes grouped into classes by their hardware."""
    from advisor.profiling.classes import refresh_node_classes
    from advisor.services.cluster import fetch_cluster
    from advisor.slurm.backend import CliBackend
    from advisor.store.cluster import save_cluster
    from advisor.store.connection import Store

    path = tmp_path_factory.mktemp("live") / "cache.db"
    partitions, nodes = fetch_cluster(CliBackend())
    with Store.open(path) as store:
        save_cluster(store, partitions, nodes)
        refresh_node_classes(store)
    return path


@pytest.fixture
def plugin_and_export() -> Iterator[None]:
    """The repository's job_submit.lua installed, and no limits file left behind."""
    if not filecmp.cmp(REPO / "slurm" / "job_submit.lua", PLUGIN, shallow=False):
        shutil.copy(REPO / "slurm" / "job_submit.lua", PLUGIN)
        time.sleep(1.1)  # slurmctld compares mtimes in whole seconds
    yield
    remove_export()
