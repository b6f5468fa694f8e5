"""``advisor insitu``: the in situ step model on a file of per-step stage times."""

from __future__ import annotations

import argparse

from advisor.advice.settings import MAX_STEPS
from advisor.cli.common import positive_int
from advisor.insitu.model import MAX_BUFFER_FRAMES
from advisor.insitu.report import SIGMA_PRIME_NOTE
from advisor.render import Result, Table
from advisor.services.insitu import InSituRequest, insitu


def _frames(text: str) -> int:
    value = positive_int(text)
    if value > MAX_BUFFER_FRAMES:
        raise argparse.ArgumentTypeError(f"must be <= {MAX_BUFFER_FRAMES}, got {value}")
    return value


def _count(text: str) -> int:
    value = int(text)
    if not 0 <= value <= MAX_STEPS:
        raise argparse.ArgumentTypeError(f"must be from 0 to {MAX_STEPS}, got {value}")
    return value


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "insitu",
        parents=parents,
        help="efficiency, idle scenario and makespan of an in situ workflow from a few steps",
        description="Reads per-step stage times (CSV 'step,S,W,R,A[,IS,IA]' in seconds, or JSON "
        "per schemas/insitu-steps.json for pipelines of more components), detects and skips "
        "warm-up steps, and applies the in situ step model (Do et al., ICCS 2020): the "
        "non-overlapped step σ̄* = max(S*+W*, R*+A*), the idle time I*, the scenario, the "
        "efficiency E = 1 - I*/σ̄* and the makespan m·σ̄* + σ'*.",
    )
    parser.add_argument("steps_file", metavar="STEPS_FILE", help="CSV or JSON step file")
    parser.add_argument(
        "--steps",
        type=_count,
        metavar="M",
        help="predict the makespan of M steps (default: the number of steps in the file)",
    )
    parser.add_argument(
        "--first",
        type=positive_int,
        metavar="N",
        help="use only the first N steps of the file (predict a run from its beginning)",
    )
    parser.add_argument(
        "--buffer",
        type=_frames,
        metavar="K",
        help="frames the buffer holds (R_i -> W_{i+K}); default 1, or the JSON file's value",
    )
    parser.add_argument(
        "--balance-tolerance",
        type=float,
        default=0.05,
        metavar="F",
        help="call the run balanced when E >= 1 - F (default 0.05)",
    )
    parser.set_defaults(func=run)


def _g(value: float | None) -> str:
    """Six significant digits: step times are often milliseconds, the default rounding is 1 ms."""
    return "" if value is None else f"{value:.6g}"


def run(args: argparse.Namespace) -> Result:
    """Analyse (services.insitu) and lay out."""
    report = insitu(
        InSituRequest(
            args.steps_file,
            steps=args.steps,
            first=args.first,
            buffer=args.buffer,
            balance_tolerance=args.balance_tolerance,
        )
    )
    components = [
        {
            "component": c.name,
            "stages": "+".join(c.stages),
            "busy_s": _g(c.busy_s),
            "idle_s": _g(c.idle_s),
            "idle_measured_s": _g(c.idle_measured_s),
            "utilisation": f"{c.utilisation:.3f}",
        }
        for c in report.components
    ]
    window, steady = report.window, report.steady
    rows = [
        (
            "steps used (warm-up, wrap-up)",
            f"{window.total_steps} ({window.warmup_steps}, {window.wrapup_steps})",
        ),
        (
            "steady stage times (s)",
            ", ".join(f"{name}*={_g(value)}" for name, value in report.stages_s.items()),
        ),
        ("buffer (frames)", ",".join(map(str, report.pipeline.buffer_frames))),
        ("σ̄* non-overlapped step (s)", _g(steady.period_s)),
        ("σ'* overlapped part (s)", _g(report.sigma_prime_s)),
        ("I* idle per step (s)", _g(steady.total_idle_s)),
        ("scenario", f"{steady.scenario} (bottleneck: {steady.bottleneck})"),
        ("efficiency E", f"{steady.efficiency:.3f}"),
        (f"makespan of {report.makespan_steps} steps (s)", _g(report.makespan_s)),
        ("warm-up excess, not included (s)", _g(report.warmup_excess_s)),
    ]
    measured = report.measured
    if measured is not None:
        rows.append(
            (
                "measured idle columns: σ̄*, I*, E",
                f"{_g(measured.sigma_bar_s)}, {_g(measured.idle_s)}, {measured.efficiency:.3f}",
            )
        )
    return Result(
        data=report.to_json(),
        tables=(
            Table(
                [{"metric": k, "value": v} for k, v in rows],
                title=f"In situ model of {report.source}",
            ),
            Table(components, title="Components (steady state, per step)"),
        ),
        notes=(SIGMA_PRIME_NOTE,),
    )
