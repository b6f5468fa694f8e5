"""The sbatch wrapper: advise a time limit at submit time, and fail open to the real sbatch.

Every module here is on the submit path and imports only the standard library and light
advisor modules: no numpy, no scikit-learn, no sqlite_utils (see benchmarks/bench_wrapper.py).
"""
