"""Reading per-step stage durations of an in situ run (CSV or JSON), strictly.

CSV (the paper's two components): a header ``step,S,W,R,A`` and optionally ``IS,IA`` (measured
idle of the simulation and of the analysis), one row per step, seconds; lines starting with ``#``
are comments (provenance).  JSON (``schemas/insitu-steps.json``) can also describe a pipeline of
more components and the buffer sizes.  Every problem is one InputError naming the file and the
line and field (CSV) or JSON path, so users can fix their file.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from advisor.errors import InputError
from advisor.insitu.model import Component, Pipeline, paper_pipeline
from advisor.validate import load_json

CSV_STAGES = ("S", "W", "R", "A")
CSV_IDLE = ("IS", "IA")


@dataclass(frozen=True)
class StepTable:
    """Durations in seconds, one row per consecutive step; ``columns`` names the row entries."""

    source: str
    pipeline: Pipeline
    first_step: int
    columns: tuple[str, ...]
    rows: tuple[tuple[float, ...], ...]

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, name: str) -> NDArray[np.float64]:
        """One column as an array."""
        index = self.columns.index(name)
        return np.array([row[index] for row in self.rows], dtype=float)

    def stage_times(self) -> NDArray[np.float64]:
        """Steps x stages (in ``pipeline.stages`` order): what warm-up detection looks at."""
        return np.column_stack([self.column(stage) for stage in self.pipeline.stages])

    def step_dicts(self) -> list[dict[str, float]]:
        """Each step as ``{column: seconds}``."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def head(self, count: int) -> StepTable:
        """Only the first ``count`` steps, as if monitoring had stopped there."""
        if count < 1:
            raise ValueError(f"need at least one step, got {count}")
        return replace(self, rows=self.rows[:count])


def read_steps(path: str | Path, *, buffer_frames: int | None = None) -> StepTable:
    """A step file: JSON when it ends in ``.json`` or starts with ``{``, else CSV.

    ``buffer_frames`` sets k for CSV files (default 1) and overrides the JSON file's value.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read: {error}", source=str(path)) from None
    if str(path).endswith(".json") or text.lstrip().startswith("{"):
        return _read_json(path, buffer_frames)
    return _read_csv(text, str(path), buffer_frames or 1)


def _number(text: str, *, line: int, field: str, source: str) -> float:
    where = f"line {line}, field {field!r}"
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{where}: not a number {text.strip()!r}", source=source) from None
    if not math.isfinite(value):
        raise InputError(f"{where}: not a finite number {text.strip()!r}", source=source)
    if value < 0:
        raise InputError(f"{where}: negative time {value:g} s", source=source)
    return value


def _step_number(text: str, expected: int | None, *, where: str, source: str) -> int:
    try:
        step = int(text)
    except ValueError:
        raise InputError(
            f"{where}: step is not an integer {text.strip()!r}", source=source
        ) from None
    if expected is None and step < 0:
        raise InputError(f"{where}: negative step {step}", source=source)
    if expected is not None and step != expected:
        raise InputError(
            f"{where}: expected step {expected}, got {step} (steps must be consecutive)",
            source=source,
        )
    return step


def _header(fields: list[str], *, line: int, source: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in fields)
    expected = f"expected step,{','.join(CSV_STAGES)}[,{','.join(CSV_IDLE)}]"
    for name in names:
        if name not in ("step", *CSV_STAGES, *CSV_IDLE):
            raise InputError(f"line {line}: unknown column {name!r}; {expected}", source=source)
        if names.count(name) > 1:
            raise InputError(f"line {line}: column {name!r} appears twice", source=source)
    for name in ("step", *CSV_STAGES):
        if name not in names:
            raise InputError(f"line {line}: missing column {name!r}; {expected}", source=source)
    return names


def _read_csv(text: str, source: str, buffer_frames: int) -> StepTable:
    numbered = [
        (number, line)
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not numbered:
        raise InputError("empty step file: no header and no steps", source=source)
    header_line, header_text = numbered[0]
    names = _header(next(csv.reader([header_text])), line=header_line, source=source)
    idle = tuple(name for name in CSV_IDLE if name in names)
    pipeline = _with_idle(paper_pipeline(buffer_frames), idle)
    columns = (*pipeline.stages, *idle)
    rows: list[tuple[float, ...]] = []
    first = expected = None
    for number, line in numbered[1:]:
        fields = next(csv.reader([line]), [])
        if len(fields) != len(names):
            raise InputError(
                f"line {number}: expected {len(names)} fields ({','.join(names)}), got {len(fields)}",
                source=source,
            )
        record = dict(zip(names, fields, strict=True))
        where = f"line {number}, field 'step'"
        step = _step_number(record["step"], expected, where=where, source=source)
        first = step if first is None else first
        expected = step + 1
        rows.append(tuple(_number(record[c], line=number, field=c, source=source) for c in columns))
    if first is None:
        raise InputError(f"line {header_line}: a header but no steps", source=source)
    return StepTable(
        source=source, pipeline=pipeline, first_step=first, columns=columns, rows=tuple(rows)
    )


def _with_idle(pipeline: Pipeline, present: tuple[str, ...]) -> Pipeline:
    """The pipeline with idle columns kept only where the file has them."""
    components = tuple(
        replace(c, idle=c.idle if c.idle in present else None) for c in pipeline.components
    )
    return replace(pipeline, components=components)


def _json_pipeline(doc: dict[str, Any], buffer_frames: int | None, source: str) -> Pipeline:
    if "components" in doc:
        components = tuple(
            Component(c["name"], tuple(c["stages"]), c.get("idle")) for c in doc["components"]
        )
    else:
        components = paper_pipeline().components
    links = len(components) - 1
    given = doc.get("buffer_frames", 1) if buffer_frames is None else buffer_frames
    frames = tuple(given) if isinstance(given, list) else (given,) * links
    if len(frames) != links:
        raise InputError(
            f"$.buffer_frames: {len(components)} components need {links} buffer sizes, "
            f"got {len(frames)}",
            source=source,
        )
    try:
        return Pipeline(components, frames)
    except ValueError as error:
        raise InputError(f"$.components: {error}", source=source) from None


def _read_json(path: str | Path, buffer_frames: int | None) -> StepTable:
    source = str(path)
    doc = load_json(path, "insitu-steps")
    pipeline = _json_pipeline(doc, buffer_frames, source)
    steps = doc["steps"]
    idle_names = {c.idle for c in pipeline.components if c.idle}
    present = tuple(sorted(idle_names & set(steps[0])))
    pipeline = _with_idle(pipeline, present)
    columns = (*pipeline.stages, *present)
    allowed = {"step", *columns}
    rows: list[tuple[float, ...]] = []
    expected = None
    for index, step in enumerate(steps):
        where = f"$.steps[{index}]"
        for name in columns:
            if name not in step:
                raise InputError(f"{where}: missing field {name!r}", source=source)
        for name in step:
            if name not in allowed:
                raise InputError(
                    f"{where}: unknown field {name!r} (stages: {', '.join(columns)})", source=source
                )
        number = _step_number(str(step["step"]), expected, where=f"{where}.step", source=source)
        expected = number + 1
        rows.append(tuple(float(step[name]) for name in columns))
    return StepTable(
        source=source,
        pipeline=pipeline,
        first_step=int(steps[0]["step"]),
        columns=columns,
        rows=tuple(rows),
    )
