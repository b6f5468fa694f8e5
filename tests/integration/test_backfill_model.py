"""The replay's model of Slurm's schedulers against the real slurmctld: who waits for whom.

On the fat node (8 CPUs): R holds 5 CPUs for 70 s (limit 2 min); H needs 7, J2 all 8, and J3
one CPU for 10 minutes. EASY protects only the head H: at H's reservation one CPU is spare, so
EASY starts J3 at once, and J2 waits for J3. Slurm's backfill holds a place for J2 as well, so
J3 waits for J2. The real cluster is asked, then both models, on the jobs' recorded submit
times and runtimes: the Slurm model must order the starts as slurmctld did, EASY does not.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from advisor.replay.backfill import SimJob, simulate
from advisor.replay.slurm_backfill import parse_parameters, simulate_slurm
from tests.helpers.cluster import job_id
from tests.helpers.guard_jobs import final, run

pytestmark = [pytest.mark.slow, pytest.mark.cluster(uses=("daemons",), owns=("nodes",), minutes=2)]

#: (name, CPUs, limit in minutes, seconds it sleeps), in submit order.
JOBS = [("R", 5, 2, 70), ("H", 7, 1, 10), ("J2", 8, 1, 5), ("J3", 1, 10, 5)]
CPUS = 8


def scheduler_parameters() -> str:
    out = run("scontrol", "show", "config").stdout
    line = next(row for row in out.splitlines() if row.startswith("SchedulerParameters"))
    return line.split("=", 1)[1].strip()


def recorded(ids: list[int]) -> list[tuple[int, int, int]]:
    """(submit, start, end) of each job, in seconds since the first submit."""
    out = run("sacct", "-X", "-n", "-P", "-j", ",".join(map(str, ids)),
              "-o", "JobIDRaw,Submit,Start,End").stdout  # fmt: skip
    rows = {int(f[0]): f[1:] for f in (line.split("|") for line in out.splitlines()) if f[0]}
    stamps = [[datetime.fromisoformat(t).timestamp() for t in rows[job]] for job in ids]
    origin = stamps[0][0]
    return [(round(s - origin), round(b - origin), round(e - origin)) for s, b, e in stamps]


def test_slurm_holds_a_place_for_the_second_job_and_the_model_does_too() -> None:
    ids = []
    for name, cpus, minutes, sleep_s in JOBS:
        done = run("sbatch", "-p", "fat", "-N", "1", "-n", str(cpus), "-t", str(minutes),
                   "-J", f"backfill-model-{name}", "--mem=100M", "--output=/dev/null",
                   "--wrap", f"sleep {sleep_s}")  # fmt: skip
        assert done.returncode == 0, done.stderr
        ids.append(job_id(done.stdout))
    for job in ids:
        assert final(job)[0] == "COMPLETED"
    times = recorded(ids)
    (_, r_start, r_end), (_, h_start, h_end), (_, j2_start, j2_end), (_, j3_start, _) = times
    print(f"recorded (submit, start, end): {dict(zip([j[0] for j in JOBS], times, strict=True))}")
    assert r_start < 30 and h_start >= r_end and j2_start >= h_end
    assert j3_start >= j2_end  # J3 was not started on the CPU H left spare

    sim = [
        SimJob(submit, cpus, end - start, minutes * 60)
        for (_, cpus, minutes, _), (submit, start, end) in zip(JOBS, times, strict=True)
    ]
    slurm = simulate_slurm(sim, CPUS, parse_parameters(scheduler_parameters()))
    easy = simulate(sim, CPUS)
    assert slurm.start_s[3] >= slurm.end_s[2]  # as slurmctld: J3 after J2
    assert easy.start_s[3] < easy.start_s[1]  # EASY: J3 at once, before H
