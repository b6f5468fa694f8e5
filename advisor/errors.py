"""Typed errors; the CLI maps them to exit codes in one place (advisor.cli.app.run).

Exit codes: 0 ok, 1 operational error (Slurm or the cache failed), 2 bad usage or bad input.
"""

from __future__ import annotations

from collections.abc import Sequence


class AdvisorError(Exception):
    """Base of every error the advisor raises on purpose."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        """The message and what to do next, on one line (what is not printable is escaped)."""
        from advisor.text import printable

        text = self.message if not self.hint else f"{self.message}; {self.hint}"
        return printable(text)


class InputError(AdvisorError):
    """A file, argument or record the user gave us is malformed."""

    exit_code = 2

    def __init__(self, message: str, *, source: str | None = None, hint: str | None = None) -> None:
        super().__init__(f"{source}: {message}" if source else message, hint=hint)
        self.source = source


class UsageError(InputError):
    """The command line itself is wrong."""


class UnknownTaskError(InputError):
    """A task has no model and no observations."""

    def __init__(self, task: str, known: Sequence[str]) -> None:
        shown = ", ".join(sorted(known)[:20]) or "none"
        more = f" (+{len(known) - 20} more)" if len(known) > 20 else ""
        super().__init__(
            f"unknown task {task!r}",
            hint=f"known tasks: {shown}{more}",
        )
        self.task = task


class InvalidWorkflowError(InputError):
    """A workflow is structurally wrong: a cycle, an unknown parent, duplicate ids."""


class SlurmError(AdvisorError):
    """A Slurm command failed; carries the argv and stderr for the message."""

    def __init__(
        self,
        message: str,
        *,
        argv: Sequence[str] = (),
        stderr: str = "",
        returncode: int | None = None,
        hint: str | None = None,
    ) -> None:
        detail = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        full = f"{message}: {detail}" if detail else message
        super().__init__(full, hint=hint)
        self.argv = tuple(argv)
        self.stderr = stderr
        self.returncode = returncode


class SlurmUnavailableError(SlurmError):
    """slurmctld or slurmdbd did not answer (after the bounded retries)."""


class SlurmCommandError(SlurmError):
    """A Slurm command answered with a permanent error (bad option, rejected job)."""


class SlurmTimeoutError(SlurmUnavailableError):
    """A Slurm query gave no whole answer within its time-out (not retried: ask for less)."""


class SlurmOutputTooLarge(SlurmError):
    """A Slurm query printed more than its caller's budget; it was stopped (ask for less)."""


class CacheError(AdvisorError):
    """The SQLite cache is unusable: newer schema, corrupt file, locked for too long."""
