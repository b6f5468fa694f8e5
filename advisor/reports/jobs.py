"""One finished job as the reports see it: what ran, what the advisor said, what it changed.

The advisor's word on a job comes from its advice row (the sbatch wrapper), else from the
``advisor:`` tag in its comment (slurm/job_submit.lua writes a tag but no advice row).  Whether
the advisor's limit is the one Slurm enforced ("applied") comes from the tag's action; without
a tag (slurmdbd keeps comments only with AccountingStoreFlags=job_comment) it is inferred from
the limit Slurm reports.  An advice row read from a user's spool line is that user's own text
(issue 31, N14: ten forged lines turned a user's report row from 0 advised jobs into 10, with a
faked calibration): it counts only when the job's comment carries the advisor's tag with the
same limit; otherwise the job is counted as ``unverified`` and judged by its tag alone, if
any.  The limit the job would have had *without* the advisor is what
"saved" is measured against: the job's own limit when the advisor only advised, else the
user's ``--time`` that the advisor replaced (in the recorded argv), else, when the user gave
none, the partition's DefaultTime (MaxTime when unset, as Slurm does).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from advisor.advice.tag import Tag, parse_tag
from advisor.errors import InputError
from advisor.sbatch.argv import parse_options
from advisor.slurm.timefmt import parse_timelimit

#: The tag actions after which the job runs with the advisor's limit.
APPLIED_ACTIONS = frozenset({"set", "lowered"})
#: The class of a job whose nodes are unknown (pending-cancelled jobs, SWF traces).
UNKNOWN_CLASS = "unknown"


@dataclass(frozen=True)
class AdvisorLimit:
    """The advisor's limit for one job and the limit the job would have had without it."""

    source: str  # 'wrapper' (an advice row) or the tag's source ('lua')
    limit_s: int
    applied: bool
    without_s: int | None  # None: unknown (the user's --time was in the script)
    predicted_s: float | None  # the stored quantile prediction (advice rows only)
    quantile: float | None
    node_classes: tuple[str, ...]  # the classes that prediction covered
    policy: str | None
    #: What the user was told (newer advice rows): the size assumed, and the P50/P90/P95
    #: on the slowest advised class.
    input_bytes: float | None = None
    stored: tuple[float, float, float] | None = None


@dataclass(frozen=True)
class JobView:
    """A finished job with its task and the advisor's limit, if any."""

    cluster: str
    job_id: str
    user: str
    account: str
    partition: str
    task: str
    node_class: str
    cpus: int
    elapsed_s: int
    timelimit_s: int | None  # None: no limit
    state: str
    end: str | None
    advice: AdvisorLimit | None = None
    #: A spool line claimed advice for this job that its accounting record does not confirm.
    unverified: bool = False

    @property
    def timed_out(self) -> bool:
        """Killed at its time limit (its runtime is a lower bound)."""
        return self.state == "TIMEOUT"


def _seconds(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        value = parse_timelimit(text)
    except InputError:
        return None
    return value if isinstance(value, int) else None


def replaced_time_s(argv_json: str | None) -> int | None:
    """The user's own ``--time`` in a recorded argv whose last ``--time`` the advisor added."""
    try:
        argv = json.loads(argv_json or "[]")
    except json.JSONDecodeError:
        return None
    if not isinstance(argv, list):
        return None
    options, _ = parse_options([str(word) for word in argv])
    times = [option.value for option in options if option.name == "time"]
    return _seconds(times[-2]) if len(times) >= 2 else None


def _applied(row: Mapping[str, Any], tag: Tag | None, limit_s: int) -> bool:
    if tag is not None:
        return tag.action in APPLIED_ACTIONS
    return (
        row.get("outcome") == "submitted"
        and row.get("policy") != "advise"
        and row.get("timelimit_s") == limit_s
    )


def _without_s(row: Mapping[str, Any], tag: Tag | None, applied: bool) -> int | None:
    if not applied:
        timelimit: int | None = row.get("timelimit_s")
        return timelimit
    replaced = replaced_time_s(row.get("argv"))
    if replaced is not None:
        return replaced
    if tag is None or tag.action == "set":  # no --time of the user's: Slurm's default applies
        default: int | None = row.get("partition_default_time_s")
        return default
    return None


def confirmed(row: Mapping[str, Any], tag: Tag | None) -> bool:
    """Whether the job's advice row may be believed (a spool line needs the job's own tag).

    The advisor wrote it into the cache, or the job's comment carries the tag the wrapper adds,
    with the limit the row claims.
    """
    if row.get("advice_id") is None or row.get("advice_origin", "direct") != "spool":
        return True
    limit = row.get("advice_limit_s")
    return tag is not None and limit is not None and tag.limit_min * 60 == int(limit)


def advisor_limit(row: Mapping[str, Any], tag: Tag | None) -> AdvisorLimit | None:
    """The advisor's limit for a job row of advisor.store.reports.jobs_with_advice, if any."""
    has_advice = row.get("advice_id") is not None and confirmed(row, tag)
    if has_advice and row.get("advice_limit_s") is not None:
        limit_s = int(row["advice_limit_s"])
    elif tag is not None and tag.limit_min > 0:
        limit_s = tag.limit_min * 60
    else:
        return None
    applied = _applied(row, tag, limit_s)
    classes = tuple(c for c in (row.get("advice_node_class") or "").split(",") if c)
    return AdvisorLimit(
        source="wrapper" if has_advice else (tag.source if tag else "wrapper"),
        limit_s=limit_s,
        applied=applied,
        without_s=_without_s(row, tag, applied),
        predicted_s=row.get("predicted_s") if has_advice else None,
        quantile=row.get("quantile") if has_advice else (tag.quantile if tag else None),
        node_classes=classes,
        policy=row.get("policy"),
        input_bytes=row.get("advice_input_bytes") if has_advice else None,
        stored=_stored(row) if has_advice else None,
    )


def _stored(row: Mapping[str, Any]) -> tuple[float, float, float] | None:
    p50, p90, p95 = (row.get(f"advice_{name}_s") for name in ("p50", "p90", "p95"))
    if p50 is None or p90 is None or p95 is None:
        return None
    return (float(p50), float(p90), float(p95))


def node_class_of_job(nodes: Sequence[str], class_of: Mapping[str, str]) -> str:
    """The class of a job's nodes; a node without a class is its own; a mix is joined by '+'."""
    classes = sorted({class_of.get(node, node) for node in nodes})
    return "+".join(classes) if classes else UNKNOWN_CLASS


def job_view(row: Mapping[str, Any], class_of: Mapping[str, str]) -> JobView:
    """A JobView from a row of advisor.store.reports.jobs_with_advice."""
    tag = parse_tag(row.get("comment") or "")
    nodes = json.loads(row.get("nodes") or "[]")
    task = row.get("advice_task") or (tag.task if tag else None) or row.get("name") or "-"
    return JobView(
        cluster=row["cluster"],
        job_id=row["job_id"],
        user=row["user"],
        account=row.get("account") or "",
        partition=row["partition"],
        task=task,
        node_class=node_class_of_job(nodes, class_of),
        cpus=int(row["cpus"]),
        elapsed_s=int(row["elapsed_s"]),
        timelimit_s=row.get("timelimit_s"),
        state=row["state"],
        end=row.get("end"),
        advice=advisor_limit(row, tag),
        unverified=not confirmed(row, tag),
    )
