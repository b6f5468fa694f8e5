"""The commands: name, the module that registers it, and its one-line help.

Only the module of the command being run is imported, so ``advisor sbatch`` (dispatched in
advisor/cli/__init__.py before this table is read) does not pay for numpy or argparse.
"""

from __future__ import annotations

#: Command name -> (module with ``register(subparsers, parents)``, one-line help).
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("advisor.cli.demo_cmd", "run the advisor on bundled sample data (no Slurm needed)"),
    "cluster": ("advisor.cli.cluster_cmd", "show partitions and nodes of the live cluster"),
    "bench": ("advisor.cli.bench_cmd", "run the node microbenchmarks on this machine"),
    "profile": ("advisor.cli.profile_cmd", "benchmark every node through Slurm and store it"),
    "nodes": ("advisor.cli.nodes_cmd", "node classes, scores and factors; import scores"),
    "runs": ("advisor.cli.runs_cmd", "import task executions (Lotaru, Nextflow, JSON)"),
    "learn": ("advisor.cli.learn_cmd", "(re)fit every task model from the observations"),
    "predict": ("advisor.cli.predict_cmd", "predicted runtime of a task on each node class"),
    "calibrate": ("advisor.cli.calibrate_cmd", "run a task once on every node class, learn it"),
    "evaluate": ("advisor.cli.evaluate_cmd", "the Lotaru paper's evaluation protocol"),
    "plan": ("advisor.cli.plan_cmd", "plan workflows with HEFT, PEFT or FDWS"),
    "estimate": ("advisor.cli.estimate_cmd", "the classic workflow makespan estimates"),
    "submit": ("advisor.cli.submit_cmd", "plan a workflow on the cluster and submit it, per task"),
    "insitu": ("advisor.cli.insitu_cmd", "in situ workflow step model, efficiency, makespan"),
    "sbatch": ("advisor.cli.sbatch_cmd", "submit like sbatch, with a predicted time limit"),
    "export": ("advisor.cli.export_cmd", "write the limits file slurm/job_submit.lua reads"),
    "update": ("advisor.cli.update_cmd", "ingest finished jobs from sacct and learn from them"),
    "replay": ("advisor.cli.replay_cmd", "score history-based limits against baselines on a log"),
    "report": ("advisor.cli.report_cmd", "administrator reports: accuracy, limits, nodes, models"),
    "publish": (
        "advisor.cli.publish_cmd",
        "write a read-only copy of the cache for users' wrappers",
    ),
    "guard": ("advisor.cli.guard_cmd", "raise tightened limits before running jobs reach them"),
    "readvise": (
        "advisor.cli.readvise_cmd",
        "lower pending jobs' limits once the history they lacked has come",
    ),
    "doctor": (
        "advisor.cli.doctor_cmd",
        "check the site set-up: cache, copy, export, plugin, update",
    ),
    "completion": (
        "advisor.cli.completion_cmd",
        "print a shell completion script (bash, zsh, fish)",
    ),
}
