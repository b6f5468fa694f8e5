"""Record a small trace set laid out like Lotaru-traces, from real runs on this machine.

    python3 tests/data/lotaru-format/record.py tests/data/lotaru-format

Every row is a measured run of a real command (gzip, bzip2, sha256sum) on a generated input of
a known size; "machines" are this machine's first CPU shared with 0 to 3 busy loops pinned to
the same CPU, so that each runs the same work at a different speed:

- ``local`` (no busy loop) and its reduced-speed twin ``localslow`` (one busy loop: about half
  the speed, declared as a clock of 1.5 GHz against 3.0 GHz in nodes.json), the protocol's
  reference and twin, with the labels ``train-1``/``train-2`` (ten inputs halving in size from
  8 MiB and from 6 MiB) and ``test`` (24 MiB and 32 MiB);
- ``shared2`` and ``shared3`` (two and three busy loops), the targets, with the same labels.

nodes.json gives each machine the single-thread score a short busy loop measured in the same
conditions (calls per second, higher is faster), as Lotaru's sysbench scores, and an I/O score
(MB/s of writing and syncing 16 MiB), as its fio scores; LINPACK and memory are left out
(null), as Lotaru's table has them for some machines only.
"""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

TASKS = {"compress": ["gzip", "-6", "-c"], "bzip": ["bzip2", "-9", "-c"], "digest": ["sha256sum"]}
MIB = 2**20
LABELS = {
    "train-1": [8 * MIB >> k for k in range(10)],
    "train-2": [6 * MIB >> k for k in range(10)],
    "test": [24 * MIB, 32 * MIB],
}
MACHINES = {"local": 0, "localslow": 1, "shared2": 2, "shared3": 3}
COLUMNS = ["Label", "Machine", "Workflow", "Task", "WorkflowInputSize", "Realtime", "cpus",
           "TaskInputSize", "TaskInputSizeUncompressed"]  # fmt: skip
CPU = "0"


def make_input(path: Path, size: int, seed: int) -> None:
    """Text of words from a fixed vocabulary: compressible, as sequencing reads are."""
    rng = random.Random(seed)
    words = ["".join(rng.choice("ACGT") for _ in range(rng.randint(4, 12))) for _ in range(500)]
    out = bytearray()
    while len(out) < size:
        out += (" ".join(rng.choices(words, k=64)) + "\n").encode()
    path.write_bytes(bytes(out[:size]))


def hogs(count: int) -> list[subprocess.Popen[bytes]]:
    loop = "while True: pass"
    return [subprocess.Popen(["taskset", "-c", CPU, sys.executable, "-c", loop])
            for _ in range(count)]  # fmt: skip


def score() -> float:
    """Calls per second of a fixed busy loop on the pinned CPU (the single-thread score)."""
    code = (
        "import time\nn=0\nt=time.perf_counter()\n"
        "while time.perf_counter()-t<2.0:\n    sum(range(1000)); n+=1\n"
        "print(n/(time.perf_counter()-t))"
    )
    done = subprocess.run(["taskset", "-c", CPU, sys.executable, "-c", code],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return round(float(done.stdout))


def io_score(folder: Path) -> float:
    """MB/s of writing and syncing 16 MiB on the pinned CPU (fio's sequential-write analogue)."""
    path = folder / "io.tmp"
    code = (
        "import os,sys,time\nb=os.urandom(1<<20)\nt=time.perf_counter()\n"
        "with open(sys.argv[1],'wb') as f:\n    for _ in range(16): f.write(b)\n"
        "    f.flush(); os.fsync(f.fileno())\nprint(16*1.048576/(time.perf_counter()-t))"
    )
    done = subprocess.run(["taskset", "-c", CPU, sys.executable, "-c", code, str(path)],
                          capture_output=True, text=True, check=True)  # fmt: skip
    path.unlink()
    return round(float(done.stdout))


def run(task: list[str], path: Path) -> float:
    started = time.perf_counter()
    with path.open("rb") as data:
        subprocess.run(["taskset", "-c", CPU, *task], stdin=data, stdout=subprocess.DEVNULL,
                       check=True)  # fmt: skip
    return (time.perf_counter() - started) * 1000


def main(target: Path) -> None:
    inputs = target / "inputs.tmp"
    inputs.mkdir(parents=True, exist_ok=True)
    files = {}
    for label, sizes in LABELS.items():
        for index, size in enumerate(sizes):
            files[label, size] = inputs / f"{label}-{index}.txt"
            make_input(files[label, size], size, seed=size)
    scores = {}
    for machine, count in MACHINES.items():
        busy = hogs(count)
        try:
            time.sleep(0.5)
            scores[machine] = score(), io_score(target)
            rows = []
            for (label, size), path in files.items():
                for task, argv in TASKS.items():
                    rows.append({"Label": label, "Machine": machine, "Workflow": "squeeze",
                                 "Task": task, "WorkflowInputSize": size,
                                 "Realtime": round(run(argv, path)), "cpus": 1,
                                 "TaskInputSize": size, "TaskInputSizeUncompressed": size})  # fmt: skip
        finally:
            for hog in busy:
                hog.kill()
                hog.wait()
        report = target / "execution_reports" / machine / "results_squeeze"
        report.mkdir(parents=True, exist_ok=True)
        with (report / f"execution_report_{machine}.csv").open("w", newline="") as out:
            writer = csv.DictWriter(out, COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
    for path in files.values():
        path.unlink()
    inputs.rmdir()
    nodes = [{"name": m, "sysbench_cpu_events_per_s": scores[m][0], "linpack_kflops": None,
              "memory_score": None, "fio_io_score": scores[m][1]} for m in MACHINES]  # fmt: skip
    nodes[1] = {"name": "localslow", "same_hardware_as": "local", "cpu_clock_ghz": 1.5,
                "reference_cpu_clock_ghz": 3.0}  # fmt: skip
    doc = {"source": f"tests/data/lotaru-format/record.py on {os.uname().machine}, "
                     f"{time.strftime('%Y-%m-%d')}; scores: calls/s of a busy loop",
           "nodes": nodes}  # fmt: skip
    (target / "nodes.json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
