"""The use cases: one module per command, named after it, that the command's CLI module calls.

``advisor X`` is ``advisor/cli/X_cmd.py`` (parse, call, render) and then ``services/X.py``:
cluster, profile, runs, learn, predict, calibrate, plan, estimate, submit, export, publish,
guard, doctor, demo.  A use case composes the domain packages and returns its result.  The
commands whose use case still lives in its domain
package: bench (profiling/bench.py), nodes (profiling/view.py), evaluate
(models/evaluation.py, models/cross_validation.py), insitu (insitu/), update
(accounting/update.py), replay (replay/), report (reports/), sbatch (wrapper/submit.py: the
submit path keeps its own import budget) and completion (completion/).
"""
