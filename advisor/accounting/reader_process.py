"""Reading a file in a second process while this one stores what it read.

Parsing a record and working out what it contributes (``ingest.finished``) costs about as much
as storing it; with the two in different processes a large file is ingested at the speed of the
slower one instead of their sum.  The reader is a forked child that sends batches of finished
jobs through a pipe as plain values (``marshal``: this process reads only what its own child
wrote).  It starts as soon as it is made, so that it reads while this process checks the file
(update's first pass); a thread of the child writes to the pipe as fast as this process takes
what it wrote, and the child reads on while at most ``AHEAD_BYTES`` wait for the pipe: memory
does not grow with the file.  Its skip tally and progress arrive the same way.  The child dies
with its pipe: when this process is killed, its next send fails and it ends.
"""

from __future__ import annotations

import gc
import marshal
import multiprocessing
import os
import queue
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import Any, BinaryIO, Protocol, TypeVar

from advisor.accounting.ingest import Finished
from advisor.errors import AdvisorError, InputError
from advisor.progress import Progress
from advisor.validate import paused_gc

_T = TypeVar("_T")

#: Bytes of batches the child may have read that the pipe has not taken yet (a batch of BATCH
#: jobs is one or two MB): a batch or two to hand over once the first pass is done.  Small
#: enough that the child's peak memory is the same whether that pass is short or long
#: (8 MiB: its peak RSS grew 23 % from 100k to 1M sacct rows; 2 MiB: 5 %, issue #15).
AHEAD_BYTES = 2 << 20
_HEADER = 8  # bytes of a message's length


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


class _Sender:
    """The child's end of the pipe: a thread writes the messages queued, as the pipe takes them.

    The thread waits in the pipe's write (without the GIL) while the child reads on, so a
    batch goes through as fast as the parent takes it; the child waits only while more than
    AHEAD_BYTES are queued.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.messages: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self.room = threading.Condition()
        self.queued = 0  # bytes in messages
        self.broken = False  # the pipe broke: the parent is gone
        self.thread = threading.Thread(target=self._write, daemon=True)
        self.thread.start()

    def send(self, *message: Any) -> None:
        """Queue a message (BrokenPipeError once the parent is gone)."""
        data = marshal.dumps(message)
        data = len(data).to_bytes(_HEADER, "big") + data
        with self.room:
            while self.queued > AHEAD_BYTES and not self.broken:
                self.room.wait()
            if self.broken:
                raise BrokenPipeError
            self.queued += len(data)
        self.messages.put(data)

    def close(self) -> None:
        """Write everything queued and end the thread (BrokenPipeError if it could not)."""
        self.messages.put(None)
        self.thread.join()
        if self.broken:
            raise BrokenPipeError

    def _write(self) -> None:
        while (data := self.messages.get()) is not None:
            if not self.broken:
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(self.fd, view) :]
                except OSError:
                    self.broken = True
            with self.room:
                self.queued -= len(data)
                self.room.notify()


#: Batches between two full collections while the collector is paused (collected).
COLLECT_EVERY = 20


def collected(batches: Iterable[_T]) -> Iterator[_T]:
    """The batches, a full collection after every COLLECT_EVERY of them.

    For a loop over a file's batches with the cyclic collector paused (validate.paused_gc):
    each batch's thousands of records outlive the young generations, and the collections they
    trigger walk the whole heap, ~3 % of either process's time (issue #15).  Records hold no
    cycles; what else makes some is freed here, so memory stays flat whatever the file's size.
    """
    for count, batch in enumerate(batches, start=1):
        yield batch
        if count % COLLECT_EVERY == 0:
            gc.collect()


def _child(produce: Produce, tally: Tally, read_fd: int, write_fd: int) -> None:
    os.close(read_fd)  # only the parent reads: the pipe breaks when the parent is gone
    sender = _Sender(write_fd)
    try:
        try:
            batches = produce(lambda done, total: sender.send("progress", done, total))
            with paused_gc():
                for batch in collected(batches):
                    sender.send("batch", [tuple(job) for job in batch])
            sender.send("done", dict(tally.skipped), tally.warnings)
        except InputError as error:  # the file changed since it was checked
            sender.send("error", error.message, error.hint)
        sender.close()
    except BrokenPipeError:  # the writer is gone: nothing to tell
        pass
    finally:
        os.close(write_fd)


def _receive(stream: BinaryIO) -> Any:
    header = stream.read(_HEADER)
    size = int.from_bytes(header, "big") if len(header) == _HEADER else -1
    data = stream.read(size) if size >= 0 else b""
    if size < 0 or len(data) < size:
        raise EOFError
    return marshal.loads(data)  # noqa: S302 - our own child's


class ChildReader:
    """The batches produce yields, produced in a forked child that starts at once.

    produce counts into tally: the child, into its copy of it (empty so far); what it counted
    is added to this one when it is done.  Use it as a context manager: leaving it ends the
    child, whether the batches were all read or not.
    """

    def __init__(self, produce: Produce, tally: Tally, progress: Progress) -> None:
        self.tally, self.progress = tally, progress
        read_fd, write_fd = os.pipe()
        context = multiprocessing.get_context("fork")
        self.child = context.Process(
            target=_child, args=(produce, tally, read_fd, write_fd), daemon=True
        )
        try:
            self.child.start()
        finally:
            os.close(write_fd)
        self.stream = os.fdopen(read_fd, "rb")

    def __enter__(self) -> ChildReader:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """End the child and the pipe."""
        self.stream.close()
        if self.child.is_alive():
            self.child.terminate()
        self.child.join()

    def __iter__(self) -> Iterator[list[Finished]]:
        while True:
            try:
                message = _receive(self.stream)
            except EOFError:
                self.child.join()
                raise AdvisorError(
                    f"the process reading the file ended early (exit code {self.child.exitcode})"
                ) from None
            what = message[0]
            if what == "batch":
                yield [Finished._make(values) for values in message[1]]
            elif what == "progress":
                self.progress(message[1], message[2])
            elif what == "done":
                self.tally.skipped.update(message[1])
                self.tally.warnings.extend(message[2])
                return
            else:
                raise InputError(message[1], hint=message[2])
