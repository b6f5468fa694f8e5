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

from advisor.errors import SlurmCommandError, SlurmError, SlurmUnavailableError
from advisor.lite import NamedTuple

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
        policy = self.policy
        started = time.monotonic()
        try:
            try:
                result = self._once(argv, stdin)
            except TransientSlurmError as failed:
                result = self._retried(argv, stdin, failed, time.monotonic() - started)
        except TransientSlurmError as error:
            raise SlurmUnavailableError(
                f"{argv[0]}: Slurm did not answer after {policy.attempts} attempts",
                argv=argv,
                stderr=error.stderr,
                returncode=error.returncode,
                hint="check that slurmctld/slurmdbd are running (scontrol ping), then retry",
            ) from None
        if check and result.returncode != 0:
            raise SlurmCommandError(
                f"{argv[0]} exited with {result.returncode}",
                argv=argv,
                stderr=result.stderr,
                returncode=result.returncode,
            )
        return result

    def _retried(
        self,
        argv: Sequence[str],
        stdin: str | None,
        failed: TransientSlurmError,
        elapsed_s: float,
    ) -> CommandResult:
        """The policy's remaining attempts, after a first one that failed ``elapsed_s`` ago.

        tenacity counts the failed attempt as its first (it re-raises it at once), so waits,
        logging and both bounds are exactly the policy's, as if tenacity had run it.
        """
        import logging

        import tenacity

        policy = self.policy
        pending = [failed]

        def attempt() -> CommandResult:
            if pending:
                raise pending.pop()
            return self._once(argv, stdin)

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(TransientSlurmError),
            stop=tenacity.stop_after_attempt(policy.attempts)
            | tenacity.stop_after_delay(max(0.0, policy.max_delay_s - elapsed_s)),
            wait=tenacity.wait_exponential(multiplier=policy.first_wait_s, max=policy.max_wait_s),
            sleep=self.sleep,
            before_sleep=tenacity.before_sleep_log(logging.getLogger(__name__), logging.INFO),
            reraise=True,
        )
        return retrying(attempt)


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
    "tool_environment",
]
