"""The fuzz suite: every parser and importer fed hostile input (marker ``fuzz``).

It runs with the unit tests (bounded examples, well under a minute on two cores);
``ADVISOR_FUZZ_SCALE=N`` multiplies every example budget, ``ADVISOR_FUZZ_EXAMPLES=N`` sets
it, for a long campaign (``--hypothesis-show-statistics`` prints the counts), e.g.::

    ADVISOR_FUZZ_EXAMPLES=100000 .venv/bin/pytest tests/fuzz -m fuzz -k "not 100k" \
        --hypothesis-show-statistics
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.store import Store


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fuzz: hostile-input tests of parsers and importers (tests/fuzz)"
    )


@pytest.fixture(scope="module")
def store() -> Iterator[Store]:
    """One in-memory cache per module, shared by its examples."""
    with Store.open(":memory:") as opened:
        yield opened


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory per module for the files hypothesis examples write (and overwrite)."""
    return tmp_path_factory.mktemp("fuzz")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """After a campaign (ADVISOR_FUZZ_EXAMPLES or _SCALE set), the exact count of every outcome.

    One line per test and label (``parser: accepted``, ``parser: input error``, ``command:
    exit 2``), for every call made: explicit examples and generated ones alike.  With
    ``ADVISOR_FUZZ_COUNTS=FILE`` the same counts are also written to FILE as JSON.
    """
    from tests.helpers.hostile import COUNTS

    if not COUNTS or not (
        os.environ.get("ADVISOR_FUZZ_EXAMPLES") or os.environ.get("ADVISOR_FUZZ_SCALE")
    ):
        return
    terminalreporter.section("fuzz counts (exact calls per test and outcome)")
    for (test, label), calls in sorted(COUNTS.items()):
        terminalreporter.write_line(f"{calls:>9}  {test}  {label}")
    target = os.environ.get("ADVISOR_FUZZ_COUNTS")
    if target:
        rows = [{"test": t, "label": label, "calls": n} for (t, label), n in sorted(COUNTS.items())]
        Path(target).write_text(json.dumps(rows, indent=1) + "\n")
