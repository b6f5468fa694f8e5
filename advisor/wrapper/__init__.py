"""``advisor sbatch``, the command: advise the job (advisor.advice), run the real sbatch, fail open.

Every module here is on the submit path and imports only the standard library and light
advisor modules: no numpy, no scikit-learn, no sqlite_utils (see benchmarks/bench_wrapper.py).
"""
