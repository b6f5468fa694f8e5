"""Both JSON Schema engines on one document: jsonschema's verdict, and broken copies to ask about."""

from __future__ import annotations

import copy
from typing import Any

from jsonschema import Draft7Validator, Draft202012Validator

from advisor.validate import registry


def python_says_valid(contents: dict[str, Any], data: Any, draft: str = "2020-12") -> bool:
    kind = Draft7Validator if draft == "7" else Draft202012Validator
    return kind(contents, registry=registry()).is_valid(data)


def broken_copies(doc: Any, limit: int = 60) -> list[Any]:
    """Up to ``limit`` copies of the document, each with one value replaced by another type."""
    spots: list[tuple[list[Any], Any, Any]] = []

    def walk(node: Any, path: list[Any]) -> None:
        items = (
            list(node.items())
            if isinstance(node, dict)
            else list(enumerate(node))
            if isinstance(node, list)
            else []
        )
        for key, value in items:
            for replacement in ("x", -1, None, [], {}):
                if len(spots) >= limit:
                    return
                if type(replacement) is not type(value):
                    spots.append((path, key, replacement))
            walk(value, [*path, key])

    walk(doc, [])
    found = []
    for path, key, replacement in spots:
        broken = copy.deepcopy(doc)
        target = broken
        for part in path:
            target = target[part]
        target[key] = replacement
        found.append(broken)
    return found
