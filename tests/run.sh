#!/usr/bin/env bash
# The whole test suite, on a fresh Debian 12 (Slurm 22.05) or Debian 13 (Slurm 24.11) machine as
# root: installs what it needs (Python deps in .venv, Debian's Slurm/munge/MariaDB when missing),
# starts the real test cluster, runs the lint and type gates, unit and integration tests, and
# stops the cluster it started.
set -euo pipefail
cd "$(dirname -- "${BASH_SOURCE[0]}")/.."

VENV=${ADVISOR_VENV:-.venv}
if [[ ! -x $VENV/bin/python ]]; then
	python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[test,plots]'

echo "== lint and types"
"$VENV/bin/ruff" check advisor tests benchmarks
"$VENV/bin/ruff" format --check advisor tests benchmarks
"$VENV/bin/mypy"

echo "== docs"
# The manual (mkdocs.yml): strict, so a broken link or anchor fails; built out of the tree.
site=$(mktemp -d)
"$VENV/bin/mkdocs" build --strict --site-dir "$site"
rm -rf -- "$site"

echo "== test cluster"
bash slurm/cluster.sh install
bash slurm/cluster.sh up
trap 'bash slurm/cluster.sh down' EXIT
echo "Debian $(cat /etc/debian_version 2>/dev/null || echo '?'), $(sinfo --version), $("$VENV/bin/python" --version)"

echo "== tests"
export ADVISOR_TEST_CLUSTER=1
"$VENV/bin/pytest" -p no:cacheprovider "$@"
