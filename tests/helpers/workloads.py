"""Random workloads for the schedule simulators' property tests, and what every schedule obeys."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from advisor.replay.backfill import SimJob, Simulated

#: One job: submit 0-600 s, 1-8 processors, runs 0-900 s, planned up to 300 s short or 900 s
#: long (at least Slurm's minute), or guarded: advised the minute, raised up to 4,000 s.
JOBS = st.builds(
    lambda submit, procs, run, over, guarded: SimJob(
        submit, procs, run, max(60, run + over) if not guarded else 60, 4000 if guarded else None
    ),
    st.integers(0, 600),
    st.integers(1, 8),
    st.integers(0, 900),
    st.integers(-300, 900),
    st.booleans(),
)


def assert_feasible(jobs: Sequence[SimJob], result: Simulated, procs: int) -> None:
    """Never more processors busy than the machine has; no job starts before its submit; the
    first job never waits (nothing runs before it)."""
    sizes = [min(job.procs, procs) for job in jobs]
    changes = sorted(
        [(end, -size) for size, end in zip(sizes, result.end_s, strict=True)]
        + [(begin, size) for size, begin in zip(sizes, result.start_s, strict=True)]
    )
    busy = 0
    for _, change in changes:
        busy += change
        assert busy <= procs
    assert all(begin >= job.submit_s for job, begin in zip(jobs, result.start_s, strict=True))
    assert result.start_s[0] == jobs[0].submit_s
