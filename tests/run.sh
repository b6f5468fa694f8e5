#!/usr/bin/env bash
# The whole test suite, on a fresh Debian 12 (Slurm 22.05) or Debian 13 (Slurm 24.11) machine as
# root: installs what it needs (Python deps in .venv, Debian's Slurm/munge/MariaDB when missing),
# runs the lint and type gates, starts the real test cluster, runs the unit, fuzz and integration
# tests, and stops the cluster it started.  Arguments go to pytest.
#
# The tests run under pytest-xdist (tests/conftest.py says how): the integration tests one after
# another on one worker, the unit and fuzz tests on the others meanwhile.  A skipped test fails
# the run (ADVISOR_TEST_CLUSTER=1).  ADVISOR_TEST_WORKERS sets the number of workers (default 3:
# on two cores the integration worker mostly waits on Slurm); 0 runs everything in one process.
#
# Each step is a function step_NAME, run in the order of STEPS; to add one, write its function
# and list it there.
set -euo pipefail
cd "$(dirname -- "${BASH_SOURCE[0]}")/.."

VENV=${ADVISOR_VENV:-.venv}
WORKERS=${ADVISOR_TEST_WORKERS:-3}
STEPS=(install lint types cluster tests)

step_install() {
	if [[ ! -x $VENV/bin/python ]]; then
		python3 -m venv "$VENV"
	fi
	"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[test,plots]'
}

step_lint() {
	"$VENV/bin/ruff" check advisor tests benchmarks
	"$VENV/bin/ruff" format --check advisor tests benchmarks
}

step_types() {
	"$VENV/bin/mypy"
}

step_cluster() {
	bash slurm/cluster.sh install
	bash slurm/cluster.sh up
	trap 'bash slurm/cluster.sh down' EXIT
	echo "Debian $(cat /etc/debian_version 2>/dev/null || echo '?'), $(sinfo --version), $("$VENV/bin/python" --version)"
}

step_tests() {
	export ADVISOR_TEST_CLUSTER=1
	local parallel=()
	if ((WORKERS > 0)); then
		parallel=(-n "$WORKERS" --dist loadgroup --no-loadscope-reorder)
	fi
	"$VENV/bin/pytest" -p no:cacheprovider "${parallel[@]}" "$@"
}

for step in "${STEPS[@]}"; do
	echo "== $step ($(date +%T))"
	"step_$step" "$@"
done
echo "== done ($(date +%T))"
