"""Per-test counts of a fuzz campaign (benchmarks/fuzz_campaign.sh), as a Markdown table.

    .venv/bin/python benchmarks/fuzz_counts.py OUT/a.txt OUT/b.txt

Reads pytest's ``--hypothesis-show-statistics`` output (test cases per phase: passing, failing,
invalid; why generation stopped) and, beside each FILE.txt, the FILE.json of exact outcome
counts that tests/fuzz/conftest.py writes (every call of a parser through ``outcome``: accepted
or input error; every command through main: its exit code; explicit examples included).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

_TEST = re.compile(r"^(tests/\S+::\S+):$")
_PHASE = re.compile(r"^\s+- during (\w+) phase \(([\d.]+) seconds\):")
_CASES = re.compile(r"^\s+- (\d+) passing, (\d+) failing, and (\d+) invalid test cases")
_STOP = re.compile(r"^\s+- Stopped because (.*)")


def statistics(text: str) -> dict[str, dict[str, object]]:
    """Test id -> generate-phase passing/failing/invalid, seconds, and the stop reason."""
    tests: dict[str, dict[str, object]] = {}
    test = phase = None
    for line in text.splitlines():
        if match := _TEST.match(line):
            test, phase = match.group(1), None
            tests[test] = {"passing": 0, "failing": 0, "invalid": 0, "seconds": 0.0, "stopped": ""}
        elif test is None:
            continue
        elif match := _PHASE.match(line):
            phase = match.group(1)
            if phase == "generate":
                tests[test]["seconds"] = float(match.group(2))
        elif (match := _CASES.match(line)) and phase == "generate":
            for key, value in zip(("passing", "failing", "invalid"), match.groups(), strict=True):
                tests[test][key] = int(value)
        elif match := _STOP.match(line):
            tests[test]["stopped"] = match.group(1)
    return tests


def main(paths: list[str]) -> int:
    stats: dict[str, dict[str, object]] = {}
    calls: dict[str, dict[str, int]] = defaultdict(dict)
    for path in map(Path, paths):
        stats.update(statistics(path.read_text(errors="replace")))
        counts = path.with_suffix(".json")
        if counts.is_file():
            found: dict[str, dict[str, int]] = defaultdict(dict)
            for row in json.loads(counts.read_text()):
                found[row["test"]][row["label"]] = row["calls"]
            calls.update(found)  # a later file's run of a test (a rerun) replaces it whole
    print(
        "| test | generated (passing) | failing | invalid | generate s | stopped because | exact calls by outcome |"
    )
    print("| --- | ---: | ---: | ---: | ---: | --- | --- |")
    for test in sorted(set(stats) | {t for t in calls if t in stats}):
        s = stats[test]
        outcomes = "; ".join(f"{label} {n}" for label, n in sorted(calls.get(test, {}).items()))
        print(f"| {test.split('::')[-1]} | {s['passing']} | {s['failing']} | {s['invalid']} | "
              f"{s['seconds']:.0f} | {s['stopped']} | {outcomes} |")  # fmt: skip
    print()
    print_per_parser(calls)
    return 0


def per_parser(calls: dict[str, dict[str, int]]) -> dict[str, tuple[set[str], Counter[str]]]:
    """Parser or command -> (tests that call it, calls by outcome), summed over the tests.

    A label is ``parser: outcome``; the parser is everything before the last ": ".
    """
    parsers: dict[str, tuple[set[str], Counter[str]]] = {}
    for test, labels in calls.items():
        for label, n in labels.items():
            name, _, result = label.rpartition(": ")
            tests, outcomes = parsers.setdefault(name or label, (set(), Counter()))
            tests.add(test.split("::")[-1])
            outcomes[result] += n
    return parsers


def print_per_parser(calls: dict[str, dict[str, int]]) -> None:
    print("| parser or command | tests | calls | by outcome |")
    print("| --- | ---: | ---: | --- |")
    for name, (tests, outcomes) in sorted(per_parser(calls).items()):
        detail = "; ".join(f"{result} {n:,}" for result, n in sorted(outcomes.items()))
        print(f"| `{name}` | {len(tests)} | {sum(outcomes.values()):,} | {detail} |")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
