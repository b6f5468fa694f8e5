"""A progress bar on stderr when stderr is a terminal, and nothing at all otherwise.

Long commands (profile, update, calibrate, replay, report accuracy, submitting large workflows)
show where they are on a terminal, and stay silent when piped, redirected or run from cron, so
their output stays machine-readable.  ``ADVISOR_PROGRESS=0`` turns the bar off on a terminal
too, ``ADVISOR_PROGRESS=1`` forces it on (for a terminal multiplexer that hides its TTY).
Redraws are throttled (10 per second), so a loop of a million cheap steps does not spend its
time writing to the terminal.  Standard library only: the sbatch wrapper may use it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import TextIO, TypeVar

T = TypeVar("T")

#: What long work reports to as it goes: (done, total), total None while unknown.  A
#: ProgressBar is one; tests pass a list's append wrapped in a lambda, or nothing.
Progress = Callable[[int, int | None], None]
#: Where a use case gets a labelled Progress for each phase (the CLI passes ProgressBar).
Bars = Callable[[str], AbstractContextManager[Progress | None]]

#: Environment variable: 0 turns the bar off, 1 forces it on, unset follows the terminal.
ENV = "ADVISOR_PROGRESS"


#: Set by ``--quiet``: no bar, whatever the terminal or ENV says.
_silenced = False


def silence() -> None:
    """No bars from now on in this process (``--quiet``)."""
    global _silenced
    _silenced = True


def wanted(stream: TextIO) -> bool:
    """True when a bar should be drawn on stream (see ENV); never after silence()."""
    if _silenced:
        return False
    setting = os.environ.get(ENV, "").strip()
    if setting in ("0", "1"):
        return setting == "1"
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


class ProgressBar:
    """``label [#####.....] done/total note`` redrawn in place; a Progress (``(done, total)``)."""

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        interval_s: float = 0.1,
        width: int = 30,
    ) -> None:
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = wanted(self.stream) if enabled is None else enabled
        self.clock = clock
        self.interval_s = interval_s
        self.width = width
        self.done = 0
        self.note = ""
        self._drawn_at: float | None = None

    def line(self) -> str:
        """The text of the bar as it stands."""
        note = f" {self.note}" if self.note else ""
        if not self.total:
            return f"{self.label}: {self.done}{note}"
        filled = self.width * min(self.done, self.total) // self.total
        bar = "#" * filled + "." * (self.width - filled)
        return f"{self.label} [{bar}] {self.done}/{self.total}{note}"

    def update(self, done: int, total: int | None = None, note: str | None = None) -> None:
        """Set the count (and the total, and a short note such as failed items); redraw if due."""
        self.done = done
        if total is not None:
            self.total = total
        if note is not None:
            self.note = note
        if not self.enabled:
            return
        now = self.clock()
        finished = self.total is not None and self.done >= self.total
        if finished or self._drawn_at is None or now - self._drawn_at >= self.interval_s:
            self._draw(now)

    def __call__(self, done: int, total: int | None = None) -> None:
        """Same as update: what makes a ProgressBar a Progress."""
        self.update(done, total)

    def advance(self, step: int = 1, note: str | None = None) -> None:
        """One (or step) more done."""
        self.update(self.done + step, note=note)

    def _draw(self, now: float) -> None:
        self.stream.write(f"\r{self.line()}\x1b[K")
        self.stream.flush()
        self._drawn_at = now

    def close(self) -> None:
        """Draw the final state and end the line (only if anything was drawn)."""
        if self.enabled and self._drawn_at is not None:
            self._draw(self.clock())
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def track(
    items: Iterable[T], label: str, total: int | None = None, *, stream: TextIO | None = None
) -> Iterator[T]:
    """The items, one by one, with a bar (total: len(items) when it has one)."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with ProgressBar(label, total, stream=stream) as bar:
        for item in items:
            yield item
            bar.advance()
