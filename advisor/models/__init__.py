"""Task runtime models: the advisor's averaged model, Lotaru as published, baselines, online learning.

Stdlib-only (what the sbatch wrapper needs at submit time, no numpy or scikit-learn):
``linalg``, ``distributions``, ``bayes``, ``features``, ``reference``, ``class_model`` (with
the reference model's transfer to a class), ``baselines`` and ``predict``, with the node
factors of advisor.factors.  Fitting (``components``,
``averaging``, ``lotaru``, ``fitting``) imports scikit-learn lazily; ``learning``, ``online``,
``censoring``, ``predicting``, ``calibrating`` and ``evaluation``/``cross_validation`` are the
use cases behind ``advisor learn``, accounting updates, ``advisor predict``, ``advisor
calibrate`` and ``advisor evaluate``.
"""
