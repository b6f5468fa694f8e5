"""Where the repository, its test data and the shared development data are."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TEST_DATA = REPO / "tests" / "data"


def shared_data_dir() -> Path:
    """The project's development data (../shared/data), or ADVISOR_SHARED_DATA."""
    return Path(os.environ.get("ADVISOR_SHARED_DATA", REPO.parent / "shared" / "data"))


LOGS = {
    "kth": "traces/KTH-SP2-1996-2.1-cln.swf",
    "curie": "traces/CEA-Curie-2011-sample30k.swf",
}
