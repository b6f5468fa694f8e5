"""Planning on the cluster in the cache: node classes, task models, one sbatch job per task.

``nodes`` (the cluster's nodes, classes and partitions), ``cache_models`` and ``matrix`` (runtimes
per class from the task models), ``predictive_sampler`` (the models' spread), ``constraints``
(pinning a job to its class), ``job_advice`` (its partition and the wrapper's limit), ``jobs``
(sbatch arguments), ``dispatch_source`` (Slurm's waits measured on earlier runs) and ``reasons``
(why a task runs on its class).  Each is handed an open cache (a ``Store``); none opens one.
"""
