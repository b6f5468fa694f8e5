"""The fuzz suite: every parser and importer fed hostile input (marker ``fuzz``).

It runs with the unit tests (bounded examples, well under a minute on two cores);
``ADVISOR_FUZZ_SCALE=N`` multiplies every example budget, ``ADVISOR_FUZZ_EXAMPLES=N`` sets
it, for a long campaign (``--hypothesis-show-statistics`` prints the counts), e.g.::

    ADVISOR_FUZZ_EXAMPLES=100000 .venv/bin/pytest tests/fuzz -m fuzz -k "not 100k" \
        --hypothesis-show-statistics
"""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fuzz: hostile-input tests of parsers and importers (tests/fuzz)"
    )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory per module for the files hypothesis examples write (and overwrite)."""
    return tmp_path_factory.mktemp("fuzz")
