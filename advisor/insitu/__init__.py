"""In situ workflows: step files, the step model of Do et al. and its generalisation, a test pipeline.

The model follows "A Novel Metric to Evaluate In Situ Workflows" (Do et al., ICCS 2020):
per-step stage times S, W, R, A reach a consistent state after a few warm-up steps, so a handful
of steps predicts the makespan and the resource-usage efficiency.
"""

#: The most steps a makespan is predicted for (``advisor insitu --steps``, ``advisor sbatch
#: --advisor-steps``): a million steps a second for thirty years; more is a typo, and 10**400
#: steps overflowed the float makespan.
MAX_STEPS = 10**15
