"""The files the fuzz tests mutate: real seeds of each input format and strategies that vary them.

Shared by the per-parser fuzz modules and by tests/fuzz/test_fuzz_cli.py, which feeds the same
hostile files through the command line.
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

from advisor.slurm.parsers import SACCT_FIELDS
from advisor.validate import schema
from tests.helpers.captures import capture
from tests.helpers.hostile import (
    cell,
    field,
)
from tests.helpers.paths import TEST_DATA

SWF_LINES = [
    "1 0 10 100 4 -1 -1 4 3600 -1 1 7 1 3 1 1 -1 -1",
    "2 5 0 3700 8 90.5 1024 8 3600 2048 0 7 1 3 1 1 -1 -1",
    "3 9 1 -1 1 -1 -1 1 60 -1 5 8 2 4 1 2 -1 -1",
    "4 20 3 50 2 -1 -1 2 0 -1 1 8 2 4 1 2 1 0",
]


SACCT_ROWS = [
    line
    for name in ("sacct_allocations.txt", "sacct_steps.txt", "sacct_cancelled_pending.txt")
    for line in capture(name).body.splitlines()
    if line.strip()
]
SACCT_HEADER = "|".join(SACCT_FIELDS)


@st.composite
def swf_line(draw: st.DrawFn) -> str:
    parts = draw(st.sampled_from(SWF_LINES)).split()
    for _ in range(draw(st.integers(1, 4))):
        parts[draw(st.integers(0, len(parts) - 1))] = draw(cell)
    if draw(st.integers(0, 9)) == 0:
        del parts[draw(st.integers(0, len(parts) - 1))]
    return " ".join(parts)


@st.composite
def sacct_dump(draw: st.DrawFn) -> str:
    rows = [
        r.split("|") for r in draw(st.lists(st.sampled_from(SACCT_ROWS), min_size=1, max_size=5))
    ]
    for _ in range(draw(st.integers(0, 5))):
        row = draw(st.sampled_from(rows))
        row[draw(st.integers(0, len(row) - 1))] = draw(cell)
    header = draw(st.sampled_from([SACCT_HEADER, SACCT_HEADER.replace("Elapsed|", ""), "", "x|y"]))
    return "\n".join([header, *("|".join(r) for r in rows)])


TRACE = (TEST_DATA / "imports" / "trace.txt").read_text().splitlines()
LOTARU = (TEST_DATA / "imports" / "lotaru_local_eager_excerpt.csv").read_text().splitlines()


TASK_RUNS = [
    {"runs": [{"task": "fastqc", "node": "local", "input_bytes": 65101034, "runtime_s": 15.3}]},
    {"source": "x", "runs": [{"task": "a", "runtime_s": 1, "cores": 2, "censored": True,
                              "node_class": "c", "workflow": "w", "label": "l"}]},
]  # fmt: skip


@st.composite
def table(draw: st.DrawFn, lines: list[str], delimiter: str) -> str:
    """Real header and rows with cells replaced, columns lost, rows cut, junk lines added."""
    rows = [line.split(delimiter) for line in lines]
    header, body = rows[0], [list(r) for r in draw(st.lists(st.sampled_from(rows[1:]), max_size=4))]
    for _ in range(draw(st.integers(0, 6))):
        if not body:
            break
        row = draw(st.sampled_from(body))
        row[draw(st.integers(0, len(row) - 1))] = draw(cell)
    if draw(st.integers(0, 9)) == 0:
        dropped = draw(st.integers(0, len(header) - 1))
        header = header[:dropped] + header[dropped + 1 :]
    if draw(st.integers(0, 9)) == 0 and body:
        body[0] = body[0][: draw(st.integers(0, len(body[0])))]
    text = [delimiter.join(header), *(delimiter.join(r) for r in body)]
    if draw(st.integers(0, 9)) == 0:
        text.insert(draw(st.integers(1, len(text))), draw(field))
    return "\n".join(text) + draw(st.sampled_from(["", "\n", "\r\n", "\n\n"]))


def with_bytes(lines: list[str]) -> st.SearchStrategy[bytes]:
    """The header, then arbitrary bytes (invalid UTF-8, NUL, stray quotes)."""
    return st.binary(max_size=200).map(lambda junk: (lines[0] + "\n").encode() + junk)


STEPS_CSV = (TEST_DATA / "insitu" / "pipeline-idle-analyzer.csv").read_text().splitlines()
STEPS_JSON = [json.loads((TEST_DATA / "insitu" / "three-components.json").read_text()),
              *schema("insitu-steps")["examples"]]  # fmt: skip
NODE_IMPORTS = [*schema("node-import")["examples"], *schema("bench-output")["examples"]]
NODE_KEYS = ("same_hardware_as", "cpu_clock_ghz", "reference_cpu_clock_ghz", "scores", "hardware",
             "tool", "measured_at", "trace_machine_names", "results", "spread", "value")  # fmt: skip
STEP_KEYS = ("buffer_frames", "components", "idle", "stages", "steps", "step", "IS", "IA")


@st.composite
def steps_csv(draw: st.DrawFn) -> str:
    """The recorded CSV (comments, header, first steps) with cells or lines made hostile."""
    comments = [line for line in STEPS_CSV if line.startswith("#")]
    table = [line for line in STEPS_CSV if not line.startswith("#")][:6]
    rows = [line.split(",") for line in table]
    for _ in range(draw(st.integers(1, 4))):
        row = draw(st.sampled_from(rows))
        row[draw(st.integers(0, len(row) - 1))] = draw(cell)
    lines = [*comments[: draw(st.integers(0, len(comments)))], *(",".join(r) for r in rows)]
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(field))
    return "\n".join(lines)


WORKFLOWS = [json.loads(p.read_text()) for p in sorted((TEST_DATA / "workflows").glob("*.json"))]
PROBLEMS = list(schema("planning-problem")["examples"])
PLATFORMS = list(schema("platform")["examples"])
#: Optional fields the WfFormat schemas may leave unchecked, added with hostile values.
WF_KEYS = (
    "children", "parents", "category", "runtimeInSeconds", "runtime", "machine", "machines",
    "cores", "coreCount", "command", "arguments", "program", "advisor", "task", "id", "files",
    "inputFiles", "outputFiles", "size", "sizeInBytes", "makespan", "makespanInSeconds", "cpu",
    "nodeName", "link", "execution",
)  # fmt: skip
PROBLEM_KEYS = (
    "num_procs", "num_tasks", "comm_bandwidth", "comm_startup", "task_names", "proc_names",
    "proc_cores", "cases",
)  # fmt: skip
