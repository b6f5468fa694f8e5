"""The package's layering, read from the source: no import cycles, the CLI on top, store at the bottom.

Every import statement counts, wherever it is (module level, inside a function, under
``TYPE_CHECKING``): a lazy import that closes a cycle still ties the modules together.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.imports import ImportStatement, file_imports, module_name

ROOT = Path(__file__).resolve().parents[3] / "advisor"


MODULES = {module_name(path, ROOT.parent): path for path in sorted(ROOT.rglob("*.py"))}


def _targets(module: str, statement: ImportStatement) -> Iterator[str]:
    """The advisor modules one import loads (``from P import m`` loads P.m if a module, else P)."""
    base = statement.module
    names = [f"{base}.{n}" if f"{base}.{n}" in MODULES else base for n in statement.names] or [base]
    for name in names:
        while name not in MODULES and "." in name:  # import advisor.x.y.Class -> advisor.x.y
            name = name.rsplit(".", 1)[0]
        if name in MODULES and name != module:
            yield name


def _imports() -> dict[str, dict[str, int]]:
    """Per module, the advisor modules it imports and the first line that does."""
    graph: dict[str, dict[str, int]] = {}
    for module, path in MODULES.items():
        edges: dict[str, int] = {}
        for statement in file_imports(path, ROOT.parent):
            for target in _targets(module, statement):
                edges.setdefault(target, statement.line)
        graph[module] = edges
    return graph


GRAPH = _imports()


def _package(module: str) -> str:
    """``advisor.<sub-package or top-level module>``: the unit of the package-level layering."""
    parts = module.split(".")
    return ".".join(parts[:2])


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _where(members: list[str], unit: str = "module") -> str:
    """The import lines inside a cycle, for the failure message."""
    inside = set(members)
    lines = [
        f"{module} -> {target} ({MODULES[module].relative_to(ROOT.parent)}:{line})"
        for module, edges in GRAPH.items()
        for target, line in edges.items()
        if (module if unit == "module" else _package(module)) in inside
        and (target if unit == "module" else _package(target)) in inside
        and (unit == "module" or _package(module) != _package(target))
    ]
    return "; ".join(lines)


def test_the_walk_sees_the_whole_package_and_its_lazy_imports() -> None:
    assert len(MODULES) > 150 and "advisor.cli.app" in MODULES
    # a lazy import (inside a function body) is an edge like any other
    assert "advisor.planner.gantt" in GRAPH["advisor.services.demo"]
    # and the cycle finder finds a cycle when there is one
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_between_modules() -> None:
    cycles = _cycles({module: set(edges) for module, edges in GRAPH.items()})
    assert not cycles, " | ".join(_where(members) for members in cycles)


def test_no_import_cycle_between_sub_packages() -> None:
    graph: dict[str, set[str]] = {}
    for module, edges in GRAPH.items():
        graph.setdefault(_package(module), set()).update(
            _package(target) for target in edges if _package(target) != _package(module)
        )
    cycles = _cycles(graph)
    assert not cycles, " | ".join(_where(members, "package") for members in cycles)


def test_nothing_below_the_cli_imports_the_cli() -> None:
    above = ("advisor.cli", "advisor.__main__")
    wrong = [
        f"{MODULES[module].relative_to(ROOT.parent)}:{line} imports {target}"
        for module, edges in GRAPH.items()
        if not module.startswith(above)
        for target, line in edges.items()
        if target.startswith("advisor.cli")
    ]
    assert wrong == []


#: What the cache layer may import besides itself: record types and the leaf helpers.
STORE_MAY_IMPORT = ("advisor.store", "advisor.slurm.records", "advisor.errors", "advisor.lite",
                    "advisor.text")  # fmt: skip


@pytest.mark.parametrize(
    "module", sorted(m for m in MODULES if m == "advisor.store" or m.startswith("advisor.store."))
)
def test_the_store_imports_only_record_types(module: str) -> None:
    wrong = [f"{target} (line {line})" for target, line in GRAPH[module].items()
             if not target.startswith(STORE_MAY_IMPORT)]  # fmt: skip
    assert wrong == [], f"{module} imports {wrong}"


def test_only_the_slurm_adapter_runs_programs() -> None:
    """Slurm's tools are run by advisor.slurm alone (its runner: retries, time-outs, logging)."""
    running = {"subprocess", "pty", "multiprocessing.popen_spawn_posix"}
    wrong = []
    for module, path in MODULES.items():
        if module.startswith("advisor.slurm."):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])  # fmt: skip
            calls = (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                     and node.value.id == "os" and node.attr.startswith(("exec", "spawn", "system",
                                                                          "popen", "posix_spawn")))  # fmt: skip
            if calls or running & set(names):
                wrong.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}")  # type: ignore[attr-defined]
    assert wrong == []


#: The layers of README.md's "How it is built", top first; a module imports from its own layer
#: or below.  ``wrapper`` is the ``advisor sbatch`` command, its own use case (the submit path
#: keeps its own import budget, so it has no cli/ and services/ modules).
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"cli", "__main__"}),
    frozenset({"services", "wrapper"}),
    frozenset({"sbatch", "advice", "models", "profiling", "imports", "history",
               "accounting", "replay", "planner", "insitu", "reports", "spool", "completion",
               "sample", "schemas"}),
    frozenset({"slurm", "store"}),
    frozenset({"errors", "lite", "text", "taskkey", "inputs", "factors", "validate",
               "output_target", "progress", "guard_schedule", "render", "users",
               "timespec"}),
)  # fmt: skip


def _layer(module: str) -> int:
    unit = module.split(".")[1] if "." in module else ""
    return next((depth for depth, names in enumerate(LAYERS) if unit in names), len(LAYERS))


def test_every_module_has_a_layer_and_imports_only_downwards() -> None:
    unplaced = sorted({_package(m) for m in MODULES if m != "advisor" and _layer(m) == len(LAYERS)})
    assert unplaced == [], "add them to LAYERS (and to README.md's How it is built)"
    upward = [
        f"{MODULES[module].relative_to(ROOT.parent)}:{line} imports {target}"
        for module, edges in GRAPH.items()
        for target, line in edges.items()
        if target != "advisor" and module != "advisor" and _layer(target) < _layer(module)
    ]
    assert upward == []


def test_a_command_with_a_service_module_calls_it() -> None:
    from advisor.cli.commands import COMMANDS

    with_service = {name: module for name, (module, _) in COMMANDS.items()
                    if f"advisor.services.{name}" in MODULES}  # fmt: skip
    assert len(with_service) >= 10
    wrong = [f"{module} does not import advisor.services.{name}"
             for name, module in with_service.items()
             if f"advisor.services.{name}" not in GRAPH[module]]  # fmt: skip
    assert wrong == []


#: The ``advisor sbatch`` command.  What it is built on is advisor.advice (forecasts to limits)
#: and advisor.sbatch (sbatch's language), which the domain packages import instead.
SBATCH_COMMAND = "advisor.wrapper"
#: Use cases that run the command's submission path themselves: ``advisor submit`` sends every
#: planned job through it (its retry and fail-open), ``advisor demo`` shows what it decides,
#: ``advisor readvise`` asks its advice again for a job it submitted.
RUN_THE_SBATCH_COMMAND = frozenset(
    {"advisor.services.submit", "advisor.services.demo", "advisor.services.readvise"}
)


def _imports_the_sbatch_command(module: str) -> bool:
    return module == SBATCH_COMMAND or module.startswith(SBATCH_COMMAND + ".")


def test_no_domain_package_imports_the_sbatch_command() -> None:
    above = ("advisor.cli", "advisor.__main__")
    wrong = [
        f"{MODULES[module].relative_to(ROOT.parent)}:{line} imports {target}"
        for module, edges in GRAPH.items()
        if not module.startswith(above) and not _imports_the_sbatch_command(module)
        and module not in RUN_THE_SBATCH_COMMAND
        for target, line in edges.items()
        if _imports_the_sbatch_command(target)
    ]  # fmt: skip
    assert wrong == [], "import advisor.advice or advisor.sbatch instead"
    assert all(any(map(_imports_the_sbatch_command, GRAPH[m])) for m in RUN_THE_SBATCH_COMMAND)


#: Modules the product never loads, each with the reason it still ships.
NOT_LOADED_BY_THE_PRODUCT: dict[str, str] = {}


def _entry_points() -> set[str]:
    """What runs: the commands (bin/advisor, ``python -m advisor``), ``python -m`` modules, and
    the packages read as data (``resources.files("advisor.x")``)."""
    from advisor.cli.commands import COMMANDS

    entries = {"advisor.__main__", "advisor.cli", "advisor.wrapper.command"}
    entries |= {module for module, _ in COMMANDS.values()}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Compare) and isinstance(node.left, ast.Name)
                    and node.left.id == "__name__"):  # fmt: skip
                entries.add(module)  # if __name__ == "__main__"
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "files" and node.args
                    and isinstance(node.args[0], ast.Constant)):  # fmt: skip
                entries.add(str(node.args[0].value))
    return entries


def _loaded_from(entries: set[str]) -> set[str]:
    """Every module an import of the entries loads: their imports and their packages."""
    seen: set[str] = set()
    stack = sorted(entries)
    while stack:
        module = stack.pop()
        if module in seen or module not in MODULES:
            continue
        seen.add(module)
        parts = module.split(".")
        stack.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        stack.extend(GRAPH[module])
    return seen


def test_no_module_of_the_package_exists_only_for_tests() -> None:
    """Code that only tests or benchmarks use belongs in tests/helpers or benchmarks/."""
    unused = set(MODULES) - _loaded_from(_entry_points())
    assert sorted(unused - set(NOT_LOADED_BY_THE_PRODUCT)) == []
    assert sorted(set(NOT_LOADED_BY_THE_PRODUCT) - unused) == [], (
        "loaded now: drop it from the list"
    )
    # the walk follows the lazy imports of a command module down to the scheduling kernels
    assert "advisor.planner.scheduling.heft" in _loaded_from({"advisor.cli.plan_cmd"})


#: The use-case layer and the ``advisor sbatch`` command above it: what composes the domain.
USE_CASES = ("advisor.services", "advisor.wrapper", "advisor.cli", "advisor.__main__")


def _in(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_no_domain_package_imports_the_use_cases() -> None:
    """``advisor X`` is cli/X_cmd.py then services/X.py; the domain never calls back up."""
    wrong = [
        f"{MODULES[module].relative_to(ROOT.parent)}:{line} imports {target}"
        for module, edges in GRAPH.items()
        if not _in(module, *USE_CASES)
        for target, line in edges.items()
        if _in(target, "advisor.services")
    ]
    assert wrong == []


def test_the_scheduling_algorithms_import_no_cache_and_no_advice() -> None:
    """planner/scheduling is pure: a Problem in, a Plan out, whatever the cache or the site."""
    scheduling = "advisor.planner.scheduling"
    assert sum(_in(m, scheduling) for m in MODULES) >= 10
    wrong = [
        f"{MODULES[module].relative_to(ROOT.parent)}:{line} imports {target}"
        for module, edges in GRAPH.items()
        if _in(module, scheduling)
        for target, line in edges.items()
        if _in(target, "advisor.store", "advisor.advice", "advisor.models", "advisor.slurm")
        or (_in(target, "advisor.planner") and not _in(target, scheduling))
    ]
    assert wrong == []


#: Domain modules that open the cache themselves, and why.
OPENS_THE_CACHE = {
    # completion has no use case module (it prints a script); a TAB reads partition names.
    "advisor.completion.tree": "the partitions offered at a TAB, read with a short busy timeout",
    # TODO(issue 32, R2, helper budget): the replay's runner moves to services/replay.py.
    "advisor.replay.schedule": "the replay's site jobs, read from the cache it is given by path",
}


def test_domain_code_is_handed_an_open_cache_and_never_opens_one() -> None:
    opening = set()
    for module, path in MODULES.items():
        if _in(module, *USE_CASES):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr == "open"
                    and isinstance(node.value, ast.Name) and node.value.id == "Store"):  # fmt: skip
                opening.add(module)
    assert sorted(opening - set(OPENS_THE_CACHE)) == [], "take an open Store instead"
    assert "advisor.completion.tree" in opening  # the walk sees a lazy import's Store.open


#: Domain modules whose docstring still presents them as a command, each moving to services/.
PRESENTED_AS_A_COMMAND = frozenset({
    "advisor.replay",  # TODO(issue 32, R2, helper budget): replay/run.py to services/replay.py
    "advisor.replay.run",
    "advisor.replay.schedule",
    "advisor.models.cross_validation",  # TODO(issue 29, helper models)
    "advisor.models.transfer_evaluation",  # TODO(issue 29, helper models): services/evaluate.py
})  # fmt: skip


def test_no_domain_module_presents_itself_as_a_command() -> None:
    """A module whose docstring opens with ``advisor X`` is the command's second home."""
    presented = sorted(
        module
        for module, path in MODULES.items()
        if not _in(module, *USE_CASES)
        and (ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "").startswith(
            "``advisor "
        )
    )
    assert sorted(set(presented) - PRESENTED_AS_A_COMMAND) == []
