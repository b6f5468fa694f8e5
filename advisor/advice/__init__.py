"""The advice: from forecasts to the limits a job is given (the core the other packages share).

The settings and their site defaults, the forecasts a predictor gives per node class, the limit
per partition and what each policy decides, the ``JobAdvice`` built by ``advise()``, the cache
snapshot it reads and the ``advisor:`` comment tag it leaves on the job.  The sbatch command
(advisor.wrapper), the planner, the reports and accounting build on it.  Every module here is on
the submit path and imports only the standard library and light advisor modules: no numpy, no
scikit-learn, no sqlite_utils (see benchmarks/bench_wrapper.py).
"""
