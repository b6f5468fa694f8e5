"""The ``guarded`` policy: tight limits at submit, raised by the guard, killed only at the request.

With the guard (advisor.guard_schedule) a limit below the user's request is no longer a kill
but a planning estimate that the guard corrects upward while the job runs, so the limit given
at submit may be much tighter than the history policy's (advisor.history.policy), which must
keep a kill budget because its limit is final:

* **the book's keys**: the same per-user keys, most specific first (advisor.history.keys);
* **basis: the longer of the key's last 2 runs, + 10 %, from the first completed run on**
  (``GUARDED``), close to the AVE2 predictor with which Tsafrir et al. found EASY++ at its
  best.  Chosen by cross-validation over a grid (window 2-50 runs, margin 0-50 %, floor 0-15
  min, evidence 1-5 runs) on the two SWF development logs and their halves: the configuration
  with the lowest worst-case ratio of mean bounded slowdown (EASY, advisor.replay.backfill) to
  the users' requests, among those freeing at least 30 % at submit everywhere.  A longer
  window plans every job with a rare long run of its key and loses most of what the guard
  buys; a margin or floor only trades raises for planning error.  Under Slurm's schedulers
  (advisor.replay.slurm_backfill, the replay's default since) and the guard's old ladder of
  raises, the windows of 2, 5 and 10 runs with + 10 or 50 % all gave 1.0001 to 1.0005 on the
  first Rackham half, a spread the simulation's own parameters move as much; 2 runs + 10 %
  frees the most; the guard's single raise took it below 1 (docs/limits.md);
* **a job without any run of its own keys** gets the median share of their requests that the
  partition's jobs with requests like its own used (the request cells of advisor.history.cells,
  their median instead of a high quantile: a planning estimate, not a bound);
* **no kill budget**: the guard makes no kill.  A job killed at its own request still teaches a
  TIMEOUT (a lower bound);
* **asked again at the job's start** when it proposed nothing at submit, as ``advisor readvise``
  lowers a pending guarded job once its keys have the history they lacked (``readvises``).

Every scored job gets the proposal (also one with its own request: the request is the ceiling).
"""

from __future__ import annotations

import math

from advisor.history.book import HistoryBook
from advisor.history.cells import ScoreCell, request_cell
from advisor.history.keys import keys_for
from advisor.history.policy import PolicyConfig, answering_key, request_score
from advisor.replay.jobs import ReplayJob

#: The keys' window and evidence (the module docstring says why).
GUARDED = PolicyConfig(window=2, min_runs=1)
#: What the longer of the last two runs is raised by.
GUARDED_MARGIN = 0.1


class GuardedPolicy:
    """The history book's runs as a first limit that the guard raises while the job runs."""

    name = "guarded"
    #: The replay raises this policy's limits as the guard would (advisor.guard_schedule).
    guarded = True
    #: Asked again at a job's start when it proposed nothing at submit, as ``advisor readvise``
    #: does for a pending job the wrapper left as written under ``guarded``.
    readvises = True

    def __init__(self, config: PolicyConfig = GUARDED, margin: float = GUARDED_MARGIN) -> None:
        self.book = HistoryBook(config=config)
        self.margin = margin
        #: Per request cell, the shares of their requests its completed jobs used (log).
        self.used: dict[tuple[str, str], ScoreCell] = {}

    def propose_s(self, job: ReplayJob) -> float | None:
        """The longer of the key's last runs plus the margin, else the cell's median share."""
        keys = keys_for(job.user, job.name, job.partition)
        found = answering_key(
            ((key, self.book.state(key)) for key in keys), config=self.book.config
        )
        if found is not None:
            return found[1].basis_s * (1.0 + self.margin)
        if not job.request_s:
            return None
        shares = self.used.get(request_cell(job.partition, job.request_s))
        if shares is None:
            return None
        return job.request_s * math.exp(shares.ordered[len(shares.ordered) // 2])

    def learn(self, job: ReplayJob, runtime_s: float, state: str) -> None:
        """Teach the book the runtime (a job the guard let run longer is no kill)."""
        self.book.learn(job.user, job.name, job.partition, runtime_s=runtime_s, state=state)
        if state == "COMPLETED" and job.request_s:
            cell = request_cell(job.partition, job.request_s)
            found = self.used.get(cell)
            if found is None:
                found = self.used[cell] = ScoreCell()
            found.add(request_score(job.request_s, runtime_s))
