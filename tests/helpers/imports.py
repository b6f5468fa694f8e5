"""Reading import statements with ast, for the tests that check the package's and the suite's layout.

One resolver for both, so "what a file imports" means the same thing to the import-cycle check and
to the test-layout check: every statement counts (module level, in a function, under
TYPE_CHECKING), relative imports resolved against the file's package.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple


class ImportStatement(NamedTuple):
    """One imported module: ``import module`` (names empty) or ``from module import names``."""

    line: int
    module: str
    names: tuple[str, ...]


def module_name(path: Path, root: Path) -> str:
    """The dotted name of path, a file under root (root being the directory holding the package)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_statements(module: str, is_package: bool, tree: ast.Module) -> list[ImportStatement]:
    """Every import in tree, the module of a relative one resolved from module (a package if so)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [ImportStatement(node.lineno, alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = tuple(alias.name for alias in node.names)
            found.append(ImportStatement(node.lineno, base, names))
    return found


def file_imports(path: Path, root: Path, source: str | None = None) -> list[ImportStatement]:
    """The import statements of one file (source: its text, when not read from path)."""
    text = path.read_text(encoding="utf-8") if source is None else source
    tree = ast.parse(text, filename=str(path))
    return import_statements(module_name(path, root), path.name == "__init__.py", tree)
