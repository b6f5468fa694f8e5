"""pytest-xdist's scheduling by module, with some workers kept for the test cluster's modules.

A module's tests run on one worker (its module-scoped fixtures are built once, and an
integration module holds its turn on the cluster while it runs: tests/helpers/cluster_turns.py).
The integration modules mostly wait on Slurm (a job starting, sacct's latency, a one-minute
TIMEOUT) while the unit and fuzz modules keep a core busy: the first ``cluster_workers`` workers
take integration modules, the other workers the rest, so that neither kind queues behind the
other; a worker whose kind has run out takes the other kind.

The scope is the module path, read from the test's id (``--dist loadscope`` would split classes
apart, and ``--dist loadgroup``'s ``xdist_group`` marks do not reach the scheduler with pytest 9,
whose items no longer keep their id in the ``_nodeid`` that xdist 3.8 rewrites).
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController

#: Where the integration modules are (test ids start with it).
INTEGRATION = "tests/integration/"


class ClusterFirstScheduling(LoadScopeScheduling):
    """Scopes are modules; workers gw0 .. gw(cluster_workers-1) prefer integration modules."""

    cluster_workers = 4

    def _split_scope(self, nodeid: str) -> str:
        return nodeid.split("::", 1)[0]

    def _prefers_cluster(self, node: WorkerController) -> bool:
        worker = str(node.gateway.id)  # "gw0", "gw1", ...
        return worker.startswith("gw") and int(worker[2:]) < self.cluster_workers

    def _assign_work_unit(self, node: WorkerController) -> None:
        wanted = self._prefers_cluster(node)
        scope = next(
            (s for s in self.workqueue if s.startswith(INTEGRATION) == wanted),
            next(iter(self.workqueue)),
        )
        self.workqueue.move_to_end(scope, last=False)
        super()._assign_work_unit(node)
