"""Scheduling algorithms: a ``Problem`` in, a self-checking ``Plan`` out; pure numpy, no I/O.

``heft``, ``peft`` and ``fdws`` (listed in ``registry``) place tasks on ``timeline`` slots by
``ranks``; ``uncertainty`` samples the plan's makespan (with Slurm's ``dispatch`` waits when
measured), ``fairness`` compares workflows sharing the nodes.  Nothing here reads a file, the
cache or an advisor setting.
"""
