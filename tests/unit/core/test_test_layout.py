"""The test suite's own layout (issue 17): unit tests mirror the package, no test imports a test.

Shared builders live in tests/helpers and shared fixtures in conftest.py files: a test module
that imports another one runs that module's top level (and its fixtures' names) wherever it is
imported, and moving either file breaks the other.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.imports import file_imports, module_name
from tests.helpers.paths import REPO

TESTS = REPO / "tests"
UNIT = TESTS / "unit"
#: tests/unit/<dir>: an advisor sub-package, or core for advisor's top-level modules.
UNIT_DIRS = {p.name for p in (REPO / "advisor").iterdir() if (p / "__init__.py").is_file()} | {
    "core"
}


def python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if TESTS / "data" not in p.parents)


def imported(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    """(line, module) for every import in path, ``from P import M`` also counted as P.M (M may be
    a module of package P)."""
    return [
        (s.line, name)
        for s in file_imports(path, REPO, source)
        for name in (s.module, *(f"{s.module}.{n}" for n in s.names))
    ]


def is_test_module(module: str) -> bool:
    """Whether module is a file under tests/ named test_*.py or conftest.py."""
    if not module.startswith("tests."):
        return False
    path = REPO.joinpath(*module.split(".")).with_suffix(".py")
    return path.is_file() and (path.name.startswith("test_") or path.name == "conftest.py")


def test_no_module_under_tests_imports_a_test_module_or_a_conftest() -> None:
    offences = []
    for path in python_files():
        for line, module in imported(path):
            if is_test_module(module) and module != module_name(path, REPO):
                offences.append(f"{path.relative_to(REPO)}:{line}: imports {module}")
    assert not offences, "tests/helpers is for what tests share:\n" + "\n".join(offences)


def test_the_check_sees_every_form_of_such_an_import(tmp_path: Path) -> None:
    source = (
        "import tests.unit.wrapper.test_store\n"
        "from tests.unit.planner.test_contract import make_problem\n"
        "from tests.fuzz import test_fuzz_imports as imports\n"
        "from . import test_kernels\n"
        "from ..conftest import lua\n"
        "def later():\n"
        "    from tests.conftest import shared_data\n"
        "from tests.helpers.caches import train\n"
    )
    path = UNIT / "planner" / "test_example.py"
    modules = [m for _, m in imported(path, source) if is_test_module(m)]
    assert modules == [
        "tests.unit.wrapper.test_store",
        "tests.unit.planner.test_contract",
        "tests.fuzz.test_fuzz_imports",
        "tests.unit.planner.test_kernels",
        "tests.unit.conftest",
        "tests.conftest",
    ]


def test_unit_tests_sit_in_the_directory_of_the_package_they_test() -> None:
    misplaced = [
        str(p.relative_to(REPO))
        for p in sorted(UNIT.rglob("test_*.py"))
        if p.parent == UNIT or p.relative_to(UNIT).parts[0] not in UNIT_DIRS
    ]
    assert not misplaced, f"tests/unit/<{'|'.join(sorted(UNIT_DIRS))}>/ only: {misplaced}"
    assert all(
        (d / "__init__.py").is_file()
        for d in UNIT.iterdir()
        if d.is_dir() and d.name != "__pycache__"
    )
