"""History-based time limits for jobs without a task model, and the replay that scores them.

``keys`` and ``policy`` are the pure, standard-library core that the sbatch wrapper reaches
through ``lookup.history_limit``; ``book`` keeps the policy's state while jobs are learned
(accounting ingestion and replay); ``replay`` scores the policy against its baselines on a
real log.
"""
