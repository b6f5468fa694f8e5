"""What every fuzz module shares: hostile values, strategies, the example budget, the one rule.

Unit tests of splitting take SEPARATORS from here too.

The rule: a parser or importer either returns, or raises ``advisor.errors.InputError`` (whose
one-line message is what the CLI prints).  Any other exception fails the test with its
traceback: that is a bug in the parser, not in the input.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from advisor.errors import InputError

T = TypeVar("T")

#: ``ADVISOR_FUZZ_SCALE=100`` turns the bounded CI run into a long campaign;
#: ``ADVISOR_FUZZ_EXAMPLES=100000`` gives every fuzz test that many examples instead.
SCALE = max(1, int(os.environ.get("ADVISOR_FUZZ_SCALE", "1")))
EXAMPLES = int(os.environ.get("ADVISOR_FUZZ_EXAMPLES", "0"))


def budget(examples: int) -> settings:
    """Bounded examples (see SCALE and EXAMPLES), no deadline: the machine is shared."""
    return settings(
        max_examples=EXAMPLES or examples * SCALE,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def outcome(parse: Callable[..., T], *args: Any, **kwargs: Any) -> T | InputError:
    """The parser's result, or the InputError it raised (anything else propagates).

    Under hypothesis each call is counted (``--hypothesis-show-statistics``), so a strategy
    that only ever produces rejected input shows.
    """
    try:
        result = parse(*args, **kwargs)
    except InputError as error:
        line = error.one_line()
        assert line and "\n" not in line and "\r" not in line
        count(f"{getattr(parse, '__name__', 'parse')}: input error")
        return error
    count(f"{getattr(parse, '__name__', 'parse')}: accepted")
    return result


#: Exact counts of every call through ``outcome`` and ``count``: (test id, label) -> calls.  The
#: conftest prints them after a run with ``ADVISOR_FUZZ_EXAMPLES`` (hypothesis's own statistics
#: give the same as rounded percentages).
COUNTS: Counter[tuple[str, str]] = Counter()


def count(label: str) -> None:
    """Count one call of the current test under label (and show it as a hypothesis event)."""
    if currently_in_test_context():
        event(label)
    COUNTS[(os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0], label)] += 1


def rejected(parse: Callable[..., object], *args: Any, **kwargs: Any) -> InputError:
    """The InputError a hostile value must cause (the test fails if it is accepted)."""
    result = outcome(parse, *args, **kwargs)
    assert isinstance(result, InputError), f"accepted: {result!r}"[:300]
    return result


# --- hostile values ----------------------------------------------------------------------------

#: Numbers that break naive float()/int()/round(): overflow, the 4300-digit int limit,
#: non-finite spellings, non-ASCII digits, signs and separators in odd places.
HOSTILE_NUMBERS: tuple[str, ...] = (
    "0", "-0", "-1", "1.5", "1e400", "-1e400", "1e-400", "1" * 400, "9" * 5000, "1." + "0" * 5000,
    "NaN", "nan", "inf", "-inf", "Infinity", "1_000", "0x10", "1e", ".", "-", "+1", " 1 ", "１",
    "٣", "²", "1,5", "18446744073709551616", "9223372036854775808", "-9223372036854775809",
)  # fmt: skip

#: Strings that break naive quoting, splitting, SQL, shells, JSON or terminals.
HOSTILE_STRINGS: tuple[str, ...] = (
    "", " ", "\t", "\n", "\r\n", "a\nb", "\x00", "\x7f", "\x1b[2J", "|", ",", ";", ":", "=", "#",
    "'", '"', "\\", "%", "%s%n", "${HOME}", "$(id)", "`id`", "a b", "--", "-", "--time=1", "..",
    "../x", "a.b", "/etc/passwd", "users", "tasks", "partitions", "__index", "NULL", "None",
    "Unknown", "'; DROP TABLE observations; --", "' OR '1'='1", "é", "🙂", "\u202e", "\ufeff",
    "\udcff", "[", "]", "{", "}", "[]", "{}", "x" * 300,
)  # fmt: skip

#: Text that survives a round trip through UTF-8 with surrogateescape (what argv and files hold).
argv_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=24
) | st.sampled_from([s for s in HOSTILE_STRINGS if s != "\x00"])

numberish = st.one_of(
    st.sampled_from(HOSTILE_NUMBERS),
    st.integers().map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.from_regex(r"-?[0-9]{0,4}(\.[0-9]{0,3})?([eE][+-]?[0-9]{1,4})?", fullmatch=True),
)

#: A field value: a number-like token, a hostile string, or anything.
field = st.one_of(numberish, st.sampled_from(HOSTILE_STRINGS), st.text(max_size=16))
#: A cell of a table: hostile half the time, else a plausible number (so rows get further in).
cell = st.one_of(field, st.integers(0, 10**6).map(str), st.floats(0, 1e6).map(repr))


def write(path: Path, data: str | bytes) -> Path:
    """Write text (surrogates become the raw bytes they stand for) or bytes."""
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape")
    path.write_bytes(raw)
    return path


#: JSON tokens a Python dict cannot hold, spliced into documents as raw text.
RAW_JSON_TOKENS: tuple[str, ...] = (
    "1e400", "-1e400", "1" * 5000, "-" + "9" * 5000, "NaN", "Infinity", "-Infinity", "1e-400",
    "18446744073709551616", "-1", "0", "0.5", "null", "true", '""', '"\\ud800"', '"\\u0000"',
    "[]", "{}", "[" * 50_000 + "]" * 50_000,
)  # fmt: skip
_RAW = "@@raw%d@@"


_small: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(HOSTILE_STRINGS), st.integers(-3, 3), st.just([]), st.just({}), st.none()
)


_plausible = st.one_of(
    st.integers(0, 1000), st.floats(0, 1e6), st.text(min_size=1, max_size=5), st.booleans()
)


def json_leaf() -> st.SearchStrategy[Any]:
    """A JSON value that is hostile where a well-formed one is expected."""
    return st.one_of(
        st.sampled_from(range(len(RAW_JSON_TOKENS))).map(lambda i: _RAW % i),
        st.sampled_from(HOSTILE_STRINGS),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.booleans(),
        st.none(),
        st.lists(_small, max_size=3),
        st.dictionaries(st.sampled_from(HOSTILE_STRINGS), _small, max_size=2),
    )


def dumps_raw(doc: Any) -> str:
    """JSON text of doc, with the RAW_JSON_TOKENS placeholders replaced by the raw tokens."""
    text = json.dumps(doc)
    for index, token in enumerate(RAW_JSON_TOKENS):
        text = text.replace(json.dumps(_RAW % index), token)
    return text


def paths_of(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value in a JSON document (containers and leaves)."""
    found = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += paths_of(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found += paths_of(value, (*prefix, index))
    return found


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A copy of doc with the value at path replaced (the root when path is empty)."""
    if not path:
        return value
    copy = json.loads(json.dumps(doc))
    parent = copy
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return copy


@st.composite
def mutated_json(draw: st.DrawFn, examples: list[Any], keys: Sequence[str] = ()) -> str:
    """A valid example with one to three values replaced by hostile ones, a key removed, or
    one of keys (optional fields a schema may not check) added to an object with a hostile value.
    """
    doc = draw(st.sampled_from(examples))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths_of(doc)))
        objects = [p for p in paths_of(doc) if isinstance(_at(doc, p), dict)]
        if keys and objects and draw(st.integers(0, 3)) == 0:
            where = draw(st.sampled_from(objects))
            key = draw(st.sampled_from(list(keys)))
            doc = replaced(doc, where, {**_at(doc, where), key: draw(json_leaf())})
        elif path and draw(st.integers(0, 4)) == 0:
            container = json.loads(json.dumps(doc))
            parent = container
            for part in path[:-1]:
                parent = parent[part]
            del parent[path[-1]]  # a missing key or a shorter list
            doc = container
        else:  # half the time a plausible value, so that more documents get further in
            doc = replaced(doc, path, draw(st.one_of(json_leaf(), _plausible)))
    return dumps_raw(doc)


#: Every character str.splitlines() breaks a line at, and the unit separator.
SEPARATORS = ("\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u2028", "\u2029")
