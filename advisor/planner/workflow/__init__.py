"""Workflow inputs: WfFormat files and planning problems read, and turned into a ``Problem``.

``load`` reads either kind (``wfformat``, ``problem_file``) into a ``Workflow`` or a
``Problem``; ``build`` gives a workflow's tasks their runtimes (recorded, or ``--cpu-work`` on a
``platform``) and transfers (``network``); ``classic_estimates`` are the makespan estimates
without a schedule.
"""
