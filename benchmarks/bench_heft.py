"""The planner at scale, each figure beside its baseline measured in the same run.

Run in a regular install (``python3 -m venv /tmp/v && /tmp/v/bin/pip install '.[bench]'``)::

    /tmp/v/bin/python benchmarks/bench_heft.py [--quick] [--out DIR]

Cases (each in a fresh child process, so its time and peak memory are its own):

* ``file``: ``advisor plan FILE#CASE --algorithm heft`` end to end (the installed command, in a
  subprocess) on a 10,000-task layered DAG over 64 distinct processors: a 640,000-entry
  runtime matrix, 5.6 MB of JSON.  Baseline: the same steps as before this change, in
  process: the per-number JSON hooks, jsonschema over the whole document, the reference HEFT
  (``tests/helpers/reference_planner.py``), the same summary.  Target 2 s.
* ``wfformat``: reading a 100,000-task WfFormat 1.5 file (``read_workflow``).  Baseline: the
  per-number JSON hooks and jsonschema over the whole document.  Target 5 s.
* ``heft100k``: HEFT on 100,000 tasks over 64 nodes of 64 classes (4 cores each, 256 slots),
  against the reference HEFT.  Target 20 s.
* ``fdws``: FDWS of 10 concurrent 1,000-task workflows (arriving 30 s apart) on 64 nodes of 4
  classes x 4 cores, against the reference FDWS.  Target 5 s.
* ``growth``: HEFT from 1,000 to 100,000 tasks on 64 distinct processors, and over 16-256
  processors at 10,000 tasks, new and reference (the reference only where it takes < 1 min),
  with the log-log slope between neighbours (time ~ n^slope).
* ``saga``: anrg-saga's HEFT (the ``bench`` extra) on 1,000-task instances over 16 single-core
  nodes, ours with saga's upward ranks, which must give saga's makespan.

Every case also checks that new and baseline give the same plan (makespan and placements).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from advisor.planner.scheduling import fdws, heft
from advisor.planner.scheduling.problem import Node, Problem, combine

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the reference schedulers (tests/helpers/reference_planner.py)
from tests.helpers import reference_planner as reference  # noqa: E402

CLASS_SPEEDS = (1.0, 1.5, 2.0, 3.0)


def layered_instance(
    n_tasks: int, n_nodes: int, cores: int, seed: int
) -> tuple[Problem, list[float], list[tuple[int, int, float]], list[float], float]:
    """A random layered DAG over 4 speed classes: (problem, task costs, edges, speeds, bandwidth)."""
    rng = random.Random(seed)
    width = max(1, int(n_tasks**0.5))
    layer_of = [min(t // width, n_tasks) for t in range(n_tasks)]
    costs = [rng.uniform(1.0, 100.0) for _ in range(n_tasks)]
    edges: list[tuple[int, int, float]] = []
    for task in range(n_tasks):
        layer = layer_of[task]
        if layer == 0:
            continue
        previous = range((layer - 1) * width, layer * width)
        for parent in rng.sample(previous, k=min(len(previous), rng.randint(1, 3))):
            edges.append((parent, task, rng.uniform(0.0, 50.0)))
    speeds = [CLASS_SPEEDS[n % len(CLASS_SPEEDS)] for n in range(n_nodes)]
    bandwidth = 2.0
    parents: list[list[tuple[int, float]]] = [[] for _ in range(n_tasks)]
    for parent, child, data in edges:
        parents[child].append((parent, data))
    runtime = np.array([[cost / speed for speed in speeds] for cost in costs])
    problem = Problem(
        task_ids=tuple(f"t{t}" for t in range(n_tasks)),
        parents=tuple(tuple(p) for p in parents),
        nodes=tuple(Node(f"n{n}", cores, f"class{n % 4}") for n in range(n_nodes)),
        runtime_s=runtime.reshape(n_tasks, n_nodes),
        bandwidth=np.full((n_nodes, n_nodes), bandwidth),
    )
    return problem, costs, edges, speeds, bandwidth


def distinct_instance(n_tasks: int, n_procs: int, seed: int, cores: int = 1) -> Problem:
    """The layered DAG with every processor its own class (unrelated machines: a full matrix)."""
    base, *_ = layered_instance(n_tasks, n_procs, cores, seed)
    rng = np.random.default_rng(seed)
    return Problem(
        task_ids=base.task_ids,
        parents=base.parents,
        nodes=tuple(Node(f"p{n}", cores, f"p{n}") for n in range(n_procs)),
        runtime_s=np.round(base.runtime_s * rng.uniform(0.5, 2.0, base.runtime_s.shape), 3),
        bandwidth=base.bandwidth,
    )


def problem_document(problem: Problem) -> dict[str, Any]:
    """A planning-problem file (schemas/planning-problem.json) holding the problem as a case."""
    n = len(problem.nodes)
    bandwidth = problem.bandwidth if problem.bandwidth is not None else np.ones((n, n))
    return {
        "cases": {
            "layered": {
                "computation_cost": problem.runtime_s.tolist(),
                "edges": [
                    [p, c, round(d, 3)] for c, plist in enumerate(problem.parents) for p, d in plist
                ],
                "comm_bandwidth": [
                    [0.0 if a == b else float(bandwidth[a, b]) for b in range(n)] for a in range(n)
                ],
                "comm_startup": [0.0] * n,
                "proc_names": [node.name for node in problem.nodes],
            }
        }
    }


def wfformat_document(n_tasks: int, seed: int) -> dict[str, Any]:
    """A WfFormat 1.5 workflow: layered DAG, a file per task, recorded runtimes on 4 machines."""
    rng = random.Random(seed)
    width = max(1, int(n_tasks**0.5))
    parents: list[list[int]] = [[] for _ in range(n_tasks)]
    children: list[list[int]] = [[] for _ in range(n_tasks)]
    for task in range(width, n_tasks):
        layer = task // width
        previous = range((layer - 1) * width, layer * width)
        for parent in rng.sample(previous, k=min(len(previous), rng.randint(1, 3))):
            parents[task].append(parent)
            children[parent].append(task)
    name = [f"task_{t:06d}" for t in range(n_tasks)]
    spec, runs, files = [], [], []
    for t in range(n_tasks):
        files.append({"id": f"out_{t:06d}", "sizeInBytes": rng.randint(1000, 10**8)})
        spec.append(
            {
                "name": f"kind{t % 20}",
                "id": name[t],
                "parents": [name[p] for p in parents[t]],
                "children": [name[c] for c in children[t]],
                "inputFiles": [f"out_{p:06d}" for p in parents[t]],
                "outputFiles": [f"out_{t:06d}"],
            }
        )
        runs.append(
            {
                "id": name[t],
                "runtimeInSeconds": round(rng.uniform(1, 100), 3),
                "coreCount": 1,
                "machines": [f"m{t % 4}"],
                "command": {"program": f"kind{t % 20}", "arguments": ["--in", "x"]},
            }
        )
    machines = [
        {"nodeName": f"m{i}", "cpu": {"coreCount": 16, "speedInMHz": 2000 + 500 * i}}
        for i in range(4)
    ]
    return {
        "name": "layered",
        "description": "benchmark",
        "createdAt": "2026-01-01T00:00:00Z",
        "schemaVersion": "1.5",
        "author": {"name": "bench", "email": "bench@example.org"},
        "wms": {"name": "bench", "version": "1", "url": "https://example.org"},
        "workflow": {
            "specification": {"tasks": spec, "files": files},
            "execution": {
                "makespanInSeconds": 1000.0,
                "tasks": runs,
                "executedAt": "20260101T000000+0000",
                "machines": machines,
            },
        },
    }


def same_plan(a: Any, b: Any) -> bool:
    """Same placements (node, core, start, finish) of every task."""
    return [(p.node, p.core, p.start_s, p.finish_s) for p in a.placements] == [
        (p.node, p.core, p.start_s, p.finish_s) for p in b.placements
    ]


def peak_mb() -> float:
    """This process's peak resident memory so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(function: Any, *args: Any) -> tuple[Any, float]:
    """(result, wall seconds); the CPU seconds go to ``CPU[-1]``."""
    began, cpu = time.perf_counter(), time.process_time()
    result = function(*args)
    CPU.append(time.process_time() - cpu)
    return result, time.perf_counter() - began


#: CPU seconds of the calls ``timed`` measured, newest last (the machine is shared: wall time
#: includes other people's work, CPU time does not).
CPU: list[float] = []


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# --- cases: each runs in its own child process and prints one JSON line -----------------


def old_load(path: Path, schema_name: str | None = None, draft: str = "2020-12") -> Any:
    """The loading as before: number hooks on every value, jsonschema over every element."""
    from jsonschema import Draft7Validator, Draft202012Validator
    from jsonschema.exceptions import best_match

    from advisor import validate

    text = path.read_text(encoding="utf-8")
    data = json.loads(
        text,
        parse_constant=validate._reject_constant,
        parse_float=validate._finite,
        parse_int=validate._int64,
    )
    if schema_name is not None:
        contents = validate.schema(schema_name)
        kind = Draft7Validator if draft == "7" else Draft202012Validator
        if best_match(kind(contents, registry=validate.registry()).iter_errors(data)):
            raise SystemExit(f"{path}: not valid")
    return data


def case_file(work: Path, n_tasks: int) -> dict[str, Any]:
    from advisor.planner.scheduling.uncertainty import LognormalSampler
    from advisor.planner.summarise import summarise
    from advisor.planner.workflow.problem_file import parse_problem

    path = work / f"problem-{n_tasks}.json"
    if not path.exists():
        path.write_text(json.dumps(problem_document(distinct_instance(n_tasks, 64, seed=1))))
    command = [
        sys.executable,
        "-m",
        "advisor",
        "--format",
        "json",
        "plan",
        f"{path}#layered",
        "--algorithm",
        "heft",
    ]
    began, cpu = time.perf_counter(), children_cpu()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    new_s, new_cpu = time.perf_counter() - began, children_cpu() - cpu
    new = json.loads(done.stdout)
    began, cpu = time.perf_counter(), time.process_time()
    doc = old_load(path, "planning-problem")
    load_s = time.perf_counter() - began
    from unittest import mock

    with mock.patch("advisor.planner.workflow.problem_file.validate"):  # validated just above
        problem = parse_problem(doc, "layered", source=str(path))
    plan, heft_s = timed(reference.heft, problem)

    def old_sampling(plan: Any, sampler: Any, *, dispatch: Any = None, **options: Any) -> Any:
        return reference.sample_makespans(plan, sampler, **options)  # no dispatch then

    with mock.patch("advisor.planner.scheduling.uncertainty.sample_makespans", old_sampling):
        data, summary_s = timed(
            lambda *a: summarise(*a, samples=500, seed=0, cv=0.2).to_json(),
            plan,
            LognormalSampler(0.2),
        )
    base_s, base_cpu = time.perf_counter() - began, time.process_time() - cpu
    rows = {row["id"]: (row["node"], row["start_s"], row["finish_s"]) for row in new["tasks"]}
    same = (
        rows == {row["id"]: (row["node"], row["start_s"], row["finish_s"]) for row in data["tasks"]}
        and new["makespan_s"] == data["makespan_s"]
    )
    return {
        "case": "file",
        "tasks": n_tasks,
        "bytes": path.stat().st_size,
        "new_s": new_s,
        "base_s": base_s,
        "new_cpu": new_cpu,
        "base_cpu": base_cpu,
        "same": same,
        "base_parts": {"load+validate": load_s, "heft": heft_s, "summary": summary_s},
    }


def case_wfformat(work: Path, n_tasks: int, which: str) -> dict[str, Any]:
    from advisor.planner.workflow import wfformat

    path = work / f"wfformat-{n_tasks}.json"
    if not path.exists():
        path.write_text(json.dumps(wfformat_document(n_tasks, seed=3)))
    if which == "new":
        workflow, seconds = timed(wfformat.read_workflow, path)
    else:

        def old(path: Path) -> Any:
            from jsonschema import Draft7Validator
            from jsonschema.exceptions import best_match

            doc = old_load(path)
            contents = wfformat._validator("1.5").contents
            if best_match(Draft7Validator(contents).iter_errors(doc)):
                raise SystemExit(f"{path}: not valid")
            parts = wfformat._parse_15(doc["workflow"], source=str(path))
            return wfformat.Workflow(
                name=str(doc["name"]),
                tasks=parts.tasks,
                files=parts.files,
                machines=parts.machines,
                source=str(path),
            )

        workflow, seconds = timed(old, path)
    return {
        "case": "wfformat",
        "which": which,
        "tasks": len(workflow.tasks),
        "bytes": path.stat().st_size,
        "seconds": seconds,
        "cpu": CPU[-1],
        "peak_mb": peak_mb(),
    }


def case_heft(n_tasks: int, n_procs: int, cores: int, which: str) -> dict[str, Any]:
    problem = distinct_instance(n_tasks, n_procs, seed=1, cores=cores)
    schedule = heft.schedule if which == "new" else reference.heft
    plan, seconds = timed(schedule, problem)
    fingerprint = hash(tuple((p.node, p.core, p.start_s) for p in plan.placements))
    return {
        "case": "heft",
        "which": which,
        "tasks": n_tasks,
        "procs": n_procs,
        "cores": cores,
        "seconds": seconds,
        "cpu": CPU[-1],
        "peak_mb": peak_mb(),
        "makespan_s": plan.makespan_s,
        "fingerprint": fingerprint,
    }


def case_fdws(which: str) -> dict[str, Any]:
    flows = [layered_instance(1000, 64, 4, seed=200 + i)[0] for i in range(10)]
    problem = combine(flows, [30.0 * i for i in range(10)])
    schedule = fdws.schedule if which == "new" else reference.fdws
    plan, seconds = timed(schedule, problem)
    fingerprint = hash(tuple((p.node, p.core, p.start_s) for p in plan.placements))
    return {
        "case": "fdws",
        "which": which,
        "tasks": problem.n_tasks,
        "seconds": seconds,
        "cpu": CPU[-1],
        "peak_mb": peak_mb(),
        "makespan_s": plan.makespan_s,
        "fingerprint": fingerprint,
    }


# --- the parent: run the cases, print the tables ---------------------------------------------


def child(*argv: str) -> dict[str, Any]:
    """Run one case in a fresh interpreter; its JSON line."""
    done = subprocess.run(
        [sys.executable, __file__, "--case", *argv], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"case {argv} failed: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def ratio_line(
    what: str, new: dict[str, Any], base: dict[str, Any], target_s: float, extra: str = ""
) -> str:
    """Wall and CPU seconds of new and baseline, their ratios, and the target on each."""
    new_s, base_s, new_cpu, base_cpu = new["seconds"], base["seconds"], new["cpu"], base["cpu"]
    verdict = (
        f"target {target_s:g} s: wall {'met' if new_s <= target_s else 'MISSED'}, "
        f"CPU {'met' if new_cpu <= target_s else 'MISSED'}"
    )
    return (
        f"{what}:\n  wall new {new_s:.2f} s, baseline {base_s:.2f} s "
        f"({base_s / new_s:.1f}x); CPU new {new_cpu:.2f} s, baseline {base_cpu:.2f} s "
        f"({base_cpu / new_cpu:.1f}x); {verdict}{extra}"
    )


def saga_comparison(compare: int) -> None:
    try:
        import saga  # noqa: F401
    except ImportError:
        print("saga not installed (pip install '.[bench]'): comparison skipped")
        return
    ratios = []
    for seed in range(compare):
        problem, costs, edges, speeds, bandwidth = layered_instance(1000, 16, 1, seed=100 + seed)
        ours, ours_s = timed(heft.schedule, problem)
        same_ranks = heft.schedule(
            problem, priority=saga_style_ranks(problem, costs, speeds, bandwidth)
        )
        saga_makespan, saga_s = saga_heft(costs, edges, speeds, bandwidth)
        ratios.append(saga_s / ours_s)
        agree = (
            "same"
            if abs(same_ranks.makespan_s - saga_makespan) <= 1e-6 * saga_makespan
            else "DIFFERENT"
        )
        print(
            f"1000 tasks, seed {100 + seed}: saga {saga_makespan:.3f} in {saga_s:.2f} s; "
            f"ours {ours.makespan_s:.3f} in {ours_s:.3f} s; ours with saga's ranks "
            f"{same_ranks.makespan_s:.3f} ({agree}); saga/ours time {saga_s / ours_s:.1f}x"
        )
    print(f"mean time ratio saga/ours: {sum(ratios) / len(ratios):.1f}x")


def saga_style_ranks(
    problem: Problem, costs: list[float], speeds: list[float], bandwidth: float
) -> list[float]:
    """Upward ranks as saga computes them (mean transfer over all edges, self links included)."""
    n_nodes = len(speeds)
    n_edges = n_nodes * (n_nodes - 1) // 2 + n_nodes
    link_share = (n_nodes * (n_nodes - 1) // 2) / n_edges
    mean_comp = [float(np.mean([c / s for s in speeds])) for c in costs]
    rank = [0.0] * problem.n_tasks
    tail = [0.0] * problem.n_tasks
    for task in reversed(problem.order):
        rank[task] = mean_comp[task] + tail[task]
        for parent, data in problem.parents[task]:
            tail[parent] = max(tail[parent], rank[task] + data / bandwidth * link_share)
    return rank


def saga_heft(
    costs: list[float], edges: list[tuple[int, int, float]], speeds: list[float], bandwidth: float
) -> tuple[float, float]:
    """(makespan, seconds) of saga's HEFT on the same instance."""
    logging.getLogger().setLevel(logging.ERROR)  # saga warns about adding super source/sink
    from saga import Network, TaskGraph
    from saga.schedulers.heft import HeftScheduler

    names = [f"n{n}" for n in range(len(speeds))]
    network = Network.create(
        nodes=list(zip(names, speeds, strict=True)),
        edges=[(a, b, bandwidth) for i, a in enumerate(names) for b in names[i + 1 :]],
    )
    graph = TaskGraph.create(
        tasks=[(f"t{t}", c) for t, c in enumerate(costs)],
        dependencies=[(f"t{p}", f"t{c}", d) for p, c, d in edges],
    )
    began = time.perf_counter()
    schedule = HeftScheduler().schedule(network, graph)
    return float(schedule.makespan), time.perf_counter() - began


def slope(a: tuple[float, float], b: tuple[float, float]) -> str:
    return f"{math.log(b[1] / a[1]) / math.log(b[0] / a[0]):.2f}"


def growth(quick: bool) -> None:
    tasks = [1000, 3000, 10_000, 30_000] + ([] if quick else [100_000])
    print("\nGrowth: HEFT on 64 distinct processors (1 core each); CPU seconds, log-log slope")
    print(
        f"{'tasks':>8} {'new s':>8} {'slope':>6} {'ref s':>8} {'slope':>6} {'ref/new':>8} "
        f"{'new MB':>7}"
    )
    new_points: list[tuple[float, float]] = []
    ref_points: list[tuple[float, float]] = []
    for n in tasks:
        new = child("heft", str(n), "64", "1", "new")
        new_points.append((n, new["cpu"]))
        ref = child("heft", str(n), "64", "1", "reference") if n <= 30_000 else None
        if ref is not None:
            ref_points.append((n, ref["cpu"]))
            if ref["fingerprint"] != new["fingerprint"]:
                print(f"PLANS DIFFER at {n} tasks")
        print(
            f"{n:>8} {new['cpu']:>8.2f} "
            f"{slope(new_points[-2], new_points[-1]) if len(new_points) > 1 else '':>6} "
            f"{'' if ref is None else format(ref['cpu'], '.2f'):>8} "
            f"{slope(ref_points[-2], ref_points[-1]) if ref and len(ref_points) > 1 else '':>6} "
            f"{'' if ref is None else format(ref['cpu'] / new['cpu'], '.1f'):>8} "
            f"{new['peak_mb']:>7.0f}"
        )
    print("\nGrowth: HEFT on 10,000 tasks over more processors (1 core each); CPU seconds")
    print(f"{'procs':>8} {'new s':>8} {'slope':>6} {'ref s':>8} {'slope':>6} {'ref/new':>8}")
    new_points, ref_points = [], []
    for procs in [16, 64, 256] if quick else [16, 32, 64, 128, 256]:
        new = child("heft", "10000", str(procs), "1", "new")
        ref = child("heft", "10000", str(procs), "1", "reference")
        if ref["fingerprint"] != new["fingerprint"]:
            print(f"PLANS DIFFER at {procs} processors")
        new_points.append((procs, new["cpu"]))
        ref_points.append((procs, ref["cpu"]))
        print(
            f"{procs:>8} {new['cpu']:>8.2f} "
            f"{slope(new_points[-2], new_points[-1]) if len(new_points) > 1 else '':>6} "
            f"{ref['cpu']:>8.2f} "
            f"{slope(ref_points[-2], ref_points[-1]) if len(ref_points) > 1 else '':>6} "
            f"{ref['cpu'] / new['cpu']:>8.1f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="smaller growth table, no 100k reference"
    )
    parser.add_argument("--compare", type=int, default=3, help="1,000-task instances vs saga")
    parser.add_argument("--out", help="directory for the generated inputs (default: a temp dir)")
    parser.add_argument("--case", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        name, *rest = args.case
        work = Path(os.environ.get("BENCH_HEFT_DIR", tempfile.gettempdir()))
        result = {
            "file": lambda: case_file(work, int(rest[0])),
            "wfformat": lambda: case_wfformat(work, int(rest[0]), rest[1]),
            "heft": lambda: case_heft(int(rest[0]), int(rest[1]), int(rest[2]), rest[3]),
            "fdws": lambda: case_fdws(rest[0]),
        }[name]()
        print(json.dumps(result))
        return 0
    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench-heft-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["BENCH_HEFT_DIR"] = str(work)
    print(f"inputs in {work}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}\n")

    file = child("file", "10000")
    print(
        ratio_line(
            f"advisor plan FILE#CASE --algorithm heft, 10,000 tasks x 64 distinct "
            f"processors ({file['bytes'] / 1e6:.1f} MB), end to end",
            {"seconds": file["new_s"], "cpu": file["new_cpu"]},
            {"seconds": file["base_s"], "cpu": file["base_cpu"]},
            2.0,
            f"; same plan: {file['same']}; baseline parts (wall) "
            + ", ".join(f"{k} {v:.2f} s" for k, v in file["base_parts"].items()),
        )
    )
    new, old = child("wfformat", "100000", "new"), child("wfformat", "100000", "reference")
    print(
        ratio_line(
            f"read_workflow, 100,000-task WfFormat 1.5 ({new['bytes'] / 1e6:.0f} MB)",
            new,
            old,
            5.0,
            f"; peak {new['peak_mb']:.0f} MB vs {old['peak_mb']:.0f} MB",
        )
    )
    new, old = (
        child("heft", "100000", "64", "4", "new"),
        child("heft", "100000", "64", "4", "reference"),
    )
    print(
        ratio_line(
            "HEFT, 100,000 tasks x 64 classes (4 cores each)",
            new,
            old,
            20.0,
            f"; peak {new['peak_mb']:.0f} MB vs {old['peak_mb']:.0f} MB; same plan: "
            f"{new['fingerprint'] == old['fingerprint']}",
        )
    )
    new, old = child("fdws", "new"), child("fdws", "reference")
    print(
        ratio_line(
            "FDWS, 10 concurrent 1,000-task workflows",
            new,
            old,
            5.0,
            f"; peak {new['peak_mb']:.0f} MB vs {old['peak_mb']:.0f} MB; same "
            f"plan: {new['fingerprint'] == old['fingerprint']}",
        )
    )
    growth(args.quick)
    print()
    saga_comparison(args.compare)
    return 0


if __name__ == "__main__":
    sys.exit(main())
