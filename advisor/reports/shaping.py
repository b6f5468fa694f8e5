"""Grouping, ``--sort`` and ``--top``: shared by every report so they behave alike.

Sorting follows what an administrator asks for most: numbers largest first (``--sort
unused_core_h --top 10`` is "the ten biggest wasters"), text A to Z; ``--reverse`` flips
either; rows without a value go last.  A table header with a ``_%`` suffix names the same
column as its JSON key (``time_eff_%`` is ``time_eff``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from advisor.errors import UsageError
from advisor.reports.document import Report, ReportName, generated_at

T = TypeVar("T")


@dataclass(frozen=True)
class Shape:
    """How to order and cut the rows of a report."""

    sort: str | None = None
    reverse: bool = False
    top: int | None = None


def parse_by(text: str, allowed: Sequence[str], *, option: str = "--by") -> tuple[str, ...]:
    """A comma-separated list of grouping columns, checked against the allowed ones."""
    keys = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [key for key in keys if key not in allowed]
    if not keys or unknown:
        # quoted when not printable: '\x1e' split the one-line message for str.splitlines()
        shown = ", ".join(k if k.isprintable() else repr(k) for k in unknown) or "nothing"
        raise UsageError(
            f"{option}: cannot group by {shown}", hint=f"choose from: {', '.join(allowed)}"
        )
    return tuple(dict.fromkeys(keys))


def group(
    items: Iterable[T], key: Callable[[T], tuple[str, ...]]
) -> dict[tuple[str, ...], list[T]]:
    """Items by key, keys in sorted order."""
    groups: dict[tuple[str, ...], list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return dict(sorted(groups.items()))


def grouped_rows(
    items: Iterable[T],
    by: Sequence[str],
    job_of: Callable[[T], object],
    figures: Callable[[list[T]], dict[str, Any]],
) -> list[dict[str, Any]]:
    """One row per group of items (grouped on attributes of their job): the keys, then figures."""
    groups = group(items, lambda item: tuple(str(getattr(job_of(item), key)) for key in by))
    return [dict(zip(by, keys, strict=True)) | figures(members) for keys, members in groups.items()]


def grouped_document(
    report: ReportName,
    rows: Sequence[Mapping[str, Any]],
    *,
    by: Sequence[str],
    columns: Sequence[str],
    filters: Mapping[str, Any],
    shape: Shape | None,
    now: datetime,
) -> Report:
    """A grouped report: its head, and its rows sorted and cut (the total is the caller's)."""
    return Report(
        report=report,
        generated_at=generated_at(now),
        filters=dict(filters),
        by=tuple(by),
        groups=len(rows),
        rows=tuple(shape_rows(rows, shape or Shape(), (*by, *columns))),
    )


def _column(name: str, columns: Sequence[str]) -> str:
    key = name.removesuffix("_%")
    if key not in columns:
        raise UsageError(
            f"--sort: no column {name!r} in this report", hint=f"columns: {', '.join(columns)}"
        )
    return key


def _numeric(values: Iterable[Any]) -> bool:
    return all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in values if v is not None
    )


def shape_rows(
    rows: Sequence[Mapping[str, Any]], shape: Shape, columns: Sequence[str]
) -> list[dict[str, Any]]:
    """The rows sorted by shape.sort (see the module docstring) and cut to shape.top."""
    out = [dict(row) for row in rows]
    if shape.sort is not None:
        key = _column(shape.sort, columns)
        present = [row for row in out if row.get(key) is not None]
        missing = [row for row in out if row.get(key) is None]
        numeric = _numeric(row[key] for row in present)
        present.sort(
            key=lambda row: row[key] if numeric else str(row[key]), reverse=numeric != shape.reverse
        )
        out = present + missing
    elif shape.reverse:
        out.reverse()
    if shape.top is not None:
        out = out[: max(0, shape.top)]
    return out
