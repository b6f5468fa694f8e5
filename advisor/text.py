r"""Text that came from bytes (Slurm's output, argv, job comments) as SQLite can store it.

Python hands over bytes that are not UTF-8 as lone surrogates (``surrogateescape``: a job named
with byte 0xff arrives as ``"\\udcff"``), and SQLite's text is strict UTF-8: storing such a string
raises UnicodeEncodeError.  One user's odd job name must not stop accounting or cost a job its
advice row, so these bytes become U+FFFD (what any UTF-8 reader shows for them).
"""

from __future__ import annotations

#: RFC 3986's unreserved characters: never percent-encoded.
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-")


def storable(text: str) -> str:
    """The text with every lone surrogate replaced by U+FFFD (unchanged when there is none)."""
    if text.isascii():
        return text
    try:  # surrogates that stand for bytes: decode those bytes as any UTF-8 reader would
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        return text.encode("utf-8", "replace").decode("utf-8")


def printable(text: str, *, keep: str = "") -> str:
    r"""The text with every character that is not printable escaped as Python writes it.

    ``]52;c;...`` (a clipboard write), ``[2J`` (a screen clear), ``
    ``, ``‮``
    (right-to-left override): what a job name or a tag carries to an administrator's terminal
    becomes visible text instead of acting on it.  keep: characters left as they are (a note's
    line breaks and tabs).
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else repr(c)[1:-1] for c in text)


def ascii_int(text: str, *, max_digits: int = 18) -> int | None:
    """The whole number that text spells in ASCII digits alone (at most max_digits), else None.

    What Slurm's and the advisor's own writers print.  int() also reads '١' (1), '１', ' 1',
    '+1' and '1_0', and str.isdigit() is True for '²', which int() refuses with ValueError.
    """
    if 0 < len(text) <= max_digits and text.isascii() and text.isdigit():
        return int(text)
    return None


def percent_encode(text: str, *, safe: str = "") -> str:
    """UTF-8 bytes outside ``A-Za-z0-9._~-`` (and ``safe``) as ``%XX``.

    urllib.parse.quote's result, without importing urllib (the sbatch wrapper uses this).
    """
    keep = _UNRESERVED | frozenset(safe.encode("ascii"))
    data = text.encode("utf-8", "surrogateescape")
    return "".join(chr(b) if b in keep else f"%{b:02X}" for b in data)


def percent_decode(text: str) -> str:
    """Inverse of percent_encode."""
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "%" and _is_hex(text[i + 1 : i + 3]):
            out.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            out.extend(text[i].encode("utf-8", "surrogateescape"))
            i += 1
    return out.decode("utf-8", "surrogateescape")


def _is_hex(pair: str) -> bool:
    return len(pair) == 2 and all(c in "0123456789abcdefABCDEF" for c in pair)
