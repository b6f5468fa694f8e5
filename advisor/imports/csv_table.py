"""Reading a delimited text file whole, with one-line errors naming the file and line."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from advisor.errors import InputError


def read_table(
    path: str | Path, required: Sequence[str], *, delimiter: str = ","
) -> list[dict[str, str]]:
    """Rows as dicts; a missing column (line 1) or a short/long row (its line) is an InputError."""
    where = str(path)
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle, delimiter=delimiter)
            missing = [c for c in required if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(f"missing column {', '.join(missing)}", source=f"{where}:1")
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise InputError(f"cannot read: {error}", source=where) from None
    for line, row in enumerate(rows, start=2):
        if None in row or any(value is None for value in row.values()):
            raise InputError("wrong number of fields", source=f"{where}:{line}")
    return rows
