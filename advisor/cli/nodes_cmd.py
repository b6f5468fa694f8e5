"""``advisor nodes``: nodes and classes with their scores and ratios; ``nodes import`` for scores."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from advisor.render import Result, Table
from advisor.reports.age import age_text
from advisor.services.nodes import import_nodes, show_nodes
from advisor.store import Store
from advisor.text import storable

if TYPE_CHECKING:
    from advisor.factors import NodeRatios
    from advisor.profiling.nodes_view import NodesView

_RATIOS = ("cpu", "io", "memory")


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command and its ``import`` sub-command."""
    parser = sub.add_parser(
        "nodes",
        parents=parents,
        help="show nodes and node classes with benchmark scores and ratios",
        description="Every node (from the cluster snapshot and from benchmarks) with its class, "
        "newest scores, their age, and the ratios reference score / node score for CPU, I/O "
        "and memory (above 1: slower than the reference), which Lotaru's factor "
        "F = w * cpu + (1 - w) * io is made of. Then the same per class.",
    )
    reference_help = "node the ratios are relative to (default: the first node with scores)"
    parser.add_argument("--reference", type=storable, metavar="NODE", help=reference_help)
    parser.set_defaults(func=run_show)
    actions = parser.add_subparsers(dest="nodes_action", metavar="ACTION")
    importer = actions.add_parser(
        "import",
        parents=parents,
        help="store benchmark scores measured elsewhere",
        description="Accepts the Lotaru paper's table (../shared/data/lotaru/nodes.json), the "
        "advisor's own format (schemas/node-import.json) and 'advisor bench --format json' "
        "output. A reduced-clock twin (same_hardware_as) gets its twin's scores, CPU scores "
        "scaled by the clock ratio. Nothing is stored unless the whole file is valid.",
    )
    importer.add_argument("file", metavar="FILE")
    importer.add_argument(
        "--reference", type=storable, metavar="NODE", default=argparse.SUPPRESS, help=reference_help
    )
    importer.set_defaults(func=run_import)


def _ratio_cells(ratios: NodeRatios | None) -> dict[str, float | None]:
    return {f"{name}_ratio": getattr(ratios, name) if ratios else None for name in _RATIOS}


def _result(view: NodesView) -> Result:
    metrics = sorted({metric for row in view.nodes for metric in row.scores})
    node_rows = [
        {
            "node": row.name,
            "class": row.node_class,
            **_ratio_cells(row.ratios),
            **{metric: row.scores.get(metric) for metric in metrics},
            "age": age_text(row.age_s),
            "source": row.source,
        }
        for row in view.nodes
    ]
    class_rows = [
        {
            "class": row.name,
            "nodes": row.nodes,
            "profiled": row.profiled,
            **_ratio_cells(row.ratios),
        }
        for row in view.classes
    ]
    reference = view.reference
    notes = _tool_notes(view)
    title = (
        f"Nodes (ratio = {reference}'s score / the node's; above 1: slower)"
        if reference
        else "Nodes (no scores yet: run 'advisor profile' or 'advisor nodes import')"
    )
    return Result(
        data=view.to_json(),
        tables=(Table(node_rows, title=title), Table(class_rows, title="Node classes")),
        notes=notes,
    )


def _tool_notes(view: NodesView) -> list[str]:
    """A warning when ratios compare scores of different tools (their units differ)."""
    tools = {row.name: row.tool for row in view.nodes if row.scores}
    reference = view.reference
    if not reference:
        return []
    others = sorted(name for name, tool in tools.items() if tool != tools.get(reference))
    if not others:
        return []
    return [
        f"note: {', '.join(others)} were measured with another tool than {reference} "
        f"({tools[reference]}); their ratios compare different units"
    ]


def run_show(args: argparse.Namespace) -> Result:
    """The table of nodes and classes."""
    with Store.open(getattr(args, "db", None), readonly=True) as store:
        return _result(show_nodes(store, reference=args.reference))


def run_import(args: argparse.Namespace) -> Result:
    """Check the whole file, store it, then show the nodes."""
    with Store.open(getattr(args, "db", None)) as store:
        view = import_nodes(store, args.file, reference=getattr(args, "reference", None))
    return _result(view)
