"""The real test cluster: required when ADVISOR_TEST_CLUSTER=1 (tests/run.sh sets it)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.conftest import REPO

CLUSTER_SH = REPO / "slurm" / "cluster.sh"


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
        pytest.fail(f"ADVISOR_TEST_CLUSTER=1 but slurmctld does not answer: {ping.stdout}{ping.stderr}")


def cluster_sh(*args: str) -> None:
    """Run slurm/cluster.sh (stopping and starting daemons for fault tests)."""
    subprocess.run(["bash", str(CLUSTER_SH), *args], check=True, capture_output=True, timeout=180)
