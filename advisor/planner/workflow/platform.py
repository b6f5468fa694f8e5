"""The platform of the classic estimators: per-core flop rate, per-node read/write bandwidth.

Either a file (schemas/platform.json) or a preset.  ``summit`` is the makespan estimator's
preset: Top500 Rpeak 148.6 Pflop/s over 2,414,592 cores, IO500 1788.32 GB/s read and
2158.70 GB/s write over 504 nodes (61.542 Gflop/s per core, 3.548 / 4.283 GB/s per node).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import InputError
from advisor.validate import load_json


@dataclass(frozen=True)
class Platform:
    """Speeds the estimators need; bandwidths in bytes per second."""

    name: str
    flops_per_core: float
    read_bytes_per_s: float
    write_bytes_per_s: float


PRESETS = {
    "summit": Platform(
        name="summit",
        flops_per_core=148600.0e12 / 2414592,
        read_bytes_per_s=1788.32e9 / 504,
        write_bytes_per_s=2158.70e9 / 504,
    ),
}

_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_QUANTITY = re.compile(
    r"^\s*([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*([kKMGTP]?)(?:f|flops?)?\s*$"
)


def parse_flops(text: str, *, option: str = "") -> float:
    """``100Gf``, ``14.7Mf``, ``2.5e9`` or ``3 Gflop`` -> flops (SI prefixes, decimal).

    option names where the text came from, so that the error says which value to fix even when
    the text itself does not print (bytes that are not UTF-8).
    """
    where = f"{option}: " if option else ""
    match = _QUANTITY.match(text)
    if not match:
        raise InputError(f"{where}not a flop count: {text!r}", hint="e.g. 100Gf, 14.7Mf or 2.5e9")
    value = float(match.group(1)) * _PREFIX[match.group(2)]
    if not 0 < value < math.inf:  # '1e400' overflows to inf
        raise InputError(f"{where}flop count must be positive and finite: {text!r}")
    return value


def load_platform(spec: str) -> Platform:
    """A preset name or a platform JSON file."""
    if spec in PRESETS:
        return PRESETS[spec]
    if not Path(spec).exists():
        raise InputError(
            f"no platform {spec!r}", hint="give a platform JSON file or: " + ", ".join(PRESETS)
        )
    doc = load_json(spec, "platform")
    return Platform(
        name=doc.get("name", Path(spec).stem),
        flops_per_core=float(doc["flops_per_core"]),
        read_bytes_per_s=float(doc["read_bytes_per_s"]),
        write_bytes_per_s=float(doc["write_bytes_per_s"]),
    )
