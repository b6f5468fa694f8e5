"""Reading a file in a second process while this one stores what it read.

Parsing a record and working out what it contributes (``ingest.finished``) costs about as much
as storing it; with the two in different processes a large file is ingested at the speed of the
slower one instead of their sum.  The reader is a forked child that sends batches of finished
jobs through a pipe as plain values (``marshal``: this process reads only what its own child
wrote); it is at most one batch ahead, so memory does not grow with the file.  Its skip tally
and progress arrive the same way.  The child dies with its pipe: when this process is killed,
its next send fails and it ends.
"""

from __future__ import annotations

import marshal
import multiprocessing
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from advisor.accounting.ingest import Finished
from advisor.errors import AdvisorError, InputError

Progress = Callable[[int, int | None], None]


class Tally(Protocol):
    """What a reader counts as it skips rows (update.SkipTally)."""

    skipped: Counter[str]
    warnings: list[str]


#: What a reader does: yield batches of finished jobs (counting what it skips into a tally),
#: telling its progress.
Produce = Callable[[Progress | None], Iterator[list[Finished]]]


def can_fork() -> bool:
    """True where a child can be forked (the reader needs the parent's state, not a pickle)."""
    return "fork" in multiprocessing.get_all_start_methods()


def _send(pipe: Any, *message: Any) -> None:
    pipe.send_bytes(marshal.dumps(message))


def _child(produce: Produce, tally: Tally, pipe: Any) -> None:
    try:
        for batch in produce(lambda done, total: _send(pipe, "progress", done, total)):
            _send(pipe, "batch", [tuple(job) for job in batch])
        _send(pipe, "done", dict(tally.skipped), tally.warnings)
    except InputError as error:  # the file changed since it was checked
        _send(pipe, "error", error.message, error.hint)
    except BrokenPipeError:  # the writer is gone: nothing to tell
        pass
    finally:
        pipe.close()


def read_in_child(produce: Produce, tally: Tally, progress: Progress) -> Iterator[list[Finished]]:
    """The batches produce yields, produced in a forked child.

    produce counts into tally: the child, into its copy of it (empty so far); what it counted
    is added to this one when it is done.
    """
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(produce, tally, send), daemon=True)
    child.start()
    send.close()
    try:
        while True:
            try:
                message = marshal.loads(receive.recv_bytes())  # noqa: S302 - our own child's
            except EOFError:
                child.join()
                raise AdvisorError(
                    f"the process reading the file ended early (exit code {child.exitcode})"
                ) from None
            what = message[0]
            if what == "batch":
                yield [Finished._make(values) for values in message[1]]
            elif what == "progress":
                progress(message[1], message[2])
            elif what == "done":
                tally.skipped.update(message[1])
                tally.warnings.extend(message[2])
                return
            else:
                raise InputError(message[1], hint=message[2])
    finally:
        receive.close()
        if child.is_alive():
            child.terminate()
        child.join()
