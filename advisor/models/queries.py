"""Bulk prediction queries: a CSV with columns task, node, input_bytes (optionally cores)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from advisor.errors import InputError
from advisor.imports.csv_table import read_table

REQUIRED_COLUMNS = ("task", "node", "input_bytes")


@dataclass(frozen=True)
class Query:
    """One row to predict; line is where it stands in the file."""

    task: str
    node: str
    input_bytes: int
    cores: int | None
    line: int


def _count(text: str | None, field: str, where: str) -> int:
    try:
        value = float((text or "").strip())
    except ValueError:
        raise InputError(f"{field} {text!r} is not a number", source=where) from None
    if not 0 <= value < 2**63 or value != int(value):  # NaN and inf fail the range
        raise InputError(f"{field} {text!r} is not a non-negative whole number", source=where)
    return int(value)


def read_queries(path: str | Path) -> list[Query]:
    """The queries of a file; a bad row rejects the file with its line number."""
    where = str(path)
    rows = read_table(path, REQUIRED_COLUMNS)
    queries = []
    for line, row in enumerate(rows, start=2):
        at = f"{where}:{line}"
        task, node = row["task"].strip(), row["node"].strip()
        if not task or not node:
            raise InputError("task and node must not be empty", source=at)
        cores = row.get("cores")
        queries.append(
            Query(
                task,
                node,
                _count(row["input_bytes"], "input_bytes", at),
                _count(cores, "cores", at) if cores not in (None, "") else None,
                line,
            )
        )
    return queries
