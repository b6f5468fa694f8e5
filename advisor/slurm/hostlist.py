"""Slurm host lists (``c[1-3,7]``, ``rack[1-2]-n[01-02]``, ``c1,f1``) expanded to node names."""

from __future__ import annotations

import itertools
import re

from advisor.errors import InputError

_EMPTY = {"", "None assigned", "(null)", "None"}
_MAX_NODES = 1_000_000  # a list this long is a corrupt record, not a cluster
_RANGE = re.compile(r"(\d{1,9})(?:-(\d{1,9}))?")


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise InputError(f"host list {text!r}: unbalanced ']'")
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth:
        raise InputError(f"host list {text!r}: unbalanced '['")
    parts.append("".join(current))
    return parts


def _expand_ranges(body: str, whole: str) -> list[str]:
    values: list[str] = []
    for item in body.split(","):
        match = _RANGE.fullmatch(item.strip())
        if not match:
            raise InputError(f"host list {whole!r}: bad range {item!r}")
        low, high = match.group(1), match.group(2) or match.group(1)
        if int(high) < int(low):
            raise InputError(f"host list {whole!r}: descending range {item!r}")
        if int(high) - int(low) > _MAX_NODES:
            raise InputError(f"host list {whole!r}: range {item!r} is too large")
        if len(values) + int(high) - int(low) >= _MAX_NODES:  # bound the sum, not each range
            raise InputError(f"host list {whole!r}: too many nodes")
        width = len(low) if low.startswith("0") else 0
        values.extend(str(n).zfill(width) for n in range(int(low), int(high) + 1))
    return values


def expand_hostlist(text: str) -> tuple[str, ...]:
    """Node names in a Slurm host list, in Slurm's order, without duplicates."""
    text = text.strip()
    if text in _EMPTY:
        return ()
    names: list[str] = []
    for part in _split_top_level(text):
        if not part:
            raise InputError(f"host list {text!r}: empty name")
        pieces = re.split(r"(\[[^\[\]]*\])", part)
        choices: list[list[str]] = []
        for piece in pieces:
            if piece.startswith("[") and piece.endswith("]"):
                choices.append(_expand_ranges(piece[1:-1], text))
            elif "[" in piece or "]" in piece:
                raise InputError(f"host list {text!r}: nested or unbalanced brackets")
            elif piece:
                choices.append([piece])
        count = 1
        for choice in choices:
            count *= len(choice)
        if count + len(names) > _MAX_NODES:
            raise InputError(f"host list {text!r}: too many nodes")
        names.extend("".join(combo) for combo in itertools.product(*choices))
    return tuple(dict.fromkeys(names))
