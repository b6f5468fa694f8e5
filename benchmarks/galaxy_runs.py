"""The Galaxy job records (../shared/data/galaxy) as a runs file ``advisor evaluate --runs`` reads.

Run: ``.venv/bin/python benchmarks/galaxy_runs.py [--data ../shared/data/galaxy]
[--out /tmp/galaxy-runs.json]``, then ``advisor evaluate --runs /tmp/galaxy-runs.json --train
A --target B --probe`` for each pair of its machines.json (benchmarks/model_choices.py does all
of them).  The records have no licence: the file is written outside the project, never copied
into it.  Runs are kept in job order (the order the site saw them).
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
from pathlib import Path


def convert(data: Path, out: Path) -> int:
    """Write the runs file; the number of runs."""
    with (data / "runs.csv").open(newline="") as handle:
        rows = sorted(csv.DictReader(handle), key=lambda r: int(r["order"]))
    runs = [
        {
            "task": row["task"],
            "node_class": row["machine"],
            "workflow": row["workflow"],
            "input_bytes": int(row["input_bytes"]),
            "runtime_s": float(row["runtime_s"]),
            **({"cores": int(row["cores"])} if row["cores"] else {}),
        }
        for row in rows
    ]
    doc = {"source": f"usegalaxy.org job records ({data})", "runs": runs}
    out.write_text(json.dumps(doc), encoding="utf-8")
    return len(runs)


def main() -> None:
    """Convert."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/galaxy"))
    parser.add_argument(
        "--out", type=Path, default=Path(tempfile.gettempdir()) / "galaxy-runs.json"
    )
    args = parser.parse_args()
    count = convert(args.data, args.out)
    print(f"{count} runs -> {args.out}")


if __name__ == "__main__":
    main()
