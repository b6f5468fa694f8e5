"""pytest-xdist's loadgroup scheduling with some workers kept for the test cluster's modules.

The integration modules mostly wait on Slurm (a job starting, sacct's latency, a one-minute
TIMEOUT), the unit and fuzz modules keep a core busy: the first CLUSTER_WORKERS workers take
integration modules (each one a group, tests/conftest.py; tests/helpers/cluster_turns.py says
which may run at once), the other workers the rest, so that neither kind waits behind the other.
A worker whose kind has run out takes the other kind.
"""

from __future__ import annotations

from xdist.scheduler import LoadGroupScheduling
from xdist.workermanage import WorkerController

#: The prefix of an integration module's xdist group.
CLUSTER_PREFIX = "cluster:"


class ClusterFirstScheduling(LoadGroupScheduling):
    """Loadgroup scheduling; workers gw0 .. gw(cluster_workers-1) prefer the cluster's groups."""

    cluster_workers = 4

    def _prefers_cluster(self, node: WorkerController) -> bool:
        worker = str(node.gateway.id)  # "gw0", "gw1", ...
        return worker.startswith("gw") and int(worker[2:]) < self.cluster_workers

    def _assign_work_unit(self, node: WorkerController) -> None:
        wanted = self._prefers_cluster(node)
        scope = next(
            (s for s in self.workqueue if s.startswith(CLUSTER_PREFIX) == wanted),
            next(iter(self.workqueue)),
        )
        self.workqueue.move_to_end(scope, last=False)
        super()._assign_work_unit(node)
