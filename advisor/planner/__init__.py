"""The workflow planner: workflows in (WfFormat or a runtime matrix), plans and estimates out.

``wfformat``/``problem_file`` read inputs, ``build`` turns a workflow into a ``Problem``, the
schedulers (``heft``, ``peft``, ``fdws``, listed in ``registry``) return a self-checking
``Plan``; ``uncertainty`` samples makespans, ``estimators`` are the classic estimates and
``planning``/``estimating`` are the use cases behind ``advisor plan`` and ``advisor estimate``.
"""
