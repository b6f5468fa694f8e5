"""``advisor learn``: (re)fit all task models from the observations in the cache."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from advisor.render import Result, Table
from advisor.services.learn import learn
from advisor.store import Store


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "learn",
        parents=parents,
        help="fit the runtime models from the runs in the cache",
        description="Per task: the advisor's model on the reference node class (the one with "
        "most runs; the regression and the median averaged by their probability), Lotaru as "
        "published, the CPU weight from a reduced-clock twin, the paper's baselines, and an "
        "online model per other node class that ran the task, replaying the runs in stored "
        "order (runs killed at their limit as accounting learns them).  Replaces the stored "
        "models.",
    )
    parser.add_argument(
        "--reference", metavar="CLASS", help="train on this node class when it ran the task"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the Online-P baseline (default 0)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Learn and summarise."""
    with Store.open(getattr(args, "db", None)) as store:
        learned = learn(store, reference=args.reference, seed=args.seed)
    rows = [{**asdict(m), "classes": len(m.classes)} for m in learned.task_models]
    return Result(
        data=learned.to_json(),
        tables=(
            Table(
                rows,
                columns=(
                    "task",
                    "reference",
                    "kind",
                    "pearson_r",
                    "cpu_weight",
                    "cpu_weight_source",
                    "n_train",
                    "classes",
                ),
            ),
        ),
        notes=(
            f"{len(learned.task_models)} tasks, {learned.models} models from "
            f"{learned.observations} runs; "
            f"{learned.censored.used} of {learned.censored.runs} runs killed at their "
            "limit raised a model",
        ),
    )
