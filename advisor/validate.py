"""JSON Schema validation of everything we read; one-line errors naming file, JSON path, problem.

One JSON Schema per format (``schemas/``), checked in two steps so large inputs stay fast:

1. When ``jsonschema-rs`` (a maintained Rust implementation, a dependency) is importable, it
   decides whether the document is valid: 100-200 times faster than ``jsonschema`` on a
   100,000-task workflow.  Formats are not asserted, as ``jsonschema`` does not by default.  It
   refuses some Python values (numpy scalars) and rejects some that ``jsonschema`` accepts
   (``inf``, a string ending in a newline against ``$``): then step 2 decides.  It reads a tuple
   as an array, as the JSON written from it would be.
2. Otherwise ``jsonschema`` finds the error to report (``best_match``, the message's form as
   ever).  Long arrays whose items are plain numbers (or arrays of them: a runtime matrix) are
   checked in one pass instead of one schema descent per number, and only the first bad entry
   is descended into, so the error names its JSON path (``$.cases.x.computation_cost[3][7]``).
"""

from __future__ import annotations

import gc
import json
import math
import numbers
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


def json_path(error: jsonschema.ValidationError) -> str:
    """``$.a.b[3]``: where in the document the error is."""
    path = "$"
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def error_message(error: jsonschema.ValidationError) -> str:
    """The one-line form of an error: JSON path and message (cut at 200 characters)."""
    message = error.message if len(error.message) <= 200 else error.message[:197] + "..."
    return f"{json_path(error)}: {message}"


#: Arrays shorter than this are left to jsonschema's own descent (the pass costs more).
BULK_MIN_ITEMS = 64
_NUMERIC_KEYWORDS = frozenset(
    {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
)
_NUMERIC_TYPES = frozenset({"number", "integer", "null"})
_ROW_KEYWORDS = frozenset({"type", "items", "minItems", "maxItems"})


def _numeric_leaf(subschema: Any) -> Callable[[Any], bool] | None:
    """A predicate equal to jsonschema's verdict for a schema of plain numbers, else None."""
    if not isinstance(subschema, dict) or not subschema or set(subschema) - _NUMERIC_KEYWORDS:
        return None
    kinds = subschema.get("type", ["number", "integer", "null"])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if not isinstance(kinds, list) or not kinds or set(kinds) - _NUMERIC_TYPES:
        return None
    bounds = []
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        value = subschema.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int | float):
                return None
            bounds.append((key, value))
    allow_null, allow_number = "null" in kinds, "number" in kinds
    allow_integer = "integer" in kinds

    def in_bounds(value: float) -> bool:
        for key, bound in bounds:  # as jsonschema: comparisons, False for NaN
            if (
                (key == "minimum" and value < bound)
                or (key == "maximum" and value > bound)
                or (key == "exclusiveMinimum" and value <= bound)
                or (key == "exclusiveMaximum" and value >= bound)
            ):
                return False
        return True

    def ok(value: Any) -> bool:
        kind = type(value)
        if kind is float or kind is int:
            if allow_number or ((kind is int or value.is_integer()) and allow_integer):
                return in_bounds(value)
            return False
        if value is None:
            return allow_null
        if isinstance(value, bool) or not isinstance(value, numbers.Number):
            return False
        return ok(float(value)) if isinstance(value, numbers.Real) else allow_number

    return ok


def _numeric_rows(subschema: Any) -> Callable[[Any], bool] | None:
    """A predicate for a schema of arrays of plain numbers (a matrix's rows), else None."""
    if (
        not isinstance(subschema, dict)
        or subschema.get("type") != "array"
        or set(subschema) - _ROW_KEYWORDS
    ):
        return None
    leaf = _numeric_leaf(subschema.get("items"))
    if leaf is None:
        return None
    low, high = subschema.get("minItems", 0), subschema.get("maxItems")

    def ok(row: Any) -> bool:
        return (
            type(row) is list
            and len(row) >= low
            and (high is None or len(row) <= high)
            and all(map(leaf, row))
        )

    return ok


def _bulk_items(
    validator: Any, items: Any, instance: Any, schema_: dict[str, Any]
) -> Iterator[jsonschema.ValidationError]:
    """``items``, with arrays of plain numbers (or rows of them) checked in one pass."""
    from jsonschema._keywords import items as items_keyword

    default: Callable[..., Iterator[jsonschema.ValidationError]] = items_keyword  # type: ignore[assignment]
    check = _numeric_leaf(items) or _numeric_rows(items)
    if check is None or type(instance) is not list or len(instance) < BULK_MIN_ITEMS:
        yield from default(validator, items, instance, schema_)
        return
    prefix = len(schema_.get("prefixItems", ()))
    for index in range(prefix, len(instance)):
        if not check(instance[index]):
            errors = list(validator.descend(instance[index], items, path=index))
            if errors:  # the first bad entry only: its error names where it is
                yield from errors
                return


@cache
def _python_validator(kind: str) -> Any:
    """Jsonschema's validator class of a draft, with the bulk ``items``."""
    from jsonschema import Draft7Validator, Draft202012Validator, validators

    base = Draft7Validator if kind == "7" else Draft202012Validator
    return validators.extend(base, {"items": _bulk_items})  # type: ignore[no-untyped-call]


class SchemaCheck:
    """One schema, decided fast (jsonschema-rs when installed) and explained by jsonschema."""

    def __init__(self, contents: dict[str, Any], draft: str = "2020-12") -> None:
        self.contents = contents
        self.draft = draft
        self._fast: Any = None
        self._fast_tried = False

    def _fast_validator(self) -> Any:
        if not self._fast_tried:
            self._fast_tried = True
            try:
                import jsonschema_rs
            except ImportError:  # pragma: no cover - a platform without its wheels
                return None
            kind = (
                jsonschema_rs.Draft7Validator
                if self.draft == "7"
                else jsonschema_rs.Draft202012Validator
            )
            try:
                self._fast = kind(self.contents, validate_formats=False)
            except Exception:
                self._fast = None
        return self._fast

    def is_valid_fast(self, data: Any) -> bool:
        """True when jsonschema-rs says valid; False when it says not, or cannot tell."""
        fast = self._fast_validator()
        if fast is None:
            return False
        try:
            return bool(fast.is_valid(data))
        except (ValueError, TypeError, OverflowError):  # values it does not take
            return False

    def first_error(self, data: Any) -> jsonschema.ValidationError | None:
        """The error to report (jsonschema's ``best_match``), None when the data is valid."""
        if self.is_valid_fast(data):
            return None
        from jsonschema.exceptions import best_match

        validator = _python_validator(self.draft)(self.contents, registry=registry())
        found: jsonschema.ValidationError | None = best_match(validator.iter_errors(data))
        return found


@cache
def _check(schema_name: str) -> SchemaCheck:
    return SchemaCheck(schema(schema_name))


def validate(data: Any, schema_name: str, *, source: str) -> None:
    """Raise InputError for the first (deepest, most relevant) violation."""
    best = _check(schema_name).first_error(data)
    if best is not None:
        raise InputError(error_message(best), source=source)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building a large acyclic structure.

    Parsing a 100,000-task workflow makes millions of objects; each collection walks them all,
    half of the load's time.  JSON has no cycles, so reference counting frees everything.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def load_json(path: str | Path, schema_name: str | None = None) -> Any:
    """Read a JSON file, with one-line errors for unreadable or malformed files."""
    with paused_gc():
        return _load_json(path, schema_name)


def _load_json(path: str | Path, schema_name: str | None) -> Any:
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
