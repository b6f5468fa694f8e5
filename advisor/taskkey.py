"""The task a job is learned and advised under, from its name and comment.

Workflow managers name their Slurm jobs after the run, not the task, so the job name alone
would give every run of a task a key of its own:

* **Nextflow** (grid executors, ``AbstractGridExecutor.getJobNameFor``) names a job ``nf-``
  + the task name (``PROCESS (tag)``, ``PROCESS (index)``, or ``PROCESS`` for a process that
  runs once) with each of `` /:@*?=`` replaced by ``_``, cut at 256 characters:
  ``NFCORE_RNASEQ:FASTQC (s1)`` becomes ``nf-NFCORE_RNASEQ_FASTQC_(s1)``.  The key is the
  process as the job name carries it, ``NFCORE_RNASEQ_FASTQC`` (its ``:`` cannot be told from
  an ``_`` any more); ``advisor runs import --input-format nextflow`` keys a trace's process the
  same way (``nextflow_process_key``), so a model learned from a trace is the one the jobs hit.
* **Snakemake** (snakemake-executor-plugin-slurm) names every job of a run by the run's UUID
  and puts ``rule_<rule>`` or ``rule_<rule>_wildcards_<values>`` in the comment.  The key is
  the rule (up to the first ``_wildcards_``, or the first blank, after which the advisor's
  own tag may follow).
* **Classic Snakemake** (``--cluster "sbatch ..."``, before version 8) submits a job script
  named by ``--jobname``, ``snakejob.{name}.{jobid}.sh`` by default, and sbatch names the job
  after the script: ``snakejob.bwa_map.17.sh`` is rule ``bwa_map``, as are the variants that
  keep that shape (``snakejob.{rule}.{jobid}``, ``{rule}.{jobid}.sh``).  A rule is a Python
  identifier, a job id a number.  Other ``--jobname`` patterns keep their numbers in the
  name; the history policy's name family (advisor.history.keys) still groups those.

Any other job is keyed by its name, as before.  slurm/job_submit.lua has the same rules in
Lua (``task_key``); tests/data/taskkey/cases.json holds the cases both must agree on.
Standard library only, no regular expressions: the sbatch wrapper calls this on every
submission.
"""

from __future__ import annotations

NEXTFLOW_PREFIX = "nf-"
#: What Nextflow replaces by ``_`` in a job name (its list also names ``\n``, ``\t`` and
#: ``\r``, written so that they never match one character; replacing them here is harmless).
_NEXTFLOW_INVALID = frozenset(" /:@*?=\n\t\r")
#: Nextflow cuts job names at this length.
_NEXTFLOW_NAME_MAX = 256
#: Characters of a Nextflow process name once its ``:`` scopes became ``_``.
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_HEX = frozenset("0123456789abcdefABCDEF")
_RULE_PREFIX = "rule_"
#: Classic Snakemake's job script names (``--jobname``'s default ``snakejob.{name}.{jobid}.sh``).
SNAKEJOB_PREFIX = "snakejob."
_SCRIPT_SUFFIX = ".sh"
_IDENTIFIER_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_DIGITS = frozenset("0123456789")
_WILDCARDS = "_wildcards_"
#: What ends the rule in a comment: Lua's ``%s`` (ASCII white space), not Python's wider set.
_BLANKS = frozenset(" \t\n\v\f\r")


def nextflow_process_key(process: str) -> str:
    """The key of a Nextflow process, as its jobs' names carry it (``A:B`` -> ``A_B``)."""
    cleaned = "".join("_" if char in _NEXTFLOW_INVALID else char for char in process)
    return cleaned[: _NEXTFLOW_NAME_MAX - len(NEXTFLOW_PREFIX)]


def _nextflow_process(name: str) -> str:
    """The process of an ``nf-`` job name, or '' when the rest is no Nextflow task name."""
    rest = name[len(NEXTFLOW_PREFIX) :]
    cut = rest.find("_(")  # a process name has no '(': the first one opens the tag
    process = rest if cut < 0 else rest[:cut]
    return process if process and all(char in _WORD for char in process) else ""


def _is_uuid(name: str) -> bool:
    """True for ``8-4-4-4-12`` hexadecimal digits (``str(uuid.uuid4())``)."""
    if len(name) != 36:
        return False
    return all(
        char == "-" if index in (8, 13, 18, 23) else char in _HEX for index, char in enumerate(name)
    )


def _snakemake_rule(comment: str) -> str:
    """The rule of a ``rule_<rule>[_wildcards_<values>]`` comment, or ''."""
    if not comment.startswith(_RULE_PREFIX):
        return ""
    end = next((i for i, char in enumerate(comment) if char in _BLANKS), len(comment))
    body = comment[len(_RULE_PREFIX) : end]
    cut = body.find(_WILDCARDS)
    return body if cut < 0 else body[:cut]


def _is_rule(text: str) -> bool:
    """A Snakemake rule name: an ASCII identifier."""
    return bool(text) and text[0] in _IDENTIFIER_START and all(char in _WORD for char in text)


def _snakejob_rule(name: str) -> str:
    """The rule of a classic Snakemake job script's name, or ''.

    ``snakejob.<rule>.<jobid>`` with or without ``.sh``, or ``<rule>.<jobid>.sh``.
    """
    prefixed = name.startswith(SNAKEJOB_PREFIX)
    body = name[len(SNAKEJOB_PREFIX) :] if prefixed else name
    if body.endswith(_SCRIPT_SUFFIX):
        body = body[: -len(_SCRIPT_SUFFIX)]
    elif not prefixed:
        return ""
    rule, dot, jobid = body.rpartition(".")
    if not dot or not jobid or not all(char in _DIGITS for char in jobid):
        return ""
    return rule if _is_rule(rule) else ""


def task_key(name: str | None, comment: str | None = None) -> str:
    """The task key of a job: its Nextflow process, its Snakemake rule, else its name."""
    name = name or ""
    if name.startswith(NEXTFLOW_PREFIX):
        return _nextflow_process(name) or name
    if comment and _is_uuid(name):
        return _snakemake_rule(comment) or name
    return _snakejob_rule(name) or name
