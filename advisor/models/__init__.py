"""Task runtime models: Lotaru's transferred regression, its baselines, and online learning.

Stdlib-only (what the sbatch wrapper needs at submit time, no numpy or scikit-learn):
``linalg``, ``distributions``, ``bayes``, ``features``, ``reference``, ``transfer``,
``class_model``, ``baselines``, ``node_factor`` and ``predict``.  Fitting (``lotaru``) imports
scikit-learn lazily; ``learning``, ``online``, ``predicting`` and ``evaluation`` are the use
cases behind ``advisor learn``, accounting updates, ``advisor predict`` and ``advisor evaluate``.
"""
