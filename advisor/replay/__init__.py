"""``advisor replay``: what the limit policies would have done on a real log (SWF or sacct).

``jobs`` turns a log's records into replay jobs (``site_jobs`` reads a site's own dumps or its
live sacct), ``run`` plays the history policy, the guarded policy (``guarded``) and the
baselines (``baselines``) over them and scores the limits, and ``schedule`` replays the queue
with an EASY backfill simulator (``backfill``) to score the waits each policy causes.  The
command's use case, which composes them, is advisor.services.replay.
"""
