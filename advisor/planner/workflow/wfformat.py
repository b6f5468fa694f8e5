"""Reading WfCommons WfFormat JSON (schema versions 1.0-1.6) into a ``Workflow``.

Documents are validated against the bundled WfFormat schemas (``schemas/wfformat/``, copied from
WfCommons); those schemas allow extra fields, so later additions pass.  Versions 1.0-1.3 use the
1.3 schema, 1.4 its own, 1.5 and 1.6 the 1.5 schema (1.6 only adds optional ``metrics`` blocks).

Choices where the format is loose, each stated so a reader can check it:

* 1.3/1.4 keep everything under ``workflow.tasks`` with per-task ``files``; ``parents`` and
  ``children`` name tasks by ``name`` (WfCommons keyed tasks by name then), so the name is the
  task id when names are unique, else ``id`` is.  A reference matching neither is an error.
* 1.3 declares ``size`` in KB, but WfCommons' own generators (wfbench, e.g.
  blast-benchmark-200.json, whose ``--out`` sizes equal the ``size`` values) and the WRENCH
  parser used by the makespan estimator write and read bytes; we read bytes.
* A recorded makespan of 0 (generated benchmarks) means "not recorded".
* A file a task names but the file list omits (1.5 makes the list optional) has size 0.
* ``--cpu-work N`` in a task's arguments (wfbench tasks) is kept as the task's CPU work.
* A task's command line (what ``advisor submit`` runs) is ``command.program`` and its
  ``arguments`` joined by single spaces, run by ``/bin/sh``: WfInstances write arguments as shell
  fragments (``"--percent-cpu 0.6"`` is one argument, JSON in them is quoted for a shell), and
  WfCommons' own translators join them the same way.
* The advisor's extension, tolerated by every WfFormat schema (they allow extra fields): a task
  may carry ``"advisor": {"command": "sleep 2", "task": "sleeper"}``.  ``command`` is a shell
  command line that wins over ``command.program``/``arguments`` (hand-written and test
  workflows); ``task`` names the task's runtime model (default: the 1.3/1.4 ``category``, else
  the task's ``name``).  In 1.5/1.6 it sits on the specification task (or its execution task),
  in 1.3/1.4 on the task.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

from advisor.errors import InvalidWorkflowError
from advisor.planner.workflow.workflow import DataFile, Machine, Task, Workflow
from advisor.validate import SchemaCheck, error_message, load_json, paused_gc

SCHEMA_FILES = {
    "1.3": "wfcommons-schema-1.3.json",
    "1.4": "wfcommons-schema-1.4.json",
    "1.5": "wfcommons-schema-1.5.json",
}
_SCHEMA_FOR_VERSION = {
    "1.0": "1.3",
    "1.1": "1.3",
    "1.2": "1.3",
    "1.3": "1.3",
    "1.4": "1.4",
    "1.5": "1.5",
    "1.6": "1.5",
}
_CPU_WORK = re.compile(r"--cpu-work(?:\s+|=)([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)")


@cache
def _validator(version: str) -> SchemaCheck:
    """The validator for a document version; 1.6 reuses 1.5 with the version enum widened."""
    base = _SCHEMA_FOR_VERSION[version]
    path = resources.files("advisor.schemas") / "wfformat" / SCHEMA_FILES[base]
    schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if version not in schema["properties"]["schemaVersion"]["enum"]:
        schema = copy.deepcopy(schema)
        schema["properties"]["schemaVersion"]["enum"].append(version)
    return SchemaCheck(schema, draft="7")


def is_wfformat(doc: Any) -> bool:
    """True when the document looks like WfFormat (has ``workflow`` and ``schemaVersion``)."""
    return isinstance(doc, dict) and "workflow" in doc and "schemaVersion" in doc


def parse_workflow(doc: Any, *, source: str = "") -> Workflow:
    """Validate a parsed WfFormat document and build the ``Workflow``."""
    if not isinstance(doc, dict):
        raise InvalidWorkflowError(
            "not a WfFormat document (expected a JSON object)", source=source
        )
    version = str(doc.get("schemaVersion", ""))
    if version not in _SCHEMA_FOR_VERSION:
        raise InvalidWorkflowError(
            f"unsupported schemaVersion {version!r}",
            source=source,
            hint="WfFormat 1.0-1.6 is supported",
        )
    best = _validator(version).first_error(doc)
    if best is not None:
        raise InvalidWorkflowError(error_message(best), source=source)
    if _SCHEMA_FOR_VERSION[version] == "1.5":
        parts = _parse_15(doc["workflow"], source=source)
    else:
        parts = _parse_13(doc["workflow"], version=version, source=source)
    return Workflow(
        name=str(doc["name"]),
        tasks=parts.tasks,
        files=parts.files,
        machines=parts.machines,
        recorded_makespan_s=parts.makespan_s,
        source=source,
        schema_version=version,
    )


def read_workflow(path: str | Path) -> Workflow:
    """Read and validate a WfFormat file."""
    with paused_gc():
        return parse_workflow(load_json(path), source=str(path))


def cpu_work(arguments: Iterable[str]) -> float | None:
    """The number after ``--cpu-work`` (one argument or two), if any."""
    args = list(arguments)
    for position, arg in enumerate(args):
        found = _CPU_WORK.search(arg)
        if found:
            return float(found.group(1))
        if arg.strip() == "--cpu-work" and position + 1 < len(args):
            try:
                return float(args[position + 1])
            except ValueError:
                return None
    return None


def command_line(command: Any) -> str | None:
    """``program`` and ``arguments`` joined by spaces (arguments are shell fragments), if any."""
    if not isinstance(command, Mapping) or not command.get("program"):
        return None
    return " ".join([str(command["program"]), *(str(a) for a in command.get("arguments", ()))])


def _extension(items: Iterable[Mapping[str, Any]], task_id: str, source: str) -> dict[str, str]:
    """The ``advisor`` extra of a task (first of the given objects that has one), checked."""
    for item in items:
        extra = item.get("advisor")
        if extra is None:
            continue
        if not isinstance(extra, Mapping):
            raise InvalidWorkflowError(
                f"task {task_id!r}: 'advisor' must be an object", source=source
            )
        found = {}
        for key in ("command", "task"):
            value = extra.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InvalidWorkflowError(
                    f"task {task_id!r}: advisor.{key} must be a non-empty string", source=source
                )
            if value is not None:
                found[key] = value
        return found
    return {}


def _makespan(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and value > 0 else None


class _Parts(NamedTuple):
    tasks: tuple[Task, ...]
    files: dict[str, DataFile]
    machines: tuple[Machine, ...]
    makespan_s: float | None


def _machines(items: Iterable[Mapping[str, Any]], cores: str, speed: str) -> tuple[Machine, ...]:
    return tuple(
        Machine(m["nodeName"], m.get("cpu", {}).get(cores), m.get("cpu", {}).get(speed))
        for m in items
    )


def _parse_15(flow: Mapping[str, Any], *, source: str) -> _Parts:
    spec = flow["specification"]
    execution = flow.get("execution", {})
    files = {f["id"]: DataFile(f["id"], int(f["sizeInBytes"])) for f in spec.get("files", [])}
    runs = {}
    for run in execution.get("tasks", []):
        runs[run["id"]] = run
    spec_ids = {t["id"] for t in spec["tasks"]}
    for run_id in runs:
        if run_id not in spec_ids:
            raise InvalidWorkflowError(
                f"execution task {run_id!r} is not in the specification", source=source
            )
    tasks = []
    for item in spec["tasks"]:
        run = runs.get(item["id"], {})
        extra = _extension((item, run), item["id"], source)
        inputs = tuple(item.get("inputFiles", ()))
        outputs = tuple(item.get("outputFiles", ()))
        for file_id in (*inputs, *outputs):
            files.setdefault(file_id, DataFile(file_id, 0))
        tasks.append(
            Task(
                id=item["id"],
                name=item["name"],
                parents=tuple(p for p in item["parents"] if p),
                children=tuple(c for c in item["children"] if c),
                input_files=inputs,
                output_files=outputs,
                runtime_s=_float_or_none(run.get("runtimeInSeconds")),
                cores=int(run.get("coreCount", 1)),
                machines=tuple(run.get("machines", ())),
                cpu_work=cpu_work(run.get("command", {}).get("arguments", ())),
                model_name=extra.get("task"),
                command=extra.get("command") or command_line(run.get("command")),
            )
        )
    machines = _machines(execution.get("machines", ()), "coreCount", "speedInMHz")
    return _Parts(tuple(tasks), files, machines, _makespan(execution.get("makespanInSeconds")))


def _float_or_none(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _identities(items: list[Mapping[str, Any]], source: str) -> tuple[list[str], dict[str, str]]:
    """Task ids for 1.3/1.4 (names, or ids when names repeat) and an alias map for references."""
    names = [str(t["name"]) for t in items]
    ids = [str(t["id"]) if "id" in t else None for t in items]
    use_names = len(set(names)) == len(names)
    if not use_names and (None in ids or len(set(ids)) != len(ids)):
        dup = next(n for n in names if names.count(n) > 1)
        raise InvalidWorkflowError(f"duplicate task id {dup!r}", source=source)
    chosen = names if use_names else [str(i) for i in ids]
    others = ids if use_names else names
    alias: dict[str, str] = {}
    if None not in others and len(set(others)) == len(others):
        alias = {str(o): c for o, c in zip(others, chosen, strict=True) if o not in set(chosen)}
    return chosen, alias


def _children(item: Mapping[str, Any], task_id: str, source: str) -> list[str]:
    """A 1.3/1.4 task's ``children``, which those schemas leave unchecked: a list of names."""
    value = item.get("children", [])
    if not isinstance(value, list) or not all(isinstance(child, str) for child in value):
        raise InvalidWorkflowError(
            f"task {task_id!r}: children must be a list of task names", source=source
        )
    return [str(child) for child in value]


def _parse_13(flow: Mapping[str, Any], *, version: str, source: str) -> _Parts:
    items = list(flow["tasks"])
    chosen, alias = _identities(items, source)
    size_key = "size" if version != "1.4" else "sizeInBytes"
    files: dict[str, DataFile] = {}
    tasks = []
    for task_id, item in zip(chosen, items, strict=True):
        inputs: list[str] = []
        outputs: list[str] = []
        for entry in item.get("files", ()):
            file_id = str(entry["name"])
            size = int(entry.get(size_key, entry.get("size", 0)))
            if file_id not in files or files[file_id].size_bytes < size:
                files[file_id] = DataFile(file_id, size)
            (inputs if entry["link"] == "input" else outputs).append(file_id)
        runtime = item.get("runtimeInSeconds", item.get("runtime"))
        machine = item.get("machine")
        extra = _extension((item,), task_id, source)
        tasks.append(
            Task(
                id=task_id,
                name=str(item["name"]),
                parents=tuple(alias.get(p, p) for p in item.get("parents", ()) if p),
                children=tuple(alias.get(c, c) for c in _children(item, task_id, source) if c),
                input_files=tuple(inputs),
                output_files=tuple(outputs),
                runtime_s=_float_or_none(runtime),
                cores=int(item.get("cores", 1)),
                machines=(machine,) if machine else (),
                cpu_work=cpu_work(item.get("command", {}).get("arguments", ())),
                model_name=extra.get("task") or item.get("category"),
                command=extra.get("command") or command_line(item.get("command")),
            )
        )
    machines = _machines(flow.get("machines", ()), "count", "speed")
    makespan = _makespan(flow.get("makespanInSeconds", flow.get("makespan")))
    return _Parts(tuple(tasks), files, machines, makespan)
