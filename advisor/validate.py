"""JSON Schema validation of everything we read; one-line errors naming file, JSON path, problem."""

from __future__ import annotations

import json
import math
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.errors import InputError

if TYPE_CHECKING:  # jsonschema costs ~80 ms to import: only validation pays for it
    import jsonschema
    from referencing import Registry


@cache
def schema(name: str) -> dict[str, Any]:
    """A bundled schema by file stem (``cluster`` -> ``schemas/cluster.json``)."""
    text = resources.files("advisor.schemas").joinpath(f"{name}.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def registry() -> Registry:
    """Every bundled schema under its $id, so schemas can refer to each other."""
    from referencing import Registry, Resource

    resources_ = []
    for entry in resources.files("advisor.schemas").iterdir():
        if entry.name.endswith(".json"):
            contents = json.loads(entry.read_text(encoding="utf-8"))
            if "$id" in contents:
                resources_.append((contents["$id"], Resource.from_contents(contents)))
    return Registry().with_resources(resources_)


def _path(error: jsonschema.ValidationError) -> str:
    path = "$"
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def validate(data: Any, schema_name: str, *, source: str) -> None:
    """Raise InputError for the first (deepest, most relevant) violation."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    validator = Draft202012Validator(schema(schema_name), registry=registry())
    best = best_match(validator.iter_errors(data))
    if best is not None:
        message = best.message if len(best.message) <= 200 else best.message[:197] + "..."
        raise InputError(f"{_path(best)}: {message}", source=source)


def load_json(path: str | Path, schema_name: str | None = None) -> Any:
    """Read a JSON file, with one-line errors for unreadable or malformed files."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read: {error}", source=str(path)) from None
    try:
        data = json.loads(
            text, parse_constant=_reject_constant, parse_float=_finite, parse_int=_int64
        )
        if _SURROGATE_ESCAPE.search(text):
            json.dumps(data, ensure_ascii=False).encode("utf-8")  # fails on a lone surrogate
    except UnicodeEncodeError:
        raise InputError("a string holds a lone \\ud800-\\udfff escape", source=str(path)) from None
    except json.JSONDecodeError as error:
        raise InputError(
            f"line {error.lineno} column {error.colno}: {error.msg}", source=str(path)
        ) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", source=str(path)) from None
    except InputError as error:
        raise InputError(error.message, source=str(path)) from None
    if schema_name:
        validate(data, schema_name, source=str(path))
    return data


def _reject_constant(name: str) -> Any:
    raise InputError(f"{name} is not valid JSON")


#: A \uD800-\uDFFF escape: half of a pair, or alone (then no UTF-8 text can hold the string).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


# Numbers no input of ours holds are refused: they would overflow a float (1e400 is inf),
# SQLite's INTEGER (2**63), or Python's 4300-digit limit on int().
def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InputError(f"number {text[:40]} is out of range")
    return value


def _int64(text: str) -> int:
    if len(text) > 20 or not -(2**63) <= int(text) < 2**63:
        raise InputError(f"number {text[:40]} is out of range (more than 64 bits)")
    return int(text)
