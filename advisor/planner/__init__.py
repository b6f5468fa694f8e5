"""The workflow planner: workflows in (WfFormat or a runtime matrix), plans and estimates out.

Three sub-packages by job: ``scheduling`` (the algorithms: a ``Problem`` in, a self-checking
``Plan`` out, pure), ``workflow`` (reading inputs and turning a workflow into a ``Problem``) and
``cluster`` (planning on the cluster in the cache: node classes, task models, one sbatch job per
task).  ``summarise`` gives a plan's summary (``summary``, schemas/plan-output.json), ``gantt``
draws it.  The use cases are advisor.services.plan, .estimate and .submit.
"""
