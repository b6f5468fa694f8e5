"""Precedence (sbatch(1)): what the job asks for, and the task it is known by.

Options on the command line override ``SBATCH_*`` environment variables, which override the
``#BSUB`` or ``#PBS`` lines sbatch translates (advisor.sbatch.translated), which override
``#SBATCH`` lines in the script (advisor.sbatch.script); among options of one origin the last
one wins.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from advisor.lite import NamedTuple
from advisor.sbatch.argv import Option
from advisor.taskkey import task_key

#: The input environment variables of sbatch 22.05 that concern the advisor (sbatch(1)).
ENVIRONMENT = {
    "time": "SBATCH_TIMELIMIT",
    "partition": "SBATCH_PARTITION",
    "job-name": "SBATCH_JOB_NAME",
    "mem": "SBATCH_MEM_PER_NODE",
    "mem-per-cpu": "SBATCH_MEM_PER_CPU",
    "mem-per-gpu": "SBATCH_MEM_PER_GPU",
    "cpus-per-task": "SBATCH_CPUS_PER_TASK",
    "ntasks": "SBATCH_NTASKS",
    "ntasks-per-node": "SBATCH_NTASKS_PER_NODE",
    "nodes": "SBATCH_NNODES",
    "account": "SBATCH_ACCOUNT",
    "qos": "SBATCH_QOS",
    "array": "SBATCH_ARRAY_INX",
}


class Setting(NamedTuple):
    """A value and where it came from.

    The origin is 'command line', the variable's name, '#PBS' or '#BSUB' (the directives
    sbatch translates), or 'script' (``#SBATCH``).
    """

    value: str
    origin: str


class JobRequest(NamedTuple):
    """The settings the advisor reads; None when the job does not set them."""

    partition: Setting | None = None
    time: Setting | None = None
    time_min: Setting | None = None
    job_name: Setting | None = None
    comment: Setting | None = None
    wrap: bool = False
    #: What the job asks of memory (--mem per node, --mem-per-cpu, --mem-per-gpu) and of CPUs.
    mem: Setting | None = None
    mem_per_cpu: Setting | None = None
    mem_per_gpu: Setting | None = None
    cpus_per_task: Setting | None = None
    ntasks: Setting | None = None
    ntasks_per_node: Setting | None = None
    nodes: Setting | None = None

    @property
    def asks_memory(self) -> Setting | None:
        """The job's own memory request, of whichever kind (None: it asks for none)."""
        return self.mem or self.mem_per_cpu or self.mem_per_gpu

    #: --account and --qos: with the user, they choose the association and QoS whose MaxWall
    #: bounds the limit (SiteLimits.job_bounds).
    account: Setting | None = None
    qos: Setting | None = None
    #: --array: the history policy counts an array's tasks, not its one submission.
    array: Setting | None = None

    @property
    def tasks(self) -> int:
        """How many jobs the submission makes: an array's tasks (``--array``), else 1."""
        return array_size(self.array.value) if self.array is not None else 1

    @property
    def partitions(self) -> tuple[str, ...]:
        """The candidate partitions (``-p a,b``); empty means the default partition."""
        if self.partition is None:
            return ()
        return tuple(dict.fromkeys(p.strip() for p in self.partition.value.split(",") if p.strip()))


def _last(options: Sequence[Option], name: str) -> str | None:
    value = None
    for option in options:
        if option.name == name:
            value = option.value if option.value is not None else ""
    return value


def _setting(
    name: str,
    command_line: Sequence[Option],
    env: Mapping[str, str],
    script: Sequence[Option],
    translated: tuple[str, Sequence[Option]] | None,
) -> Setting | None:
    value = _last(command_line, name)
    if value is not None:
        return Setting(value, "command line")
    variable = ENVIRONMENT.get(name)
    if variable and variable in env:
        return Setting(env[variable], variable)
    if translated is not None:
        value = _last(translated[1], name)
        if value is not None:
            return Setting(value, translated[0])
    value = _last(script, name)
    if value is not None:
        return Setting(value, "script")
    return None


def job_request(
    command_line: Sequence[Option],
    env: Mapping[str, str],
    script: Sequence[Option] = (),
    translated: tuple[str, Sequence[Option]] | None = None,
) -> JobRequest:
    """Merge the origins with sbatch's precedence; translated: ('#PBS', its options) or None."""

    def setting(name: str) -> Setting | None:
        return _setting(name, command_line, env, script, translated)

    return JobRequest(
        partition=setting("partition"),
        time=setting("time"),
        time_min=setting("time-min"),
        job_name=setting("job-name"),
        comment=setting("comment"),
        wrap=_last(command_line, "wrap") is not None,
        mem=setting("mem"),
        mem_per_cpu=setting("mem-per-cpu"),
        mem_per_gpu=setting("mem-per-gpu"),
        cpus_per_task=setting("cpus-per-task"),
        ntasks=setting("ntasks"),
        ntasks_per_node=setting("ntasks-per-node"),
        nodes=setting("nodes"),
        account=setting("account"),
        qos=setting("qos"),
        array=setting("array"),
    )


def array_size(spec: str) -> int:
    """The number of tasks of an ``--array`` spec (``1-100``, ``1,3,5-7``, ``0-15:4``, ``%8``).

    At least 1; a spec sbatch would refuse counts as 1 (no job is made).  Overlapping ranges
    count twice: an upper bound, which errs toward advising fewer of them.
    """
    total = 0
    for item in spec.partition("%")[0].split(","):
        bounds, _, step_text = item.strip().partition(":")
        first, _, last = bounds.partition("-")
        try:
            low = int(first)
            high = int(last) if last else low
            step = int(step_text) if step_text else 1
        except ValueError:
            return 1
        if low < 0 or high < low or step < 1:
            return 1
        total += (high - low) // step + 1
    return max(1, total)


def task_name(explicit: str | None, request: JobRequest, script: str | None) -> str | None:
    """``--advisor-task``, else the job name's task key, else what sbatch names the job: the script's name.

    The task key (advisor.taskkey) is a Nextflow job's process or a Snakemake job's rule (from
    its comment, or from classic Snakemake's job script, which sbatch names the job after), as
    accounting and the Lua plugin know the job; any other name as it is.
    """
    if explicit:
        return explicit
    if request.job_name is not None and request.job_name.value:
        comment = request.comment.value if request.comment is not None else None
        return task_key(request.job_name.value, comment)
    if request.wrap:
        return "wrap"
    if script:
        return task_key(os.path.basename(script.rstrip("/")))
    return None
