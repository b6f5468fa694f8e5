"""What ``--advisor-explain`` and ``--advisor-dry-run`` show: plain data and one line.

The data follows schemas/sbatch-explain.json.

The command line is quoted for a POSIX shell on a single line: ``shlex.quote``'s quoting
(``quote`` here, so that a dry run loads neither shlex nor re; tests/unit/wrapper/test_limits.py
holds it to shlex.quote), except that an argument holding control characters (a newline) or
bytes that are not UTF-8 is written in bash's ``$'...'`` form, so the line pastes back into
bash as exactly the same argv.
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.lite import TYPE_CHECKING
from advisor.wrapper.advise import JobAdvice, PartitionLimit

if TYPE_CHECKING:
    from typing import Any

#: What shlex.quote leaves unquoted: ASCII word characters and ``@%+=:,./-``.
_SAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-"
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", "'": "\\'"}


def _needs_ansi_c(arg: str) -> bool:
    return any(ord(c) < 32 or ord(c) == 127 or 0xDC80 <= ord(c) <= 0xDCFF for c in arg)


def _ansi_c(arg: str) -> str:
    out = []
    for char in arg:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code < 32 or code == 127:
            out.append(f"\\x{code:02x}")
        else:
            out.append(char)
    return "$'" + "".join(out) + "'"


def quote(arg: str) -> str:
    """``shlex.quote(arg)``: as it is when every character is safe, else in single quotes."""
    if not arg:
        return "''"
    if not arg.strip(_SAFE):
        return arg
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def command_line(argv: Sequence[str]) -> str:
    """The argument list as one line of shell text."""
    return " ".join(_ansi_c(a) if _needs_ansi_c(a) else quote(a) for a in argv)


def _limit_row(limit: PartitionLimit) -> dict[str, Any]:
    return {
        "partition": limit.partition,
        "node_classes": [
            {
                "node_class": f.node_class,
                "mean_s": f.mean_s,
                "p50_s": f.p50_s,
                "p90_s": f.p90_s,
                "p95_s": f.p95_s,
                "quantile_s": f.quantile_s,
                "runs": f.runs,
                "source": f.source,
            }
            for f in limit.forecasts
        ],
        "missing_classes": sorted(
            set(limit.node_classes) - {f.node_class for f in limit.forecasts}
        ),
        "predicted_s": limit.predicted_s,
        "limit_s": limit.limit_s,
        "max_time_s": limit.max_time_s,
        "clamped": limit.clamped,
        "reason": limit.reason,
    }


def explanation(plan: JobAdvice | None, argv: Sequence[str], warning: str | None) -> dict[str, Any]:
    """The --advisor-explain document (schemas/sbatch-explain.json)."""
    full = ["sbatch", *argv]
    if plan is None:
        return {
            "task": None,
            "input_bytes": None,
            "input_origin": None,
            "policy": None,
            "quantile": None,
            "margin": None,
            "user_time": None,
            "basis": None,
            "partitions": [],
            "decision": {
                "action": "fallback",
                "time_s": None,
                "time_min_s": None,
                "reason": warning or "",
            },
            "picked": None,
            "estimates": [],
            "added": [],
            "argv": full,
            "command": command_line(full),
        }
    time = plan.request.time
    return {
        "task": plan.task,
        "input_bytes": plan.input_bytes,
        "input_origin": plan.input_origin,
        "policy": plan.options.policy,
        "quantile": plan.options.quantile,
        "margin": plan.options.margin,
        "user_time": {"value": time.value, "origin": time.origin} if time else None,
        "basis": plan.basis,
        "partitions": [_limit_row(limit) for limit in plan.limits],
        "decision": {
            "action": plan.decision.action,
            "time_s": plan.decision.time_s,
            "time_min_s": plan.decision.time_min_s,
            "reason": plan.decision.reason,
        },
        "picked": plan.picked,
        "estimates": [
            {
                "partition": e.partition,
                "start": e.start.isoformat() if e.start else None,
                "end": e.end.isoformat() if e.end else None,
                "error": e.error,
            }
            for e in plan.estimates
        ],
        "added": list(plan.added),
        "argv": full,
        "command": command_line(full),
    }


def explanation_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per partition and node class, for the table."""
    rows: list[dict[str, Any]] = []
    q = data.get("quantile")
    label = f"p{q * 100:g}_s" if q else "quantile_s"
    for part in data["partitions"]:
        classes = part["node_classes"] or [{"node_class": c} for c in part["missing_classes"]]
        for cls in classes or [{"node_class": ""}]:
            rows.append(
                {
                    "partition": part["partition"],
                    "node_class": cls.get("node_class"),
                    "runs": cls.get("runs"),
                    "p50_s": cls.get("p50_s"),
                    label: cls.get("quantile_s"),
                    "limit": _minutes(part["limit_s"]),
                    "max_time": _minutes(part["max_time_s"]),
                    "why": part["reason"],
                }
            )
    return rows


def _minutes(seconds: int | None) -> str:
    return "" if seconds is None else f"{seconds // 60} min"


def decision_line(data: dict[str, Any]) -> str:
    """The decision in one sentence."""
    decision = data["decision"]
    parts = [f"task {data['task']!r}" if data.get("task") else "no task", decision["action"]]
    if decision["time_s"] is not None:
        parts.append(f"--time {decision['time_s'] // 60} min")
    if decision["time_min_s"] is not None:
        parts.append(f"--time-min {decision['time_min_s'] // 60} min")
    if data.get("picked"):
        parts.append(f"partition {data['picked']}")
    return "; ".join(parts) + f" ({decision['reason']})"
