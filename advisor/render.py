"""Turning command results into text: tables (tabulate), JSON, CSV or sacct's parsable lines.

Pure: returns strings.  Cells hold what users wrote (job names, tags, comments): in tables, CSV
and parsable lines every character that is not printable is escaped (advisor.text.printable), so
a name cannot move the cursor, clear the screen, set the title or write the clipboard of whoever
reads the report; and a CSV cell that a spreadsheet would run as a formula (``=``, ``+``, ``-``,
``@``) starts with ``'``.  JSON escapes control characters itself.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from advisor.errors import UsageError
from advisor.text import printable

#: Formats rendered without tabulate; every tabulate format is accepted too.
BUILTIN_FORMATS: tuple[str, ...] = ("table", "json", "csv", "parsable")
#: --format parsable: sacct --parsable2's field separator.
PARSABLE_SEPARATOR = "|"


def formats() -> tuple[str, ...]:
    """Every accepted --format (tabulate is imported only when asked: it costs ~80 ms)."""
    from tabulate import tabulate_formats

    return (*BUILTIN_FORMATS, *sorted(tabulate_formats))


def check_format(fmt: str) -> None:
    """Refuse an unknown --format before any work is done."""
    if fmt not in BUILTIN_FORMATS and fmt not in formats():
        raise UsageError(f"unknown --format {fmt!r}", hint=f"choose one of: {', '.join(formats())}")


@dataclass(frozen=True)
class Table:
    """Rows to show under an optional title; columns fix order and which keys are shown."""

    rows: Sequence[Mapping[str, Any]]
    columns: Sequence[str] = ()
    title: str | None = None

    def header(self) -> list[str]:
        """The columns, or the keys of the rows in first-seen order."""
        if self.columns:
            return list(self.columns)
        return list(dict.fromkeys(key for row in self.rows for key in row))


@dataclass(frozen=True)
class Result:
    """What a command returns: JSON-able data, and tables for the human formats."""

    data: Any
    tables: Sequence[Table] = field(default_factory=tuple)
    notes: Sequence[str] = field(default_factory=tuple)
    #: The command's exit code once it is shown (advisor doctor: 1 when a check failed).
    exit_code: int = 0


#: What a spreadsheet runs as a formula when a cell starts with it (OWASP, "CSV injection").
_FORMULA = ("=", "+", "-", "@")
_NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?")


def _plain(value: Any) -> Any:
    """The value as a cell shows it, before escaping."""
    if isinstance(value, float) and math.isfinite(value):
        return round(value, 3)
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    if value is None:
        return ""
    return value


def _cell(value: Any) -> Any:
    cell = _plain(value)
    return printable(cell) if isinstance(cell, str) else cell


def _csv_cell(value: Any) -> Any:
    cell = _cell(value)
    if isinstance(cell, str) and cell.startswith(_FORMULA) and not _NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def _note(text: str) -> str:
    return printable(text, keep="\n\t")


def _json_default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _parsable_field(value: Any) -> str:
    r"""One field of a parsable line: ``\`` as ``\\``, ``|`` as ``\|``, line breaks as ``\n``.

    sacct prints a '|' inside a field as it is, and a reader then splits one field in two (and a
    line break in a job name, one row in two); here a row is one line, and its fields split at
    every '|' that no backslash precedes.
    """
    text = str(_plain(value))  # escaped once, below
    if text.isprintable() and PARSABLE_SEPARATOR not in text and "\\" not in text:
        return text
    text = text.replace("\\", "\\\\").replace(PARSABLE_SEPARATOR, "\\" + PARSABLE_SEPARATOR)
    return printable(text)


def _parsable(result: Result) -> str:
    """Every table as a header line and one line per row, fields split by '|'; no notes."""
    blocks = []
    for table in result.tables:
        header = table.header()
        lines = [PARSABLE_SEPARATOR.join(header)]
        lines += [
            PARSABLE_SEPARATOR.join(_parsable_field(row.get(column)) for column in header)
            for row in table.rows
        ]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def render(result: Result, fmt: str = "table") -> str:
    """Text for the chosen format (json ignores the tables; csv and parsable ignore the notes)."""
    if fmt == "json":
        return json.dumps(result.data, indent=2, default=_json_default, allow_nan=False)
    if fmt == "parsable":
        return _parsable(result)
    if fmt == "csv":
        out = io.StringIO()
        for index, table in enumerate(result.tables):
            if index:
                out.write("\n")
            writer = csv.writer(out, lineterminator="\n")
            header = table.header()
            writer.writerow([_csv_cell(column) for column in header])
            for row in table.rows:
                writer.writerow([_csv_cell(row.get(column)) for column in header])
        return out.getvalue().rstrip("\n")
    from tabulate import tabulate

    check_format(fmt)
    style = "simple" if fmt == "table" else fmt
    parts = []
    for table in result.tables:
        header = table.header()
        body = tabulate(
            [[_cell(row.get(column)) for column in header] for row in table.rows],
            headers=[printable(column) for column in header],
            tablefmt=style,
            disable_numparse=False,
        )
        parts.append(f"{_note(table.title)}\n{body}" if table.title else body)
    parts.extend(_note(note) for note in result.notes)
    return "\n\n".join(parts)
