"""Node profiling: microbenchmarks, hardware facts, node classes and imported scores (Lotaru Sec. 3.2)."""
