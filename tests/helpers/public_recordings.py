"""What each public sacct recording (tests/data/slurm/public, PROVENANCE.md there) gives.

The fields and delimiters are the projects' own; the figures (stored, skipped, the refusal) were
read off the recordings by hand.  tests/unit/accounting/test_public_recordings.py loads them,
tests/unit/accounting/test_pinned.py pins the caches they give.
"""

from __future__ import annotations

from typing import NamedTuple

from tests.helpers.paths import TEST_DATA

PUBLIC = TEST_DATA / "slurm" / "public"
GC3PIE = "jobid,exitcode,state,ncpus,elapsed,totalcpu,submit,start,end,maxrss,maxvmsize"
APEL = "JobID,JobName,User,Group,Start,End,Elapsed,CPUTimeRAW,Partition,NCPUS,NNodes,NodeList,MaxRSS,MaxVMSize,State"
HB_JOBINFO = (
    "JobID,JobName,User,Partition,NodeList,NNodes,NCPUs,NTasks,State,Submit,Start,End,Timelimit,"
    "Elapsed,TotalCPU,CPUTime,UserCPU,SystemCPU,ReqMem,MaxRSS,MaxVMSize,ReqTRES,AllocTRES,"
    "TRESUsageInMax,TRESUsageInTot,TRESUsageOutTot,MaxDiskRead,MaxDiskWrite,MaxRSSNode,MaxRSSTask,"
    "MaxVMSizeNode,MaxVMSizeTask,MaxDiskReadNode,MaxDiskReadTask,MaxDiskWriteNode,MaxDiskWriteTask,"
    "Comment"
)
REPORTSEFF = (
    "AdminComment,AllocCPUS,Elapsed,JobID,JobIDRaw,MaxRSS,NNodes,NTasks,REQMEM,State,TotalCPU"
)


class Expected(NamedTuple):
    """What a recording gives: the options it needs, and stored/skipped, or the refusal."""

    options: dict[str, str | bool]
    stored: int = 0
    skipped: dict[str, int] | None = None
    refused: str | None = None


def gc3pie(stored: int, **skipped: int) -> Expected:
    return Expected({"fields": GC3PIE}, stored, skipped)


RECORDINGS: dict[str, Expected] = {
    # sacct --json, 21.08 to 25.05
    "clockwork-21.08-sacct_2.json": Expected({}, 1, {"not_finished": 1}),
    "sarc-21.08.8.json": Expected({}, 0, {"not_finished": 1}),
    "sarc-22.05.9.json": Expected({}, 1, {}),
    "sarc-23.02.6.json": Expected({}, 0, {"not_finished": 1}),
    "sarc-23.11.5.json": Expected({}, 0, {"not_finished": 1}),
    "slurmweb-24.11-v0.0.41-job-timeout.json": Expected({}, 1, {}),
    "slurmweb-24.11-v0.0.42-job-completed.json": Expected({}, 1, {}),
    "slurmweb-25.05-v0.0.43-job-failed.json": Expected({}, 1, {}),
    # --noheader text dumps: the fields (and the delimiter) given as the projects give them
    # Comment is its last field: read only with trust_names (issue 31 N9)
    "hb-jobinfo-sacct-snowman.txt": Expected(
        {"fields": HB_JOBINFO, "delimiter": "☃", "trust_names": True},
        25,
        {"steps": 20, "not_finished": 1},
    ),
    "apel-slurm-lines.txt": Expected({"fields": APEL}, 4, {"steps": 4}),
    # one job id in 14 states: 8 final ones (the first is stored, the others already are) with an
    # empty Partition, 6 not final
    "apel-slurm-states.txt": Expected({"fields": APEL}, 0, {"in_flight": 8, "not_finished": 6}),
    "gc3pie-sacct-done-ok.txt": gc3pie(1, steps=1),
    "gc3pie-sacct-done-ok2.txt": gc3pie(1, steps=1),
    "gc3pie-sacct-done-parallel.txt": gc3pie(1, steps=1),
    "gc3pie-sacct-done-cancelled.txt": gc3pie(1, steps=1),
    "gc3pie-sacct-done-node-fail.txt": gc3pie(1, steps=1),
    "gc3pie-sacct-done-timeout.txt": gc3pie(1, steps=1),
    "gc3pie-sacct-done-bad-timestamps.txt": gc3pie(1, steps=1),
    "gc3pie-sacct-done-fractional-rusage.txt": gc3pie(1, steps=11),
    "gc3pie-sacct-almost-done.txt": gc3pie(0, steps=1, not_finished=1),
    # SLURM_TIME_FORMAT=relative ('4 Sep 11:18'): no year, so the job is skipped with a warning
    "gc3pie-sacct-done-relative-timestamps.txt": gc3pie(0, steps=1, malformed=1),
    # no End nor Start: refused in one line that says so
    "reportseff-console-jobs.txt": Expected(
        {"fields": REPORTSEFF, "delimiter": "^|^"}, refused="--fields lacks End (or Start)"
    ),
    "reportseff-console-jobs-timelimit.txt": Expected(
        {"fields": REPORTSEFF.replace(",TotalCPU", ",Timelimit,TotalCPU"), "delimiter": "^|^"},
        refused="--fields lacks End (or Start)",
    ),
    "vsc-administration-sacct-default-fields.txt": Expected(
        {}, refused="line 1: the header lacks Elapsed (or ElapsedRaw), End (or Start)"
    ),
}
