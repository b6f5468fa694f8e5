#!/usr/bin/env bash
# The whole test suite, on a fresh Debian 12 (Slurm 22.05) or Debian 13 (Slurm 24.11) machine as
# root: installs what it needs (Python deps in .venv, Debian's Slurm/munge/MariaDB when missing),
# starts the real test cluster, runs the unit, fuzz and integration tests and, beside them, the
# lint, type and docs gates, and stops the cluster it started.  Arguments go to pytest.
#
# The tests run under pytest-xdist (tests/conftest.py says how): ADVISOR_CLUSTER_WORKERS workers
# (default 4) for the integration modules, which mostly wait on Slurm, and ADVISOR_UNIT_WORKERS
# (default 2, one per core) for the unit and fuzz modules meanwhile; ADVISOR_UNIT_WORKERS=0
# ADVISOR_CLUSTER_WORKERS=0 runs everything in one process.  A skipped test fails the run
# (ADVISOR_TEST_CLUSTER=1, tests/conftest.py).
#
# STEPS run one after another; CHECKS run beside them from the end of `install` on, each into
# its own log, printed at the end (the run fails if one failed).  To add either, write its
# function step_NAME and list it.
set -euo pipefail
cd "$(dirname -- "${BASH_SOURCE[0]}")/.."

VENV=${ADVISOR_VENV:-.venv}
export ADVISOR_CLUSTER_WORKERS=${ADVISOR_CLUSTER_WORKERS:-4}
UNIT_WORKERS=${ADVISOR_UNIT_WORKERS:-2}
STEPS=(install checks cluster tests)
CHECKS=(lint types docs)

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

step_docs() { # the manual (mkdocs.yml): strict, so a broken link or anchor fails; built out of the tree
	local site
	site=$(mktemp -d)
	"$VENV/bin/mkdocs" build --strict --site-dir "$site"
	rm -rf -- "$site"
}

CHECK_DIR=$(mktemp -d)
declare -A CHECK_PIDS=()
step_checks() { # start every check in the background
	local check
	for check in "${CHECKS[@]}"; do
		"step_$check" >"$CHECK_DIR/$check.log" 2>&1 &
		CHECK_PIDS[$check]=$!
	done
}

wait_checks() { # print each check's output; fail if one failed
	local check failed=0
	for check in "${CHECKS[@]}"; do
		[[ -n ${CHECK_PIDS[$check]:-} ]] || continue
		if wait "${CHECK_PIDS[$check]}"; then
			echo "== $check: ok ($(date +%T))"
		else
			echo "== $check: FAILED ($(date +%T))"
			failed=1
		fi
		cat "$CHECK_DIR/$check.log"
	done
	return "$failed"
}

step_cluster() {
	bash slurm/cluster.sh install
	bash slurm/cluster.sh up
	CLUSTER_UP=1
	echo "Debian $(cat /etc/debian_version 2>/dev/null || echo '?'), $(sinfo --version), $("$VENV/bin/python" --version)"
}

step_tests() {
	export ADVISOR_TEST_CLUSTER=1
	local parallel=() workers=$((ADVISOR_CLUSTER_WORKERS + UNIT_WORKERS))
	if ((workers > 1)); then
		parallel=(-n "$workers" --dist loadscope --no-loadscope-reorder)
	fi
	"$VENV/bin/pytest" -p no:cacheprovider --durations=25 "${parallel[@]}" "$@" | tee "$CHECK_DIR/pytest.log"
}

CLUSTER_UP=0
finish() {
	local status=$? checks=0
	wait_checks || checks=$?
	if ((CLUSTER_UP)); then
		bash slurm/cluster.sh down || true
	fi
	echo "== done ($(date +%T))"
	if [[ -s $CHECK_DIR/pytest.log ]]; then # pytest's summary line closes the output
		tail -n 1 "$CHECK_DIR/pytest.log"
	fi
	rm -rf -- "$CHECK_DIR"
	if ((status == 0 && checks != 0)); then
		exit "$checks"
	fi
	exit "$status"
}
trap finish EXIT

for step in "${STEPS[@]}"; do
	echo "== $step ($(date +%T))"
	"step_$step" "$@"
done
