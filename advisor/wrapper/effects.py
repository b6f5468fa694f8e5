"""The real side effects of the submit flow; heavier modules load only when a step needs them."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence

from advisor.lite import TYPE_CHECKING
from advisor.users import current_user
from advisor.wrapper.submit import SideEffects

if TYPE_CHECKING:
    from advisor.advice.snapshot import Snapshot
    from advisor.slurm.records import StartEstimate
    from advisor.slurm.runner import CommandResult, RetryPolicy, Runner
    from advisor.store.advice import Advice

#: How long the wrapper waits for a locked cache before it fails open (reads) or skips (writes).
#: The advice row is written after the job is submitted, and another writer (``advisor update``)
#: holds the lock for one batch, which on a loaded machine took over 0.5 s: the old bound lost
#: 1-7 % of the rows under tests/integration/test_load.py; none are lost with 5 s.
READ_BUSY_S = 1.0
WRITE_BUSY_S = 5.0
#: sbatch answers in milliseconds; a minute means slurmctld is stuck (then the policy retries).
SBATCH_TIMEOUT_S = 60.0
#: With --wait sbatch returns when the job ends, however long that takes.
WAIT_TIMEOUT_S = math.inf


def read_script(path: str) -> str:
    """The script as text; bytes that are not UTF-8 survive as surrogates."""
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        return handle.read()


def read_stdin() -> str:
    """The script sbatch would read from stdin, to read its directives and hand it on."""
    return sys.stdin.buffer.read().decode("utf-8", "surrogateescape")


def input_bytes(paths: Sequence[str]) -> int:
    """Total uncompressed size of the inputs (advisor.inputs, cached by path, size and mtime)."""
    from advisor.inputs import total_uncompressed

    return total_uncompressed(paths)


def load_snapshot(db: str | None, task: str, user: str) -> Snapshot:
    """One read-only pass over the cache: the task's models as this user sees them."""
    from advisor.advice.snapshot import load_snapshot as load
    from advisor.store.connection import Store

    with Store.open(db, readonly=True, busy_timeout_s=READ_BUSY_S) as store:
        return load(store, (task,), user=user)


def history(
    db: str | None,
    user: str,
    job_name: str,
    partitions: Sequence[str],
    request_s: int | None = None,
    tasks: int = 1,
) -> dict[str, tuple[int, str] | None]:
    """The history policy's (limit_s, why) per partition, in one read-only pass.

    request_s: the user's own --time (None: the partition's MaxTime is what is lowered); tasks:
    the jobs the submission makes (a job array's tasks, counted against the burst bound).
    Through a published copy this user's advice is in the spool, not yet in the copy: the
    policy counts those submissions from the user's own spool file as running.
    """
    from advisor.history.lookup import history_limit
    from advisor.spool import SPOOL_ENV, read_own_lines
    from advisor.store.accounting import get_watermark
    from advisor.store.connection import Store

    with Store.open(db, readonly=True, busy_timeout_s=READ_BUSY_S) as store, store.read():
        unrecorded: list[dict[str, object]] = []
        spool = os.environ.get(SPOOL_ENV)
        if spool and not _writable(store.path):
            unrecorded = read_own_lines(spool, lambda source: get_watermark(store, source))
        return {
            name: history_limit(
                store,
                user,
                job_name,
                name,
                request_s=request_s,
                unrecorded=unrecorded,
                tasks=tasks,
            )
            for name in partitions
        }


def _writable(path: str | None) -> bool:
    """A cache this user may write: a file (the published copies are a directory)."""
    return path is not None and os.path.isfile(path) and os.access(path, os.W_OK)


def run_sbatch(
    argv: Sequence[str],
    stdin: str | None,
    waits: bool,
    *,
    policy: RetryPolicy | None = None,
    runner: Runner | None = None,
) -> CommandResult:
    """The real sbatch, retrying (the adapter's policy) only failures that created no job."""
    from advisor.errors import SlurmUnavailableError
    from advisor.slurm.runner import (
        AmbiguousSubmitError,
        CommandResult,
        SlurmCommands,
        no_resubmit,
        run_subprocess,
    )

    timeout = WAIT_TIMEOUT_S if waits else SBATCH_TIMEOUT_S
    commands = SlurmCommands(
        no_resubmit(runner or run_subprocess), policy=policy, timeout_s=timeout
    )
    full = ["sbatch", *argv]
    try:
        return commands.run(full, stdin=stdin, check=False)
    except AmbiguousSubmitError as error:
        return error.result
    except SlurmUnavailableError as error:
        stderr = error.stderr if error.stderr else f"advisor: {error.one_line()}\n"
        code = error.returncode if error.returncode is not None else 127
        return CommandResult(tuple(full), code, "", stderr)
    except Exception as error:  # sbatch may have run: report, never submit again
        from advisor.text import printable

        text = printable(str(error))
        stderr = f"advisor: error: running sbatch failed ({type(error).__name__}: {text}); check squeue before submitting again\n"
        return CommandResult(tuple(full), 1, "", stderr)


def estimate_start(argv: Sequence[str]) -> StartEstimate:
    """``sbatch --test-only`` through the Slurm adapter."""
    from advisor.slurm.backend import CliBackend

    return CliBackend().test_only(argv)


def record(db: str | None, advice: Advice) -> None:
    """One short write transaction; an absent cache is not created for it.

    A cache this user may not write is the site's published copy (contrib/site/README.md):
    the advice goes to the user's file in $ADVISOR_SPOOL instead (advisor.spool), which the
    administrator's ``advisor update --spool`` brings into the cache; without a spool nothing
    is recorded, and no warning is due (the comment tag still reaches accounting).
    """
    from advisor.store.connection import Store, db_location

    path = db_location(db)
    if not _writable(path):
        from advisor.spool import SPOOL_ENV, append_advice
        from advisor.store.clock import utc_now

        spool = os.environ.get(SPOOL_ENV)
        if spool:
            append_advice(spool, advice, utc_now())
        return
    from advisor.store.advice import record_advice

    with Store.open(path, busy_timeout_s=WRITE_BUSY_S) as store:
        record_advice(store, advice)


def cluster_name() -> str | None:
    """The cluster the advice row belongs to, read as accounting reads it (advisor.slurm.conf).

    Rows of the wrapper and of accounting are joined on (cluster, job id): one reading of
    slurm.conf for both.  It loads when a job is recorded, not before.
    """
    from advisor.slurm.conf import local_cluster_name

    return local_cluster_name()


def real() -> SideEffects:
    """The side effects of a real submission."""
    return SideEffects(
        env=os.environ,
        read_script=read_script,
        read_stdin=read_stdin,
        input_bytes=input_bytes,
        load_snapshot=load_snapshot,
        history=history,
        run_sbatch=run_sbatch,
        estimate_start=estimate_start,
        record=record,
        user=current_user,
        cluster=cluster_name,
    )
