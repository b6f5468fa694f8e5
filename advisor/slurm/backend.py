"""The interface the rest of the advisor uses to reach Slurm.

``SlurmBackend`` is what a pyslurm backend would implement where a pyslurm matching the
installed Slurm exists; ``CliBackend`` implements it with the command-line tools.
"""

from __future__ import annotations

import logging
import math
import secrets
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple, Protocol

from advisor.errors import InputError, SlurmCommandError
from advisor.slurm.limits import (
    ASSOC_FIELDS,
    QOS_FIELDS,
    USER_FIELDS,
    parse_associations,
    parse_default_accounts,
    parse_qos,
    parse_reservations,
)
from advisor.slurm.parsers import (
    parse_config_memory,
    parse_job_id,
    parse_nodes,
    parse_partition_memory,
    parse_partitions,
    parse_test_only,
)
from advisor.slurm.records import (
    Association,
    JobRecord,
    MemoryLimits,
    Node,
    Partition,
    Qos,
    Reservation,
    StartEstimate,
)
from advisor.slurm.runner import (
    AmbiguousSubmitError,
    CommandResult,
    Runner,
    SlurmCommands,
    TransientSlurmError,
    no_resubmit,
)
from advisor.slurm.sacct_text import (
    SACCT_FIELDS,
    STEP_FIELDS,
    SacctRows,
    SacctSink,
    StepPeaks,
    StepSink,
    with_peaks,
)

log = logging.getLogger(__name__)


def sacct_delimiter() -> str:
    """A field delimiter for one sacct call, drawn at random.

    Job names and comments are user text and may hold any byte, the unit separator and line
    breaks included; a user cannot put a delimiter they cannot know into a name, so no name
    can shift a field or forge a record (``split_records``).
    """
    return f"\x1f{secrets.token_hex(4)}\x1f"


class SlurmBackend(Protocol):
    """Everything the advisor asks of Slurm."""

    def partitions(self) -> list[Partition]:
        """Partitions with their limits."""
        ...

    def nodes(self) -> list[Node]:
        """Nodes with CPUs, memory and features."""
        ...

    def memory_limits(self) -> dict[str, MemoryLimits]:
        """Each partition's memory default and limits."""
        ...

    def qos(self) -> list[Qos]:
        """Every QoS with its MaxWall."""
        ...

    def associations(self, cluster: str | None) -> list[Association]:
        """The users' associations on cluster, parents' limits inherited."""
        ...

    def default_accounts(self) -> dict[str, str]:
        """Each user's default account."""
        ...

    def enforce(self) -> frozenset[str]:
        """AccountingStorageEnforce's words."""
        ...

    def reservations(self) -> list[Reservation]:
        """Advance reservations."""
        ...

    def submit(self, sbatch_args: Sequence[str]) -> int:
        """Submit with these sbatch arguments; the job id."""
        ...

    def test_only(self, sbatch_args: Sequence[str]) -> StartEstimate:
        """When and where the job would start."""
        ...

    def accounting(
        self, start: datetime, end: datetime, *, job_ids: Sequence[int] = ()
    ) -> list[JobRecord]:
        """Allocation records of all users that were active between start and end."""
        ...

    def accounting_rows(
        self,
        start: datetime,
        end: datetime,
        *,
        job_ids: Sequence[int] = (),
        max_bytes: int | None = None,
        max_records: int | None = None,
        timeout_s: float | None = None,
    ) -> SacctRows:
        """The same records, and those that could not be read.

        Past max_bytes of output or max_records records SlurmOutputTooLarge, past timeout_s
        SlurmTimeoutError (both: ask for a smaller window).
        """
        ...


def _sacct_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


class CliBackend:
    """SlurmBackend over sbatch, sacct and scontrol."""

    def __init__(self, commands: SlurmCommands | None = None) -> None:
        self.commands = commands or SlurmCommands()

    def partitions(self) -> list[Partition]:
        """Partitions from ``scontrol show partition -o``."""
        return parse_partitions(self.commands.run(["scontrol", "show", "partition", "-o"]).stdout)

    def nodes(self) -> list[Node]:
        """Nodes from ``scontrol show node -o``."""
        return parse_nodes(self.commands.run(["scontrol", "show", "node", "-o"]).stdout)

    def memory_limits(self) -> dict[str, MemoryLimits]:
        """Each partition's memory default and limits, the site's (``scontrol show config``) where unset."""
        site = parse_config_memory(self.commands.run(["scontrol", "show", "config"]).stdout)
        partitions = self.commands.run(["scontrol", "show", "partition", "-o"]).stdout
        return parse_partition_memory(partitions, site)

    def qos(self) -> list[Qos]:
        """Every QoS with its MaxWall (``sacctmgr show qos``)."""
        return parse_qos(self._sacctmgr("qos", QOS_FIELDS))

    def associations(self, cluster: str | None) -> list[Association]:
        """The users' associations on cluster (None: every cluster's), parents' limits inherited."""
        where = [f"cluster={cluster}"] if cluster else []
        return parse_associations(self._sacctmgr("assoc", ASSOC_FIELDS, *where))

    def default_accounts(self) -> dict[str, str]:
        """Each user's default account (``sacctmgr show user``)."""
        return parse_default_accounts(self._sacctmgr("user", USER_FIELDS))

    def reservations(self) -> list[Reservation]:
        """Advance reservations from ``scontrol show reservation -o``."""
        return parse_reservations(
            self.commands.run(["scontrol", "show", "reservation", "-o"]).stdout
        )

    def enforce(self) -> frozenset[str]:
        """AccountingStorageEnforce's words (``scontrol show config``); empty when not set."""
        for line in self.commands.run(["scontrol", "show", "config"]).stdout.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "AccountingStorageEnforce":
                words = {word.strip().lower() for word in value.split(",")}
                return frozenset(w for w in words if w and w != "none")
        return frozenset()

    def _sacctmgr(self, entity: str, fields: Sequence[str], *where: str) -> str:
        argv = ["sacctmgr", "--noheader", "--parsable2", "show", entity, *where]
        return self.commands.run([*argv, f"format={','.join(fields)}"]).stdout

    def submit(self, sbatch_args: Sequence[str]) -> int:
        """``sbatch --parsable``; the job id it printed."""
        return parse_job_id(self.commands.run(["sbatch", "--parsable", *sbatch_args]).stdout)

    def test_only(self, sbatch_args: Sequence[str]) -> StartEstimate:
        """``sbatch --test-only``, which answers on stderr."""
        result = self.commands.run(["sbatch", "--test-only", *sbatch_args])
        return parse_test_only(result.stderr + result.stdout)

    def accounting(
        self, start: datetime, end: datetime, *, job_ids: Sequence[int] = ()
    ) -> list[JobRecord]:
        """The records of ``accounting_rows``; those that could not be read are logged."""
        rows = self.accounting_rows(start, end, job_ids=job_ids)
        for problem in rows.problems:
            log.warning("%s", problem)
        return rows.records

    def accounting_rows(
        self,
        start: datetime,
        end: datetime,
        *,
        job_ids: Sequence[int] = (),
        max_bytes: int | None = None,
        max_records: int | None = None,
        timeout_s: float | None = None,
    ) -> SacctRows:
        """One sacct query for the window: allocations only, all users, explicit fields.

        sacct runs in the runner's query environment (no SACCT_FORMAT, standard times); the
        delimiter is new for every call.  Its output is parsed as it arrives, so only the
        records are held, and the query stops past max_bytes or max_records
        (SlurmOutputTooLarge) or timeout_s (SlurmTimeoutError; without it, the runner's
        time-out, retried as any transient failure).  Output whose delimiters do not make
        whole records (a name held this call's delimiter: a 1 in 2**32 guess) is asked for
        once more, with another delimiter no name can hold, since names were set before the
        call.  A second query reads the jobs' steps, whose rows alone carry the memory a job
        used (MaxRSS), within the same max_bytes and timeout_s: each record gets the largest
        peak of its steps (``max_rss_mb``).
        """
        budget = (max_bytes, max_records, timeout_s)
        try:
            rows = self._sacct(start, end, job_ids, *budget)
        except InputError:
            rows = self._sacct(start, end, job_ids, *budget)
        steps = self.step_peaks(start, end, job_ids=job_ids, max_bytes=max_bytes,
                                timeout_s=timeout_s)  # fmt: skip
        return SacctRows(with_peaks(rows.records, steps.peaks), rows.problems + steps.problems)

    def step_peaks(
        self,
        start: datetime,
        end: datetime,
        *,
        job_ids: Sequence[int] = (),
        max_bytes: int | None = None,
        timeout_s: float | None = None,
    ) -> StepPeaks:
        """The peak memory of the steps of the jobs of the window (sacct without -X), streamed.

        Output that does not split into whole records is one problem, not a failure: the
        window's jobs are stored without their peaks (no user's text is in these fields).
        Past max_bytes or timeout_s the query fails as the window's own does (the window is
        halved, advisor.accounting.windows): a job's steps can be many rows, and only one peak
        per job is held.
        """
        try:
            return self._sacct_steps(start, end, job_ids, max_bytes, timeout_s)
        except InputError as error:
            return StepPeaks({}, [f"sacct steps: {error.message}"])

    def _sacct(
        self,
        start: datetime,
        end: datetime,
        job_ids: Sequence[int],
        max_bytes: int | None,
        max_records: int | None,
        timeout_s: float | None,
    ) -> SacctRows:
        """The records of one sacct call (allocations only)."""
        delimiter = sacct_delimiter()
        return self.commands.consume(
            self._sacct_argv(start, end, job_ids, delimiter, SACCT_FIELDS, steps=False),
            lambda: SacctSink(delimiter, SACCT_FIELDS, max_records=max_records),
            timeout_s=timeout_s,
            max_bytes=max_bytes,
        )

    def _sacct_steps(
        self,
        start: datetime,
        end: datetime,
        job_ids: Sequence[int],
        max_bytes: int | None,
        timeout_s: float | None,
    ) -> StepPeaks:
        """The steps' peaks of one sacct call (steps too: no --allocations)."""
        delimiter = sacct_delimiter()
        return self.commands.consume(
            self._sacct_argv(start, end, job_ids, delimiter, STEP_FIELDS, steps=True),
            lambda: StepSink(delimiter, STEP_FIELDS),
            timeout_s=timeout_s,
            max_bytes=max_bytes,
        )

    @staticmethod
    def _sacct_argv(
        start: datetime,
        end: datetime,
        job_ids: Sequence[int],
        delimiter: str,
        fields: Sequence[str],
        *,
        steps: bool,
    ) -> list[str]:
        argv = [
            "sacct",
            "--allusers",
            *(() if steps else ("--allocations",)),
            "--parsable2",
            "--noheader",
            f"--delimiter={delimiter}",
            f"--format={','.join(fields)}",
            f"--starttime={_sacct_time(start)}",
            f"--endtime={_sacct_time(end)}",
        ]
        if job_ids:
            argv.append(f"--jobs={','.join(str(job) for job in job_ids)}")
        return argv

    def run_on_node(
        self,
        node: str,
        argv: Sequence[str],
        *,
        partition: str | None = None,
        start_timeout_s: int = 60,
        timeout_s: float = 300.0,
        job_name: str = "advisor-step",
    ) -> CommandResult:
        """Run argv as a one-task job pinned to node (``srun -w NODE -N1 -n1 --exclusive``).

        The result comes back whatever its exit code.  srun gives up when the node cannot start the
        job within start_timeout_s (``--immediate``); Slurm's time limit and, past timeout_s, an
        ``scancel`` of the (unique) job name make sure no step is left running.  Transient srun
        failures (slurmctld busy) are retried by the usual policy; a time-out is not.
        """
        srun = [
            "srun",
            f"--nodelist={node}",
            "--nodes=1",
            "--ntasks=1",
            "--exclusive",
            f"--immediate={start_timeout_s}",
            f"--time={max(1, math.ceil(timeout_s / 60))}",
            f"--job-name={job_name}",
            "--quiet",
        ]
        if partition:
            srun.append(f"--partition={partition}")
        commands = SlurmCommands(
            _no_retry_on_timeout(self.commands.runner, f"srun on {node}"),
            policy=self.commands.policy,
            timeout_s=timeout_s,
            sleep=self.commands.sleep,
        )
        try:
            return commands.run([*srun, "--", *argv], check=False)
        except StepTimeoutError:
            self.commands.run(["scancel", f"--name={job_name}"], check=False)
            raise

    def run_job(self, sbatch_args: Sequence[str], *, job_name: str, timeout_s: float) -> WaitedJob:
        """``sbatch --parsable --wait --job-name=NAME ARGS``: submit, and return once the job ended.

        A submission that fails in a way that may have created the job (a lost reply, our own
        time-out) is never repeated; past timeout_s the job is cancelled by its (unique) name and
        StepTimeoutError raised.  A rejected submission (no job id printed) is a SlurmCommandError.
        """
        argv = ["sbatch", "--parsable", "--wait", f"--job-name={job_name}", *sbatch_args]
        commands = SlurmCommands(
            no_resubmit(self.commands.runner),
            policy=self.commands.policy,
            timeout_s=timeout_s,
            sleep=self.commands.sleep,
        )
        try:
            result = commands.run(argv, check=False)
        except AmbiguousSubmitError:
            self.commands.run(["scancel", f"--name={job_name}"], check=False)
            raise StepTimeoutError(
                f"job {job_name}: no end within {timeout_s:g} s; cancelled", argv=argv
            ) from None
        try:
            job_id = parse_job_id(result.stdout)
        except InputError:
            raise SlurmCommandError(
                f"sbatch refused job {job_name}", argv=argv, stderr=result.stderr,
                returncode=result.returncode,
            ) from None  # fmt: skip
        return WaitedJob(job_id, result.returncode, result.stderr)


class WaitedJob(NamedTuple):
    """A batch job that ran to its end: its id, and sbatch --wait's exit code (the job's)."""

    job_id: int
    returncode: int
    stderr: str


class StepTimeoutError(SlurmCommandError):
    """A job step gave no result within its time; it was cancelled (not retried)."""


def _no_retry_on_timeout(runner: Runner, what: str) -> Runner:
    """A runner whose time-out is final: a benchmark that ran out of time must not run again."""

    def run(argv: Sequence[str], timeout_s: float, stdin: str | None) -> CommandResult:
        try:
            return runner(argv, timeout_s, stdin)
        except TransientSlurmError:
            raise StepTimeoutError(f"{what}: no result within {timeout_s:g} s", argv=argv) from None

    return run
