"""In situ workflows: step files, the step model of Do et al. and its generalisation, a test pipeline.

The model follows "A Novel Metric to Evaluate In Situ Workflows" (Do et al., ICCS 2020):
per-step stage times S, W, R, A reach a consistent state after a few warm-up steps, so a handful
of steps predicts the makespan and the resource-usage efficiency.
"""
