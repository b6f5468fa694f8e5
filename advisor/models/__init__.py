"""Task runtime models: the advisor's (log scale, evidence over constants), Lotaru as published.

Stdlib-only, what the sbatch wrapper needs at submit time (no numpy or scikit-learn):
``distributions`` (Student-t, the prediction record), ``evidence`` (a positive quantity per task
on one class: explanations raced prequentially), ``pooling`` (node factors learnt from runs),
``conformal`` (the site's own errors make the intervals), ``task_model`` (a task's reference
evidence and its records on other classes) and ``predict``, with the node factors of
advisor.factors.  Lotaru as published (``reference``, ``lotaru``, ``components``, whose fit
imports scikit-learn) and the paper's ``baselines`` load only when asked for.  ``fitting``,
``updates``, ``online`` and ``censoring`` learn (``advisor learn``, accounting);
``evaluation``, ``cross_validation``, ``transfer_evaluation`` and ``comparison`` (numpy) are
``advisor evaluate``.
"""
