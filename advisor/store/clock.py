"""Timestamps as the cache stores them: ISO 8601, UTC, seconds.

``time`` rather than ``datetime``: every store module imports this, the sbatch wrapper included.
"""

from __future__ import annotations

import time


def utc_now() -> str:
    """Now, as stored in *_at columns (``datetime.now(UTC).isoformat()`` to the second)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
