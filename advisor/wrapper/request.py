"""What the job asks for once sbatch's precedence is applied.

sbatch(1): options on the command line override ``SBATCH_*`` environment variables, which
override ``#SBATCH`` lines in the script; among options of one origin the last one wins.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from advisor.lite import NamedTuple
from advisor.taskkey import task_key
from advisor.wrapper.argv import Option

#: The input environment variables of sbatch 22.05 that concern the advisor (sbatch(1)).
ENVIRONMENT = {
    "time": "SBATCH_TIMELIMIT",
    "partition": "SBATCH_PARTITION",
    "job-name": "SBATCH_JOB_NAME",
}


class Setting(NamedTuple):
    """A value and where it came from: 'command line', the variable's name, or 'script'."""

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
) -> Setting | None:
    value = _last(command_line, name)
    if value is not None:
        return Setting(value, "command line")
    variable = ENVIRONMENT.get(name)
    if variable and variable in env:
        return Setting(env[variable], variable)
    value = _last(script, name)
    if value is not None:
        return Setting(value, "script")
    return None


def job_request(
    command_line: Sequence[Option],
    env: Mapping[str, str],
    script: Sequence[Option] = (),
) -> JobRequest:
    """Merge the three origins with sbatch's precedence."""
    return JobRequest(
        partition=_setting("partition", command_line, env, script),
        time=_setting("time", command_line, env, script),
        time_min=_setting("time-min", command_line, env, script),
        job_name=_setting("job-name", command_line, env, script),
        comment=_setting("comment", command_line, env, script),
        wrap=_last(command_line, "wrap") is not None,
    )


def task_name(explicit: str | None, request: JobRequest, script: str | None) -> str | None:
    """``--task``, else the job name's task key, else what sbatch names the job: the script's name.

    The task key (advisor.taskkey) is a Nextflow job's process or a Snakemake job's rule (from
    its comment), as accounting and the Lua plugin know the job; any other name as it is.
    """
    if explicit:
        return explicit
    if request.job_name is not None and request.job_name.value:
        comment = request.comment.value if request.comment is not None else None
        return task_key(request.job_name.value, comment)
    if request.wrap:
        return "wrap"
    if script:
        return os.path.basename(script.rstrip("/"))
    return None
