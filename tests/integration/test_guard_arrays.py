"""``advisor guard`` on the real cluster: a job array the wrapper tightened.

Slurm gives each task of an array that starts its own job id (the last one to start keeps the
array's); the wrapper's advice row names the array's id, the one ``sbatch --parsable`` printed.
Three 90-second tasks tightened from 5 minutes to 1 run at once with the guard alive: every one
COMPLETES, raised once, whatever its own id.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cluster import ADVISOR, job_id
from tests.helpers.guard_jobs import RUN_S, GuardProcess, final, raises_logged, run

pytestmark = [pytest.mark.slow, pytest.mark.cluster(uses=("daemons", "nodes"), minutes=2.5)]

TASKS = 3


def array_tasks(array: int) -> dict[int, int]:
    """Per task index, the job id Slurm gave the task (once each has started)."""
    out = run("sacct", "-X", "-n", "-P", "-j", array, "-o", "JobID,JobIDRaw")
    found = {}
    for line in out.stdout.splitlines():
        shown, raw = line.split("|")
        task = shown.partition("_")[2]
        if task.isdigit():
            found[int(task)] = int(raw)
    return found


def test_the_guard_raises_every_task_of_a_tightened_array(
    guard_cache: Path, guard_task: str, guards: list[GuardProcess], tmp_path: Path
) -> None:
    log = tmp_path / "guard.log"
    guards.append(GuardProcess(guard_cache, log))
    done = run(
        *ADVISOR, "--db", guard_cache, "sbatch", "--advisor-task", guard_task,
        "--advisor-policy", "guarded", "-p", "cpu", "-t", "5", "-J", f"{guard_task}-array",
        f"--array=1-{TASKS}", "--mem=100M", "--output=/dev/null", "--wrap", f"sleep {RUN_S}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    array = job_id(done.stdout)
    outcomes = {}
    for task in range(1, TASKS + 1):
        outcomes[task] = final(f"{array}_{task}")  # type: ignore[arg-type]
    ids = array_tasks(array)
    assert sorted(ids) == list(range(1, TASKS + 1)), ids
    assert len(set(ids.values())) == TASKS and array in ids.values(), ids
    for task, (state, elapsed, limit) in outcomes.items():
        assert state == "COMPLETED", (task, ids, state, elapsed, log.read_text())
        assert limit == 300, (task, limit)  # raised once, to the request
        assert len(raises_logged(log, ids[task])) == 1, log.read_text()
    print(f"tasks {ids}: {outcomes}")
