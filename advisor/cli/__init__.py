"""The command line: parse, call one function, render, pick the exit code.  Nothing else.

This module stays tiny: ``advisor sbatch`` runs on every job submission and is dispatched before
argparse, logging or any other command's code is imported (advisor.cli.app holds the rest).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from advisor.lite import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

#: Command name -> (module with ``register(subparsers, parents)``, one-line help).  Only the
#: module of the command being run is imported, so ``advisor sbatch`` does not pay for numpy.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("advisor.cli.demo_cmd", "run the advisor on bundled sample data (no Slurm needed)"),
    "cluster": ("advisor.cli.cluster_cmd", "show partitions and nodes of the live cluster"),
    "bench": ("advisor.cli.bench_cmd", "run the node microbenchmarks on this machine"),
    "profile": ("advisor.cli.profile_cmd", "benchmark every node through Slurm and store it"),
    "nodes": ("advisor.cli.nodes_cmd", "node classes, scores and factors; import scores"),
    "runs": ("advisor.cli.runs_cmd", "import task executions (Lotaru, Nextflow, JSON)"),
    "learn": ("advisor.cli.learn_cmd", "(re)fit every task model from the observations"),
    "predict": ("advisor.cli.predict_cmd", "predicted runtime of a task on each node class"),
    "calibrate": ("advisor.cli.calibrate_cmd", "run a task once on every node class, learn it"),
    "evaluate": ("advisor.cli.evaluate_cmd", "the Lotaru paper's evaluation protocol"),
    "plan": ("advisor.cli.plan_cmd", "plan workflows with HEFT, PEFT or FDWS"),
    "estimate": ("advisor.cli.estimate_cmd", "the classic workflow makespan estimates"),
    "submit": ("advisor.cli.submit_cmd", "plan a workflow on the cluster and submit it, per task"),
    "insitu": ("advisor.cli.insitu_cmd", "in situ workflow step model, efficiency, makespan"),
    "sbatch": ("advisor.cli.sbatch_cmd", "submit like sbatch, with a predicted time limit"),
    "export": ("advisor.cli.export_cmd", "write the limits file slurm/job_submit.lua reads"),
    "update": ("advisor.cli.update_cmd", "ingest finished jobs from sacct and learn from them"),
    "replay": ("advisor.cli.replay_cmd", "score history-based limits against baselines on a log"),
    "report": ("advisor.cli.report_cmd", "administrator reports: accuracy, limits, nodes, models"),
    "publish": ("advisor.cli.publish_cmd", "write a read-only copy of the cache for users' wrappers"),
}


#: The options every command takes before its name (advisor.cli.common.shared_options).
_GLOBAL_OPTIONS = ("--db", "--format")


def _sbatch_call(args: Sequence[str]) -> tuple[dict[str, str], list[str]] | None:
    """(global options, sbatch arguments) when the command is ``sbatch``, else None.

    ``advisor --db X --format json sbatch ...`` takes the fast path as well; anything else
    before ``sbatch`` (e.g. ``-v``) goes through the full parser.
    """
    options: dict[str, str] = {}
    i = 0
    while i < len(args):
        word = args[i]
        if word == "sbatch":
            return options, list(args[i + 1 :])
        name, equals, value = word.partition("=")
        if name not in _GLOBAL_OPTIONS:
            return None
        if not equals:
            if i + 1 >= len(args):
                return None
            i += 1
            value = args[i]
        options[name[2:]] = value
        i += 1
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``advisor`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    call = _sbatch_call(args)
    if call is not None:
        from advisor.cli.sbatch_cmd import main as sbatch_main

        options, rest = call
        return sbatch_main(rest, db=options.get("db"), fmt=options.get("format"))
    from advisor.cli.app import run

    return run(args)


def __getattr__(name: str) -> Any:
    if name == "build_parser":  # tests and docs checks build the full parser
        from advisor.cli.app import build_parser

        return build_parser
    raise AttributeError(name)
