"""The workflow planner: workflows in (WfFormat or a runtime matrix), plans and estimates out.

``wfformat``/``problem_file`` read inputs, ``build`` turns a workflow into a ``Problem``, the
schedulers (``heft``, ``peft``, ``fdws``, listed in ``registry``) return a self-checking
``Plan``; ``uncertainty`` samples makespans, ``estimators`` are the classic estimates;
``plan_workflows`` (files: ``planning``; the cache: ``cluster_planning``) and ``estimating`` are
the use cases behind ``advisor plan`` and ``advisor estimate``.

On the cluster in the cache (``advisor plan --db``, ``advisor submit``): ``cluster`` (nodes,
classes, partitions), ``cache_models`` and ``matrix`` (runtimes per class), ``network``
(transfers), ``predictive_sampler`` (the models' spread), ``constraints`` (pinning a job to its
class), ``job_advice`` (partition and the wrapper's limit), ``jobs`` (sbatch arguments);
``submitting`` and ``run_status`` are the use cases of ``advisor submit`` and its status.
"""
