"""What ``--advisor-explain`` and ``--advisor-dry-run`` show: a record, its table and one line.

The record's JSON follows schemas/sbatch-explain.json.

The command line is quoted for a POSIX shell on a single line: ``shlex.quote``'s quoting
(``quote`` here, so that a dry run loads neither shlex nor re; tests/unit/wrapper/test_explain.py
holds it to shlex.quote), except that an argument holding control characters (a newline) or
bytes that are not UTF-8 is written in bash's ``$'...'`` form, so the line pastes back into
bash as exactly the same argv.
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.advice.advice import JobAdvice, PickEstimate
from advisor.advice.limits import Decision, PartitionLimit
from advisor.advice.memory import NO_MEMORY, MemoryDecision
from advisor.lite import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from typing import Any

    from advisor.advice.settings import Basis
    from advisor.sbatch.request import Setting

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


def _missing(limit: PartitionLimit) -> list[str]:
    """The partition's node classes without a forecast."""
    return sorted(set(limit.node_classes) - {f.node_class for f in limit.forecasts})


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
        "missing_classes": _missing(limit),
        "predicted_s": limit.predicted_s,
        "limit_s": limit.limit_s,
        "max_time_s": limit.max_time_s,
        "clamped": limit.clamped,
        "reason": limit.reason,
    }


class Explanation(NamedTuple):
    """What the wrapper decided and why: --advisor-explain's and --advisor-dry-run's record."""

    task: str | None
    input_bytes: int | None
    input_origin: str | None
    policy: str | None
    quantile: float | None
    margin: float | None
    user_time: Setting | None  # the job's own --time, and where it came from
    basis: Basis | None
    partitions: tuple[PartitionLimit, ...]
    decision: Decision  # action 'fallback' when the wrapper gave up
    picked: str | None
    estimates: tuple[PickEstimate, ...]
    added: tuple[str, ...]
    argv: tuple[str, ...]  # what runs, "sbatch" first
    memory: MemoryDecision = NO_MEMORY

    def to_json(self) -> dict[str, Any]:
        """The --advisor-explain document (schemas/sbatch-explain.json)."""
        time, decision = self.user_time, self.decision
        return {
            "task": self.task,
            "input_bytes": self.input_bytes,
            "input_origin": self.input_origin,
            "policy": self.policy,
            "quantile": self.quantile,
            "margin": self.margin,
            "user_time": {"value": time.value, "origin": time.origin} if time else None,
            "basis": self.basis,
            "partitions": [_limit_row(limit) for limit in self.partitions],
            "decision": {
                "action": decision.action,
                "time_s": decision.time_s,
                "time_min_s": decision.time_min_s,
                "reason": decision.reason,
            },
            "picked": self.picked,
            "estimates": [
                {
                    "partition": e.partition,
                    "start": e.start.isoformat() if e.start else None,
                    "end": e.end.isoformat() if e.end else None,
                    "error": e.error,
                }
                for e in self.estimates
            ],
            "added": list(self.added),
            "argv": list(self.argv),
            "command": command_line(self.argv),
            "memory": _memory_json(self.memory),
        }


def _memory_json(memory: MemoryDecision) -> dict[str, Any]:
    forecast = memory.forecast
    return {
        "action": memory.action,
        "mem_mb": memory.mem_mb,
        "reason": memory.reason,
        "p50_mb": forecast.p50_mb if forecast else None,
        "p95_mb": forecast.p95_mb if forecast else None,
        "basis": forecast.basis if forecast else None,
        "runs": forecast.runs if forecast else None,
        "default_mb": memory.default_mb,
    }


def explanation(advice: JobAdvice | None, argv: Sequence[str], warning: str | None) -> Explanation:
    """What --advisor-explain shows of the advice (None: the wrapper fell back, with warning)."""
    full = ("sbatch", *argv)
    if advice is None:
        fallback = Decision(action="fallback", time_s=None, time_min_s=None, reason=warning or "")
        return Explanation(
            task=None,
            input_bytes=None,
            input_origin=None,
            policy=None,
            quantile=None,
            margin=None,
            user_time=None,
            basis=None,
            partitions=(),
            decision=fallback,
            picked=None,
            estimates=(),
            added=(),
            argv=full,
        )
    options = advice.options
    return Explanation(
        task=advice.task,
        input_bytes=advice.input_bytes,
        input_origin=advice.input_origin,
        policy=options.policy,
        quantile=options.quantile,
        margin=options.margin,
        user_time=advice.request.time,
        basis=advice.basis,
        partitions=advice.limits,
        decision=advice.decision,
        picked=advice.picked,
        estimates=advice.estimates,
        added=advice.added,
        argv=full,
        memory=advice.memory,
    )


def explanation_rows(explained: Explanation) -> list[dict[str, Any]]:
    """One row per partition and node class, for the table."""
    rows: list[dict[str, Any]] = []
    q = explained.quantile
    label = f"p{q * 100:g}_s" if q else "quantile_s"
    for limit in explained.partitions:
        classes: list[tuple[str, int | None, float | None, float | None]] = [
            (f.node_class, f.runs, f.p50_s, f.quantile_s) for f in limit.forecasts
        ] or [(c, None, None, None) for c in _missing(limit)]
        for node_class, runs, p50_s, quantile_s in classes or [("", None, None, None)]:
            rows.append(
                {
                    "partition": limit.partition,
                    "node_class": node_class,
                    "runs": runs,
                    "p50_s": p50_s,
                    label: quantile_s,
                    "limit": _minutes(limit.limit_s),
                    "max_time": _minutes(limit.max_time_s),
                    "why": limit.reason,
                }
            )
    return rows


def _minutes(seconds: int | None) -> str:
    return "" if seconds is None else f"{seconds // 60} min"


def decision_line(explained: Explanation) -> str:
    """The decision in one sentence."""
    decision = explained.decision
    parts = [f"task {explained.task!r}" if explained.task else "no task", decision.action]
    if decision.time_s is not None:
        parts.append(f"--time {decision.time_s // 60} min")
    if decision.time_min_s is not None:
        parts.append(f"--time-min {decision.time_min_s // 60} min")
    if explained.picked:
        parts.append(f"partition {explained.picked}")
    line = "; ".join(parts) + f" ({decision.reason})"
    if explained.memory.action != "none" or explained.memory.reason:
        line += f"; memory: {explained.memory.reason}"
    return line
