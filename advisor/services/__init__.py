"""The use cases: one module per command, named after it, that the command's CLI module calls.

``advisor X`` is ``advisor/cli/X_cmd.py`` (parse, call, render) and then ``services/X.py``,
which composes the domain packages and returns a typed result (its ``to_json()`` is the
command's JSON, as its schema in schemas/ describes): bench, calibrate, cluster, demo,
doctor, estimate, evaluate, export, guard, insitu, learn, nodes, plan, predict, profile,
publish, replay, report, runs, submit, update.  Not here: sbatch (``advisor/wrapper/submit.py``:
the submit path keeps its own import budget) and completion (a shell script,
``advisor/completion``).
"""
