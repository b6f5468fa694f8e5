"""Fixtures shared by unit and integration tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.paths import shared_data_dir


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The project's development data (../shared/data). Required in CI; skipped elsewhere when absent."""
    path = shared_data_dir()
    if not path.is_dir():
        if os.environ.get("CI") or os.environ.get("ADVISOR_REQUIRE_SHARED_DATA"):
            pytest.fail(f"shared data not found at {path} (set ADVISOR_SHARED_DATA)")
        pytest.skip(f"shared data not found at {path}")
    return path


@pytest.fixture
def cache_path(tmp_path: Path) -> Path:
    """A fresh cache file path; nothing is created until a Store opens it."""
    return tmp_path / "cache.db"
