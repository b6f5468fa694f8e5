"""Opening the logs the advisor reads: UTF-8 text, one-line errors naming the file."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from advisor.errors import InputError


def open_text(path: str | Path) -> TextIO:
    """The file opened for reading as strict UTF-8 (newlines kept as they are)."""
    try:
        return Path(path).open(encoding="utf-8", errors="strict", newline="")
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", source=str(path)) from None
