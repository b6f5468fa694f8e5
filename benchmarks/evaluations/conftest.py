"""Evaluations on the development data of ../shared/data, read by path.

Their data may not be copied into tests/data (the WfCommons instances and the BLAST benchmark
state no licence that allows it; the Lotaru figures are benchmarks/model_choices.py's), so they
are not part of the test suite a fresh clone runs (tests/run.sh); they are run by hand, and
fail, never skip, without the data:

    .venv/bin/pytest -p no:cacheprovider benchmarks/evaluations -m 'not slow'

``test_submit_on_time.py`` (slow, about 15 minutes) also needs the test cluster: run it under
the cluster lock with ``bash slurm/cluster.sh up`` and ``ADVISOR_TEST_CLUSTER=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.cluster_fixtures import live_cache, slurm_cluster  # noqa: F401 (fixtures)
from tests.helpers.paths import REPO


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The project's development data (../shared/data, or ADVISOR_SHARED_DATA)."""
    path = Path(os.environ.get("ADVISOR_SHARED_DATA", REPO.parent / "shared" / "data"))
    if not path.is_dir():
        pytest.fail(f"shared data not found at {path} (set ADVISOR_SHARED_DATA)")
    return path
