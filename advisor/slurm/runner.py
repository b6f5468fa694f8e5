"""Runs Slurm's command-line tools: argv lists, time-outs, and the one retry policy.

Only transient failures are retried (slurmctld or slurmdbd restarting or overloaded), bounded
in attempts and in time; a permanent error (bad option, rejected job) fails at once.

The sbatch wrapper runs every submission through here, so the first attempt is a plain call:
tenacity and logging (~20 ms to import) load only once an attempt has failed transiently.
"""

from __future__ import annotations

import math
import os
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence

from advisor.errors import (
    SlurmCommandError,
    SlurmError,
    SlurmOutputTooLarge,
    SlurmTimeoutError,
    SlurmUnavailableError,
)
from advisor.lite import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # the wrapper's submit path loads no typing
    from typing import Protocol, TypeVar

    _T = TypeVar("_T")
    _R = TypeVar("_R")
    _T_co = TypeVar("_T_co", covariant=True)

    class Sink(Protocol[_T_co]):
        """What ``SlurmCommands.consume`` feeds a command's output to."""

        def feed(self, text: str) -> None:
            """The next piece of the output (any length, cut anywhere)."""
            ...

        def finish(self) -> _T_co:
            """What the whole output made (called once it ended, and only if it ended well)."""
            ...


#: Messages that mean "try again soon" (slurm_strerror texts and client messages).
TRANSIENT_MARKERS: tuple[str, ...] = (
    "Socket timed out",
    "temporarily unavailable",
    "Temporarily unable",
    "Unable to contact slurm controller",
    "Unable to connect to database",
    "Connection refused",
    "Zero Bytes were transmitted or received",
    "slurm_persist_conn_open",
    "Problem talking to the database",
    "Slurm backup controller in standby mode",
    "Resource temporarily unavailable",
    "Communication connection failure",
    "Connection reset by peer",  # 24.11: slurmctld stopped while it served the request
)


#: The tools whose output the advisor parses: they run in ``query_environment``.
QUERY_TOOLS = frozenset({"sacct", "sacctmgr", "scontrol", "sinfo", "squeue"})
#: Variables that change what those tools print: sacct(1) "ENVIRONMENT VARIABLES" (and
#: SACCT_FORMAT, which sacct reads as well), and every SACCT_/SINFO_/SQUEUE_ default.
#: SLURM_CONF stays: it says which cluster to ask.
QUERY_ENV_DROPPED = frozenset(
    {
        "SLURM_BITSTR_LEN",  # shortens array task lists: 4103947_[1-3...]
        "SLURM_CLUSTERS",  # other clusters' records, and "CLUSTER:" lines
        "SLURM_DEBUG_FLAGS",
        "SLURM_FEDERATION",
        "SLURM_TIME_FORMAT",  # set to "standard" instead
    }
)
QUERY_ENV_PREFIXES = ("SACCT_", "SINFO_", "SQUEUE_", "SCONTROL_")


def query_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without what changes the output of the tools the advisor parses.

    Times come as ``SLURM_TIME_FORMAT=standard`` (``2024-05-01T08:00:00``) whatever the site set.
    """
    environ = os.environ if environ is None else environ
    kept = {
        name: value
        for name, value in environ.items()
        if name not in QUERY_ENV_DROPPED and not name.startswith(QUERY_ENV_PREFIXES)
    }
    kept["SLURM_TIME_FORMAT"] = "standard"
    return kept


def tool_environment(argv: Sequence[str]) -> dict[str, str] | None:
    """The environment a Slurm command runs in: None (the caller's) unless its output is parsed.

    A submission keeps the caller's environment, since the job inherits it; ``sbatch
    --test-only`` creates no job and its start time is parsed, so it gets the query's.
    """
    name = os.path.basename(argv[0]) if argv else ""
    if name in QUERY_TOOLS or (name == "sbatch" and list(argv[1:2]) == ["--test-only"]):
        return query_environment()
    return None


class CommandResult(NamedTuple):
    """What a finished command printed."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


Runner = Callable[[Sequence[str], float, str | None], CommandResult]


class TransientSlurmError(SlurmUnavailableError):
    """One failed attempt that is worth repeating."""


def run_subprocess(
    argv: Sequence[str], timeout_s: float, stdin: str | None = None
) -> CommandResult:
    """Run argv without a shell; a time-out or a missing program is a SlurmError.

    Every byte in and out survives: text is decoded and encoded as UTF-8 with ``surrogateescape``, so output that is not UTF-8
    (a job name in Latin-1) is written back unchanged, and a script read from our stdin reaches
    sbatch's stdin byte for byte.  An infinite timeout_s waits as long as the command runs
    (``sbatch --wait``).  Query tools run in ``query_environment`` (``tool_environment``).
    """
    try:
        done = subprocess.run(
            list(argv),
            input=stdin.encode("utf-8", "surrogateescape") if stdin is not None else None,
            capture_output=True,
            timeout=None if math.isinf(timeout_s) else timeout_s,
            check=False,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            env=tool_environment(argv),
        )
    except FileNotFoundError:
        raise SlurmUnavailableError(
            f"{argv[0]} not found on PATH", argv=argv, hint="install the Slurm client tools"
        ) from None
    except subprocess.TimeoutExpired as expired:
        err = expired.stderr.decode(errors="replace") if isinstance(expired.stderr, bytes) else ""
        raise TransientSlurmError(
            f"{argv[0]} did not answer within {timeout_s:g} s", argv=argv, stderr=err or ""
        ) from None
    return CommandResult(
        tuple(argv),
        done.returncode,
        done.stdout.decode("utf-8", "surrogateescape"),
        done.stderr.decode("utf-8", "surrogateescape"),
    )


def is_transient(result: CommandResult) -> bool:
    """True when the failure says Slurm is restarting or busy, not that we asked wrongly."""
    text = result.stderr + result.stdout
    return any(marker.lower() in text.lower() for marker in TRANSIENT_MARKERS)


class RetryPolicy(NamedTuple):
    """Bounds of the one retry policy (attempts, total seconds, back-off)."""

    attempts: int = 4
    max_delay_s: float = 30.0
    first_wait_s: float = 0.5
    max_wait_s: float = 4.0


class SlurmCommands:
    """Runs Slurm tools with time-outs and the retry policy; returns results or raises."""

    def __init__(
        self,
        runner: Runner = run_subprocess,
        *,
        policy: RetryPolicy | None = None,
        timeout_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.runner = runner
        self.policy = policy or RetryPolicy()
        self.timeout_s = timeout_s
        self.sleep = sleep

    def _once(self, argv: Sequence[str], stdin: str | None) -> CommandResult:
        result = self.runner(argv, self.timeout_s, stdin)
        if result.returncode != 0 and is_transient(result):
            raise TransientSlurmError(
                f"{argv[0]} failed", argv=argv, stderr=result.stderr, returncode=result.returncode
            )
        return result

    def run(
        self, argv: Sequence[str], *, stdin: str | None = None, check: bool = True
    ) -> CommandResult:
        """Run argv, retrying transient failures; with check, a non-zero exit raises."""
        result = self._with_retries(argv, lambda: self._once(argv, stdin))
        if check and result.returncode != 0:
            raise SlurmCommandError(
                f"{argv[0]} exited with {result.returncode}",
                argv=argv,
                stderr=result.stderr,
                returncode=result.returncode,
            )
        return result

    def consume(
        self,
        argv: Sequence[str],
        new_sink: Callable[[], Sink[_T]],
        *,
        timeout_s: float | None = None,
        max_bytes: int | None = None,
    ) -> _T:
        """Run argv and feed its output to a new sink as it comes; what the sink makes of it.

        The output is never held whole: the sink parses it chunk by chunk.  A transient
        failure is retried by the policy, each attempt with a new sink.  With timeout_s (the
        call's own, instead of the runner's) a call that does not end in time raises
        SlurmTimeoutError, and one that prints over max_bytes SlurmOutputTooLarge; neither is
        retried, since asking again for the same would fail the same way.  A non-zero exit
        that is not transient is a SlurmCommandError.
        """
        own_timeout = timeout_s is not None
        limit = self.timeout_s if timeout_s is None else timeout_s
        cap = max_bytes if max_bytes is not None else 1 << 62

        def attempt() -> tuple[int, str, _T]:
            sink = new_sink()
            try:
                if self.runner is run_subprocess:
                    code, stderr = stream_subprocess(argv, limit, cap, sink.feed)
                else:  # a runner given for tests: its whole output, fed in chunks
                    result = self.runner(argv, limit, None)
                    code, stderr = result.returncode, result.stderr
                    _feed_chunks(argv, result.stdout, cap, sink.feed)
            except _StreamTimeout as timeout:
                if own_timeout:
                    raise SlurmTimeoutError(timeout.message, argv=argv) from None
                raise
            if code != 0 and is_transient(CommandResult(tuple(argv), code, "", stderr)):
                raise TransientSlurmError(
                    f"{argv[0]} failed", argv=argv, stderr=stderr, returncode=code
                )
            if code != 0:
                raise SlurmCommandError(
                    f"{argv[0]} exited with {code}", argv=argv, stderr=stderr, returncode=code
                )
            return code, stderr, sink.finish()

        return self._with_retries(argv, attempt)[2]

    def _with_retries(self, argv: Sequence[str], attempt: Callable[[], _R]) -> _R:
        """attempt(), retried while it raises TransientSlurmError, within the policy's bounds."""
        policy = self.policy
        started = time.monotonic()
        try:
            try:
                return attempt()
            except TransientSlurmError as failed:
                return self._retried(attempt, failed, time.monotonic() - started)
        except TransientSlurmError as error:
            raise SlurmUnavailableError(
                f"{argv[0]}: Slurm did not answer after {policy.attempts} attempts",
                argv=argv,
                stderr=error.stderr,
                returncode=error.returncode,
                hint="check that slurmctld/slurmdbd are running (scontrol ping), then retry",
            ) from None

    def _retried(
        self, attempt: Callable[[], _R], failed: TransientSlurmError, elapsed_s: float
    ) -> _R:
        """The policy's remaining attempts, after a first one that failed ``elapsed_s`` ago.

        tenacity counts the failed attempt as its first (it re-raises it at once), so waits,
        logging and both bounds are exactly the policy's, as if tenacity had run it.
        """
        import logging

        import tenacity

        policy = self.policy
        pending = [failed]

        def again() -> _R:
            if pending:
                raise pending.pop()
            return attempt()

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(TransientSlurmError),
            stop=tenacity.stop_after_attempt(policy.attempts)
            | tenacity.stop_after_delay(max(0.0, policy.max_delay_s - elapsed_s)),
            wait=tenacity.wait_exponential(multiplier=policy.first_wait_s, max=policy.max_wait_s),
            sleep=self.sleep,
            before_sleep=tenacity.before_sleep_log(logging.getLogger(__name__), logging.INFO),
            reraise=True,
        )
        return retrying(again)


class _StreamTimeout(TransientSlurmError):
    """A streamed command's own time-out (SlurmTimeoutError when the caller set it)."""


#: What a streamed command's output is read (and fed) in.
CHUNK_BYTES = 1 << 20
#: A command's stderr kept, at most (its last line names the failure).
STDERR_BYTES = 1 << 16


def _feed_chunks(
    argv: Sequence[str], text: str, max_bytes: int, feed: Callable[[str], None]
) -> None:
    """A whole output fed as stream_subprocess would feed it, with the same byte budget."""
    size = 0
    for start in range(0, len(text), CHUNK_BYTES):
        chunk = text[start : start + CHUNK_BYTES]
        size += len(chunk.encode("utf-8", "surrogateescape"))
        if size > max_bytes:
            raise SlurmOutputTooLarge(
                f"{argv[0]} printed more than {max_bytes} bytes; stopped", argv=argv
            )
        feed(chunk)


def stream_subprocess(
    argv: Sequence[str], timeout_s: float, max_bytes: int, feed: Callable[[str], None]
) -> tuple[int, str]:
    """Run argv without a shell, feeding its stdout to feed as it comes; (exit code, stderr).

    Decoded as run_subprocess decodes (UTF-8, surrogateescape), in pieces of up to
    CHUNK_BYTES.  Past timeout_s (_StreamTimeout) or max_bytes of output
    (SlurmOutputTooLarge), or when feed raises, the command is killed; it never outlives
    the call.
    """
    import codecs
    import selectors

    try:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=tool_environment(argv),
        )
    except FileNotFoundError:
        raise SlurmUnavailableError(
            f"{argv[0]} not found on PATH", argv=argv, hint="install the Slurm client tools"
        ) from None
    out, err = process.stdout, process.stderr
    if out is None or err is None:  # both are pipes: for the type checker
        process.kill()
        raise SlurmUnavailableError(f"{argv[0]}: no pipes", argv=argv)
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    deadline = time.monotonic() + timeout_s
    stderr, size = bytearray(), 0
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(out, selectors.EVENT_READ, "out")
            selector.register(err, selectors.EVENT_READ, "err")
            while selector.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _StreamTimeout(
                        f"{argv[0]} did not answer within {timeout_s:g} s",
                        argv=argv,
                        stderr=stderr.decode("utf-8", "replace"),
                    )
                for key, _ in selector.select(left):
                    data = os.read(key.fd, CHUNK_BYTES)
                    if not data:
                        selector.unregister(key.fileobj)
                    elif key.data == "err":
                        stderr += data
                        del stderr[:-STDERR_BYTES]
                    else:
                        size += len(data)
                        if size > max_bytes:
                            raise SlurmOutputTooLarge(
                                f"{argv[0]} printed more than {max_bytes} bytes; stopped",
                                argv=argv,
                            )
                        feed(decoder.decode(data))
        feed(decoder.decode(b"", final=True))
        try:
            code = process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise _StreamTimeout(
                f"{argv[0]} did not answer within {timeout_s:g} s", argv=argv
            ) from None
    finally:
        if process.returncode is None:
            process.kill()
            process.wait()
        out.close()
        err.close()
    return code, stderr.decode("utf-8", "surrogateescape")


#: sbatch failures after which the job may exist all the same (the reply was lost on the way).
AMBIGUOUS_SUBMIT_MARKERS: tuple[str, ...] = (
    "Socket timed out",
    "Zero Bytes were transmitted or received",
    "Connection reset by peer",  # 24.11, slurmctld stopped mid-request: it may have taken the job
)


class AmbiguousSubmitError(SlurmCommandError):
    """A submission failed in a way that leaves open whether the job was created: never retried."""

    def __init__(self, result: CommandResult, message: str) -> None:
        super().__init__(
            message, argv=result.argv, stderr=result.stderr, returncode=result.returncode
        )
        self.result = result


def no_resubmit(runner: Runner) -> Runner:
    """A runner for submissions: retries only failures that certainly created no job.

    "Unable to contact slurm controller" is safe to repeat; a socket time-out after the request
    was sent, or our own time-out, may have left a job behind, so it is raised at once.
    """

    def run(argv: Sequence[str], timeout_s: float, stdin: str | None = None) -> CommandResult:
        try:
            result = runner(argv, timeout_s, stdin)
        except TransientSlurmError as error:
            lost = CommandResult(
                tuple(argv), error.returncode or 1, "", error.stderr or error.message
            )
            raise AmbiguousSubmitError(lost, error.message) from None
        text = (result.stderr + result.stdout).lower()
        if result.returncode != 0 and any(m.lower() in text for m in AMBIGUOUS_SUBMIT_MARKERS):
            raise AmbiguousSubmitError(result, f"{argv[0]}: the job may have been submitted")
        return result

    return run


__all__ = [
    "AmbiguousSubmitError",
    "CommandResult",
    "RetryPolicy",
    "SlurmCommands",
    "SlurmError",
    "TransientSlurmError",
    "is_transient",
    "no_resubmit",
    "query_environment",
    "run_subprocess",
    "stream_subprocess",
    "tool_environment",
]
