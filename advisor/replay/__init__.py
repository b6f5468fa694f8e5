"""What the limit policies would have done on a real log (SWF or sacct): the replay's domain.

``jobs`` turns a log's records into replay jobs (``site_jobs`` reads a site's own dumps or its
live sacct), ``engine`` plays policies over them under one set of rules and scores the
limits: the history policy (``advised``), the guarded policy (``guarded``) and the baselines
(``baselines``); ``schedule`` replays the queue with a simulator of Slurm's schedulers
(``slurm_backfill``) or of EASY (``backfill``) to score the waits each policy causes.  The
command's use case, which composes them, is advisor.services.replay.
"""
