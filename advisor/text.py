r"""Text that came from bytes (Slurm's output, argv, job comments) as SQLite can store it.

Python hands over bytes that are not UTF-8 as lone surrogates (``surrogateescape``: a job named
with byte 0xff arrives as ``"\\udcff"``), and SQLite's text is strict UTF-8: storing such a string
raises UnicodeEncodeError.  One user's odd job name must not stop accounting or cost a job its
advice row, so these bytes become U+FFFD (what any UTF-8 reader shows for them).
"""

from __future__ import annotations


def storable(text: str) -> str:
    """The text with every lone surrogate replaced by U+FFFD (unchanged when there is none)."""
    if text.isascii():
        return text
    try:  # surrogates that stand for bytes: decode those bytes as any UTF-8 reader would
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        return text.encode("utf-8", "replace").decode("utf-8")
