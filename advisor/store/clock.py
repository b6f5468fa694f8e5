"""Timestamps as the cache stores them: ISO 8601, UTC, seconds."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    """Now, as stored in *_at columns."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()
