"""The test cluster's fixtures, for tests/integration and benchmarks/evaluations (their conftests import them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cluster import live_cache_at, require_cluster


@pytest.fixture(scope="session")
def slurm_cluster() -> None:
    """Fails (not skips) when the cluster was asked for but does not answer."""
    require_cluster()


@pytest.fixture(scope="module")
def live_cache(slurm_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache of the live cluster's snapshot, nodes grouped into classes by their hardware."""
    return live_cache_at(tmp_path_factory.mktemp("live") / "cache.db")
