"""The package's records are built by keyword once they have more than four fields (issue 32).

``Explanation(None, None, None, None, None, None, None, None, (), ...)`` says nothing of which
field is which, and adding a field shifts every later argument without an error when two of
them share a type.  A record here is a class of ``advisor/`` that is a dataclass or a NamedTuple
(``typing``'s or ``advisor.lite``'s); the class a call builds is found through the calling
module's own imports, so two records of one name (``slurm.records.Node``, the planner's
``Node``) are told apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers.imports import module_name

ROOT = Path(__file__).resolve().parents[3] / "advisor"
#: A record of this many fields or more is built by keyword...
MANY_FIELDS = 5
#: ...that is, with fewer positional arguments than this.
MOST_POSITIONAL = 3

TREES = {module_name(path, ROOT.parent): ast.parse(path.read_text(encoding="utf-8"))
         for path in sorted(ROOT.rglob("*.py"))}  # fmt: skip

#: (module, record) built by position on purpose, and why.
BY_POSITION = {
    ("advisor.accounting.mapping", "JobRecord"): "1M-row ingestion: half the cost of keywords",
    ("advisor.slurm.sacct_text", "JobRecord"): "1M-row sacct parsing: half the cost of keywords",
    (
        "advisor.accounting.swf",
        "SwfJob",
    ): "one per SWF line on ingestion; each field named in a comment",
}
#: Modules other work of issues 32 and 29 has rewritten or is rewriting now, their records still
#: built by position; each goes once its author has moved on.  TODO(issue 32): empty this list.
IN_FLIGHT = {
    "advisor.accounting.ingest": "secdata",
    "advisor.accounting.spool": "secdata",
    "advisor.store.guard": "secdata",
    "advisor.store.task_models": "secdata",
    "advisor.services.publish": "secdata",
    "advisor.services.guard": "secguard",
    "advisor.services.cluster": "secguard",
    "advisor.slurm.limits": "secguard",
    "advisor.store.cluster": "secguard",
    "advisor.cli.report_cmd": "cli",
    "advisor.history.policy": "budget",
    "advisor.replay.schedule": "budget",
    "advisor.replay.site_jobs": "budget",
    "advisor.services.replay": "budget",
    "advisor.models.baselines": "models",
    "advisor.models.conformal": "models",
    "advisor.models.cross_validation": "models",
    "advisor.models.evaluation": "models",
    "advisor.models.evidence": "models",
    "advisor.models.fitting": "models",
    "advisor.models.online": "models",
    "advisor.models.pooling": "models",
    "advisor.models.predict": "models",
    "advisor.models.queries": "models",
    "advisor.models.task_model": "models",
    "advisor.models.transfer_evaluation": "models",
    "advisor.services.evaluate": "models",
    "advisor.store.site_models": "models",
}


def _is_record(node: ast.ClassDef) -> bool:
    return any("dataclass" in ast.unparse(d) for d in node.decorator_list) or any(
        ast.unparse(base).endswith("NamedTuple") for base in node.bases
    )


CLASSES = {(module, node.name): node for module, tree in TREES.items()
           for node in tree.body if isinstance(node, ast.ClassDef)}  # fmt: skip


def _resolve(module: str, name: str) -> tuple[str, str] | None:
    """The (module, class) that name means in module: its own class, or one it imports."""
    if (module, name) in CLASSES:
        return module, name
    for node in ast.walk(TREES[module]):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if (alias.asname or alias.name) == name and (node.module, alias.name) in CLASSES:
                    return node.module, alias.name
    return None


def _fields(module: str, name: str) -> list[str] | None:
    """The record's fields, its record bases' first; None when the class is not a record."""
    node = CLASSES[(module, name)]
    if not _is_record(node):
        return None
    found: list[str] = []
    for base in node.bases:
        known = _resolve(module, ast.unparse(base))
        if known is not None and known != (module, name):
            found += _fields(*known) or []
    found += [statement.target.id for statement in node.body
              if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
              and "ClassVar" not in ast.unparse(statement.annotation)]  # fmt: skip
    return found


def positional_records(module: str, tree: ast.Module) -> list[tuple[int, str, int]]:
    """(line, record, positional arguments) of every record of many fields built by position."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        positional = [arg for arg in node.args if not isinstance(arg, ast.Starred)]
        if len(positional) <= MOST_POSITIONAL:
            continue
        record = _resolve(module, node.func.id)
        fields = None if record is None else _fields(*record)
        if fields is not None and len(fields) >= MANY_FIELDS:
            found.append((node.lineno, node.func.id, len(positional)))
    return found


def test_records_of_many_fields_are_built_by_keyword() -> None:
    wrong = [f"{module}:{line}: {record}(...) with {count} positional arguments"
             for module, tree in TREES.items() if module not in IN_FLIGHT
             for line, record, count in positional_records(module, tree)
             if (module, record) not in BY_POSITION]  # fmt: skip
    assert wrong == [], "name the fields: Record(field=value, ...)"


def test_what_is_built_by_position_on_purpose_still_is() -> None:
    built = {(module, record) for module, tree in TREES.items()
             for _, record, _ in positional_records(module, tree)}  # fmt: skip
    assert set(BY_POSITION) <= built, "built by keyword now: drop it from BY_POSITION"


def test_the_check_finds_a_positional_record_and_tells_same_named_records_apart() -> None:
    source = (
        "from advisor.advice.limits import PartitionLimit\n"
        "from advisor.planner.scheduling.problem import Node\n"
        "a = PartitionLimit('p', (), (), None, None, 60, False, 'why')\n"
        "b = PartitionLimit(partition='p', node_classes=(), forecasts=(), max_time_s=None,\n"
        "                   predicted_s=None, limit_s=60, clamped=False, reason='why')\n"
        "c = Node('n', 4)\n"
    )
    module = "advisor.planner.example"
    TREES[module] = ast.parse(source)
    try:
        assert positional_records(module, TREES[module]) == [(3, "PartitionLimit", 8)]
    finally:
        del TREES[module]
    assert _fields("advisor.slurm.records", "Node") != _fields(
        "advisor.planner.scheduling.problem", "Node"
    )
