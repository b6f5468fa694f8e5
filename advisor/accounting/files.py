"""Opening the logs the advisor reads: text and JSON streamed, one-line errors naming the file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from advisor.errors import InputError


def open_text(path: str | Path, *, lines_end_at: str = "") -> TextIO:
    r"""The file opened for reading as UTF-8, newlines kept as they are.

    ``lines_end_at="\n"`` splits lines at ``\n`` only (not at a lone ``\r``), and bytes that
    are not UTF-8 come as lone surrogates (``surrogateescape``) instead of an error: a sacct
    dump holds users' job names, which may be anything.
    """
    errors = "surrogateescape" if lines_end_at else "strict"
    try:
        return Path(path).open(encoding="utf-8", errors=errors, newline=lines_end_at)
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", source=str(path)) from None


class _Stream:
    """A text stream read in blocks, with the line number of the read position."""

    def __init__(self, stream: TextIO, source: str, block: int, limit: int) -> None:
        self.stream, self.source, self.block, self.limit = stream, source, block, limit
        self.buf, self.pos, self.eof = "", 0, False
        self.line, self._counted = 1, 0  # the line of buf[self._counted]
        self.decoder = json.JSONDecoder()

    def fill(self, size: int = 0) -> bool:
        if self.eof:
            return False
        if self._counted > self.block:  # drop what was read: memory stays one value wide
            self.buf, self.pos, self._counted = (
                self.buf[self._counted :],
                self.pos - self._counted,
                0,
            )
        data = self.stream.read(max(self.block, size))
        self.eof = not data
        self.buf += data
        return not self.eof

    def where(self) -> int:
        self.line += self.buf.count("\n", self._counted, self.pos)
        self._counted = self.pos
        return self.line

    def fail(self, message: str) -> InputError:
        return InputError(f"line {self.where()}: {message}", source=self.source)

    def skip_space(self) -> str:
        """The next character after white space ('' at the end)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.fill():
                return ""

    def expect(self, chars: str) -> str:
        found = self.skip_space()
        if not found or found not in chars:
            shown = " or ".join(repr(c) for c in chars)
            raise self.fail(f"expected {shown}, found {found[:1]!r} (not sacct --json output?)")
        self.pos += 1
        return found

    def value(self) -> object:
        self.skip_space()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except RecursionError:
                raise self.fail("a JSON value nested too deep") from None
            except json.JSONDecodeError as error:
                if len(self.buf) - self.pos > self.limit:
                    raise self.fail(f"a JSON value over {self.limit >> 20} MiB") from None
                if not self.fill(
                    len(self.buf) - self.pos
                ):  # doubling: a long value costs O(n log n)
                    raise self.fail(f"not JSON: {error.msg}") from None
                continue
            except ValueError as error:  # int() of more than 4300 digits
                raise self.fail(f"not a JSON number sacct prints: {str(error)[:80]}") from None
            if end == len(self.buf) and self.fill():  # a number may go on in the next block
                continue
            self.pos = end
            return value


def read_json_array(
    path: str | Path, key: str, *, block: int = 1 << 16, limit: int = 64 << 20
) -> Iterator[tuple[int, object]]:
    """(line, item) of the array under ``key`` in the file's top-level object, streamed.

    Memory holds one item at a time (at most ``limit`` characters), not the file: sacct --json
    of a year of a big site is gigabytes.  InputError names the line of anything malformed.
    """
    source = str(path)
    with open_text(path, lines_end_at="\n") as handle:
        stream = _Stream(handle, source, block, limit)
        stream.expect("{")
        found = False
        if stream.skip_space() == "}":
            stream.pos += 1
        else:
            while True:
                name = stream.value()
                if not isinstance(name, str):
                    raise stream.fail("expected a key")
                stream.expect(":")
                if name == key:
                    found = True
                    yield from _items(stream)
                else:
                    stream.value()
                if stream.expect(",}") == "}":
                    break
        if stream.skip_space():
            raise stream.fail("text after the JSON object")
        if not found:
            raise InputError(f"no {key!r} list in the JSON object", source=source)


def _items(stream: _Stream) -> Iterator[tuple[int, object]]:
    stream.expect("[")
    if stream.skip_space() == "]":
        stream.pos += 1
        return
    while True:
        stream.skip_space()
        line = stream.where()
        yield line, stream.value()
        if stream.expect(",]") == "]":
            return
