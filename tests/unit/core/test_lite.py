"""advisor.lite on the CPython internals it leans on: what breaks first when an interpreter moves.

Its behaviour against typing.NamedTuple, collections.namedtuple and json.loads is checked in
tests/unit/wrapper/test_submit_path.py; here: a fresh interpreter's errors, the records of a
class body without ``from __future__ import annotations`` (Python 3.14's deferred
annotations), and the future import in every module that builds records with it.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from typing import Any

import pytest

from advisor.lite import NamedTuple
from tests.helpers.paths import REPO

BAD = ["{bad", "[1,", '{"a" 1}', '"open', "[1] x", "", "tru", "01"]


def test_a_fresh_interpreter_refuses_bad_json_as_json_does() -> None:
    """No json.decoder loaded yet: 3.11's C scanner returned NULL there (SystemError)."""
    script = (
        "import sys\n"
        "from advisor.lite import json_loads\n"
        "assert 'json.decoder' not in sys.modules, 'json.decoder loaded before the first error'\n"
        "out = []\n"
        f"for text in {BAD!r}:\n"
        "    try:\n"
        "        json_loads(text)\n"
        "    except Exception as error:\n"
        "        out.append(f'{type(error).__module__}.{type(error).__name__}: {error}')\n"
        "    else:\n"
        "        out.append('accepted')\n"
        "print('\\n'.join(out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    expected = []
    for text in BAD:
        with pytest.raises(json.JSONDecodeError) as raised:
            json.loads(text)
        expected.append(f"json.decoder.JSONDecodeError: {raised.value}")
    assert done.stdout.splitlines() == expected


def test_a_body_with_only_an_annotate_function_keeps_its_fields() -> None:
    """What a class body without the future import holds on Python 3.14 (PEP 649)."""

    def annotate(format: int) -> dict[str, Any]:
        assert format in (1, 3)  # VALUE, or FORWARDREF through annotationlib
        return {"name": str, "cpus": int}

    meta = type(NamedTuple)
    body = {"__module__": __name__, "__qualname__": "Job", "__annotate__": annotate, "cpus": 1}
    job_class: Any = meta("Job", (NamedTuple,), body)
    assert job_class._fields == ("name", "cpus") and job_class._field_defaults == {"cpus": 1}
    assert job_class("a") == ("a", 1) and job_class.__annotations__ == {"name": str, "cpus": int}
    assert "__annotate__" not in vars(job_class)


def _builds_lite_records(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "advisor.lite"
        and any(alias.name == "NamedTuple" for alias in node.names)
        for node in ast.walk(tree)
    )


def _has_future_annotations(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in tree.body
    )


def test_every_module_with_lite_records_imports_annotations_from_the_future() -> None:
    """The fast path: the class body's ``__annotations__`` is a plain dict of strings."""
    users, missing = [], []
    for path in sorted((REPO / "advisor").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        if _builds_lite_records(tree):
            users.append(path)
            if not _has_future_annotations(tree):
                missing.append(str(path.relative_to(REPO)))
    assert len(users) >= 20, "the check no longer sees the modules that use advisor.lite"
    assert not missing, "add `from __future__ import annotations` to:\n" + "\n".join(missing)
