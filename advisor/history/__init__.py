"""History-based time limits for jobs without a task model.

``keys`` and ``policy`` are the pure, standard-library core that the sbatch wrapper reaches
through ``lookup.history_limit``; ``book`` keeps the policy's state while jobs are learned
(accounting ingestion and the replay); ``cache`` is the one module that reads and writes the
policy's tables.  The replay that scores the policy on a real log is ``advisor.replay``.
"""
