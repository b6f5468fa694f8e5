"""``advisor update`` has one home (issue 32): cli/update_cmd.py parses, services/update.py runs.

The accounting modules it uses are handed an open store (they never open one) and none of them
presents itself as the command, as accounting/update.py did beside services/update.py.
"""

from __future__ import annotations

import ast

from tests.helpers.paths import REPO

PACKAGE = REPO / "advisor"


def _docstring(path: str) -> str:
    return ast.get_docstring(ast.parse((PACKAGE / path).read_text())) or ""


def test_only_the_cli_module_and_its_use_case_present_themselves_as_advisor_update() -> None:
    claiming = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if _docstring(str(path.relative_to(PACKAGE))).startswith("``advisor update")
    )
    assert claiming == ["cli/update_cmd.py", "services/update.py"]


def test_the_accounting_modules_of_the_update_never_open_a_store() -> None:
    for module in ("windows.py", "saved.py", "ingest.py", "spool.py", "retention.py"):
        tree = ast.parse((PACKAGE / "accounting" / module).read_text())
        opens = [
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr == "open"
            and isinstance(node.value, ast.Name) and node.value.id == "Store"
        ]  # fmt: skip
        assert opens == [], (module, opens)
    assert not (PACKAGE / "accounting" / "update.py").exists()
