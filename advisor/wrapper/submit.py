"""The submit flow: advise, run the real sbatch, record the advice, and fail open.

Failing open is the contract: whatever goes wrong in the advisor (cache missing, locked or
corrupt, no model, a bug), the user's own arguments go to sbatch with one warning line, and the
exit code and output are sbatch's.  Only sbatch's own result decides whether a job exists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from advisor.advice.advice import (
    JobAdvice,
    advise,
    advise_from_history,
    candidate_partitions,
    pick_earliest,
    undecided,
    with_memory,
)
from advisor.advice.settings import CommandLine
from advisor.lite import TYPE_CHECKING, NamedTuple
from advisor.sbatch.argv import Option, parse_options
from advisor.sbatch.request import JobRequest, job_request, task_name
from advisor.sbatch.script import read_directives

if TYPE_CHECKING:
    from advisor.advice.snapshot import Snapshot
    from advisor.slurm.records import StartEstimate
    from advisor.slurm.runner import CommandResult
    from advisor.store.advice import Advice, Outcome

#: sbatch options after which sbatch only prints something: nothing to advise.
_INFO_OPTIONS = frozenset({"help", "usage", "version"})
#: Compiled by re on first use (re caches it), and re imported then: a dry run never needs it.
_JOB_ID = r"^(?:Submitted batch job )?(\d+)(?:;\S+)?\s*$"


class SideEffects(NamedTuple):
    """Everything the flow does to the world, as parameters (tests pass fakes)."""

    env: Mapping[str, str]
    read_script: Callable[[str], str]
    read_stdin: Callable[[], str]
    input_bytes: Callable[[Sequence[str]], int]
    #: (db, task, user): the models as this user sees them.
    load_snapshot: Callable[[str | None, str, str], Snapshot]
    #: (db, user, job name, partitions, the user's --time in s, the jobs it makes: a job
    #: array's tasks): the history policy's (limit_s, why) per partition.
    history: Callable[
        [str | None, str, str, Sequence[str], int | None, int],
        Mapping[str, tuple[int, str] | None],
    ]
    run_sbatch: Callable[[Sequence[str], str | None, bool], CommandResult]
    estimate_start: Callable[[Sequence[str]], StartEstimate]
    record: Callable[[str | None, Advice], None]
    user: Callable[[], str]
    cluster: Callable[[], str | None]


class Prepared(NamedTuple):
    """The argv to run (advised, or the user's own) and the one warning, if the advisor failed."""

    argv: tuple[str, ...]
    advice: JobAdvice | None
    stdin: str | None = None
    warning: str | None = None


class Submitted(NamedTuple):
    """What sbatch did with the argv finally run."""

    result: CommandResult
    argv: tuple[str, ...]
    outcome: Outcome  # 'submitted', 'failed' or 'fallback' (a dry run submits nothing)
    job_id: int | None
    warning: str | None = None


def one_line(error: BaseException) -> str:
    """An exception as one line of text (user data may hold newlines)."""
    from advisor.text import printable

    text = getattr(error, "one_line", None)
    return printable(str(text() if callable(text) else f"{type(error).__name__}: {error}"))


def warning_text(reason: str) -> str:
    """The single warning line printed when the advisor steps aside."""
    return f"advisor: warning: {reason}; submitting your arguments unchanged"


def _unadvised(cmd: CommandLine, request: JobRequest, task: str | None, reason: str) -> JobAdvice:
    return undecided(task, cmd.advisor, request, (), cmd.original, reason=reason)


def _reads_stdin(cmd: CommandLine) -> bool:
    """True when sbatch reads the script from stdin: no script, no --wrap, no info option."""
    names = {o.name for o in cmd.sbatch.options}
    return cmd.sbatch.script_index is None and "wrap" not in names and not names & _INFO_OPTIONS


def translated_options(
    text: str | None,
    source: str,
    command_line: Sequence[Option],
    script: Sequence[Option],
    env: Mapping[str, str],
) -> tuple[tuple[str, tuple[Option, ...]] | None, str | None]:
    """The script's ``#BSUB``/``#PBS`` options as sbatch translates them, and why it refuses them.

    None where there are none or sbatch ignores them; the module loads only for a script that
    has such lines.
    """
    if text is None or ("#BSUB" not in text and "#PBS" not in text):
        return None, None
    from advisor.sbatch.translated import ignored, translate_directives

    if ignored(command_line, script, env):
        return None, None
    found = translate_directives(text, source=source)
    if found.magic is None:
        return None, None
    return (found.magic, found.options), found.invalid


def advice_for(cmd: CommandLine, side: SideEffects, stdin: str | None) -> JobAdvice:
    """The advice for this command line; raises on any failure (the caller fails open)."""
    sbatch = cmd.sbatch
    script_options: tuple[Option, ...] = ()
    text = side.read_script(sbatch.script) if sbatch.script is not None else stdin
    source = sbatch.script or "stdin"
    directives = read_directives(text, source=source) if text is not None else None
    if directives is not None:
        script_options, _ = parse_options(directives.words)
    translated, refused = translated_options(text, source, sbatch.options, script_options, side.env)
    request = job_request(sbatch.options, side.env, script_options, translated)
    task = task_name(cmd.advisor.task, request, sbatch.script if stdin is None else "sbatch")
    names = {o.name for o in sbatch.options}
    if sbatch.invalid:
        return _unadvised(cmd, request, task, f"sbatch will reject {sbatch.invalid[0]!r}")
    if refused:
        return _unadvised(cmd, request, task, f"sbatch will reject {refused}")
    if names & _INFO_OPTIONS:
        return _unadvised(cmd, request, task, "sbatch only prints information")
    if sbatch.hetjob or (directives is not None and directives.hetjob):
        return _unadvised(cmd, request, task, "heterogeneous jobs are left as written")
    if task is None:
        return _unadvised(cmd, request, task, "no task name")
    input_bytes = side.input_bytes(cmd.advisor.inputs) if cmd.advisor.inputs else None
    user = side.user()
    snapshot = side.load_snapshot(cmd.advisor.db, task, user)
    if cmd.advisor.insitu is not None:
        from advisor.wrapper.insitu import insitu_predictor

        predictor = insitu_predictor(cmd.advisor.insitu, cmd.advisor.steps)
        snapshot = snapshot._replace(predictor=predictor, tasks=(task,))
        input_bytes = None
    if task not in snapshot.tasks:
        return _from_history(cmd, side, request, task, user, snapshot)._replace(
            input_bytes=input_bytes
        )
    origin = "--advisor-input"
    if cmd.advisor.insitu is not None:
        origin = f"in situ steps {cmd.advisor.insitu}"
    elif input_bytes is None:
        input_bytes = snapshot.predictor.default_input_bytes(task)
        origin = "largest training input (no --advisor-input)"
    result = advise(sbatch, cmd.advisor, request, task, input_bytes, snapshot, input_origin=origin)
    if cmd.advisor.insitu is not None:
        result = result._replace(basis="insitu")
    if cmd.advisor.pick == "earliest":
        if sbatch.script is None:
            return _noted(result, "--advisor-pick needs a script file")
        result = pick_earliest(result, sbatch, snapshot, side.estimate_start)
    return result


def _noted(found: JobAdvice, note: str) -> JobAdvice:
    return found._replace(
        decision=found.decision._replace(reason=f"{found.decision.reason}; {note}")
    )


def _from_history(
    cmd: CommandLine,
    side: SideEffects,
    request: JobRequest,
    task: str,
    user: str,
    snapshot: Snapshot,
) -> JobAdvice:
    """The history policy's advice for a task without a model (accounting issue), if it has one.

    Its keys know the job by the name Slurm gives it (``-J``, else the script's name; a
    workflow manager's job by its task key), as accounting does, not by ``--advisor-task``.
    """
    sbatch = cmd.sbatch
    job_name = task_name(None, request, sbatch.script if sbatch.script is not None else "sbatch")
    partitions = candidate_partitions(request, snapshot)
    if job_name is None or not partitions:
        unadvised = _unadvised(cmd, request, task, f"no model for task {task!r}")
        return with_memory(unadvised, sbatch, snapshot)
    found = side.history(
        cmd.advisor.db, user, job_name, partitions, _request_s(request), request.tasks
    )
    if not any(found.values()):
        unadvised = _unadvised(
            cmd, request, task, f"no model for task {task!r} and no history of {job_name!r}"
        )
        return with_memory(unadvised, sbatch, snapshot)
    result = advise_from_history(sbatch, cmd.advisor, request, job_name, found, snapshot)
    if cmd.advisor.pick == "earliest":
        result = _noted(result, "--advisor-pick needs a task model")
    return result


def _request_s(request: JobRequest) -> int | None:
    """The user's own --time in seconds (None: none, unlimited, or unreadable)."""
    from advisor.advice.limits import user_limit_s

    found = user_limit_s(request.time.value) if request.time is not None else None
    return found if isinstance(found, int) and found > 0 else None


def prepare(cmd: CommandLine, side: SideEffects) -> Prepared:
    """Advise, or fall back to the user's arguments with one warning line."""
    stdin = None
    try:
        stdin = side.read_stdin() if _reads_stdin(cmd) else None
    except (OSError, ValueError) as error:  # sbatch will find no script either, and say so
        return Prepared(cmd.original, None, None, warning_text(one_line(error)))
    try:
        found = advice_for(cmd, side, stdin)
    except Exception as error:  # fail open: nothing the advisor does may cost the job
        return Prepared(cmd.original, None, stdin, warning_text(one_line(error)))
    return Prepared(found.argv, found, stdin)


def job_id_of(stdout: str) -> int | None:
    """The job id sbatch printed (plain or --parsable), if any."""
    import re

    match = re.search(_JOB_ID, stdout, re.MULTILINE)
    return int(match.group(1)) if match else None


def _waits(cmd: CommandLine, env: Mapping[str, str]) -> bool:
    names = {o.name for o in cmd.sbatch.options}
    return "wait" in names or "test-only" in names or "SBATCH_WAIT" in env


def _rejected(result: CommandResult) -> bool:
    """True when sbatch itself turned the job down for good (not unreachable, no reply lost)."""
    from advisor.slurm.runner import AMBIGUOUS_SUBMIT_MARKERS, is_transient

    text = (result.stderr + result.stdout).lower()
    lost = any(marker.lower() in text for marker in AMBIGUOUS_SUBMIT_MARKERS)
    said_so = "sbatch: error:" in text
    return said_so and job_id_of(result.stdout) is None and not is_transient(result) and not lost


def submit(cmd: CommandLine, prepared: Prepared, side: SideEffects) -> Submitted:
    """Run sbatch; if it rejects what the advisor added, run the user's own arguments instead."""
    waits = _waits(cmd, side.env)
    result = side.run_sbatch(prepared.argv, prepared.stdin, waits)
    if prepared.advice is None:
        return Submitted(
            result=result,
            argv=prepared.argv,
            outcome="fallback",
            job_id=job_id_of(result.stdout),
            warning=prepared.warning,
        )
    added = prepared.argv != cmd.original
    # A rejection caused by an added option must not cost the job: sbatch creates no job when
    # it rejects one (non-zero exit without --wait), so submitting the user's own arguments is
    # safe.  Not so when Slurm was unreachable (the same would happen again) or the reply was
    # lost (the job may exist).
    if result.returncode != 0 and added and not waits and _rejected(result):
        first = result.stderr.strip().splitlines()[-1:] or [f"exit code {result.returncode}"]
        retry = side.run_sbatch(cmd.original, prepared.stdin, waits)
        return Submitted(
            result=retry,
            argv=cmd.original,
            outcome="fallback",
            job_id=job_id_of(retry.stdout),
            warning=warning_text(f"sbatch rejected the advised options ({first[0].strip()})"),
        )
    outcome: Outcome = "submitted" if result.returncode == 0 else "failed"
    return Submitted(
        result=result, argv=prepared.argv, outcome=outcome, job_id=job_id_of(result.stdout)
    )


def advice_record(
    cmd: CommandLine, done: Submitted, prepared: Prepared, user: str, cluster: str | None
) -> Advice:
    """The advice row for this submission."""
    from advisor.store.advice import Advice  # the store loads only when a row is written

    found = prepared.advice
    # The history policy counts its jobs still running by advice rows of policy 'history'.
    policy = "history" if found is not None and found.basis == "history" else cmd.advisor.policy
    memory = found.memory if found is not None and found.memory.action != "none" else None
    mem_mb, mem_action = (memory.mem_mb, memory.action) if memory else (None, None)
    tasks = found.request.tasks if found is not None and found.request.tasks > 1 else None
    if found is None or not found.limits:
        return Advice(
            user=user,
            policy=policy,
            argv=done.argv,
            outcome=done.outcome,
            task=found.task if found else None,
            cluster=cluster,
            job_id=done.job_id,
            input_bytes=found.measured_bytes if found else None,
            mem_mb=mem_mb,
            mem_action=mem_action,
            tasks=tasks,
        )
    chosen = [p for p in found.limits if p.limit_s is not None]
    if found.picked:
        chosen = [p for p in chosen if p.partition == found.picked]
    top = max(chosen, key=lambda p: p.limit_s or 0) if chosen else None
    slowest = max(top.forecasts, key=lambda f: f.quantile_s) if top and top.forecasts else None
    return Advice(
        user=user,
        policy=policy,
        argv=done.argv,
        outcome=done.outcome,
        task=found.task,
        partition=found.picked or ",".join(p.partition for p in found.limits),
        node_class=",".join(top.node_classes) if top and top.node_classes else None,
        predicted_s=top.predicted_s if top else None,
        quantile=cmd.advisor.quantile if found.basis != "history" else None,
        limit_s=found.decision.time_s or found.decision.advised_s,
        cluster=cluster,
        job_id=done.job_id,
        input_bytes=found.input_bytes,
        p50_s=slowest.p50_s if slowest else None,
        p90_s=slowest.p90_s if slowest else None,
        p95_s=slowest.p95_s if slowest else None,
        request_s=found.decision.request_s,
        mem_mb=mem_mb,
        mem_action=mem_action,
        tasks=tasks,
    )


def record(cmd: CommandLine, done: Submitted, prepared: Prepared, side: SideEffects) -> str | None:
    """Store the advice; a warning line if that failed (the submission stands either way)."""
    if "test-only" in {o.name for o in cmd.sbatch.options}:
        return None
    try:
        side.record(cmd.advisor.db, advice_record(cmd, done, prepared, side.user(), side.cluster()))
    except Exception as error:  # the job is submitted; losing its advice row must not fail it
        return f"advisor: warning: advice not recorded: {one_line(error)}"
    return None
