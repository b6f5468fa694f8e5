#!/usr/bin/env bash
# The long hostile-input campaign of docs/reliability.md, in one command:
#
#   benchmarks/fuzz_campaign.sh [EXAMPLES] [OUT]      # defaults: 100000, /tmp/fuzz-campaign-DATE
#
# Every hypothesis test of tests/fuzz gets EXAMPLES generated inputs (ADVISOR_FUZZ_EXAMPLES),
# in two parallel processes at nice 19 (the suite split by file so both take about as long;
# each file its own pytest run, in order, the costliest last),
# with a fixed seed so a re-run generates the same inputs.  The two tests that build a
# 100,000-task workflow are left out: they are one large input each and run in the normal suite.
# OUT keeps each half's pytest output with --hypothesis-show-statistics (passing, failing and
# invalid test cases per test) and the exact outcome counts as JSON; the script then prints the
# per-test table and exits non-zero if either half failed.
set -euo pipefail
cd "$(dirname "$0")/.."
EXAMPLES=${1:-100000}
OUT=${2:-/tmp/fuzz-campaign-$(date +%Y%m%d-%H%M%S)}
SEED=${ADVISOR_FUZZ_SEED:-0}
MEMORY_KB=${ADVISOR_FUZZ_MEMORY_KB:-8000000}
mkdir -p "$OUT"

half() {
    # One pytest run per file, one after the other, so each file's statistics and counts are
    # kept as soon as it is done (OUT/NAME-FILE.txt and .json).  A cap on the address space: an
    # input that makes a parser allocate without bound fails its test with MemoryError instead
    # of waking the kernel's OOM killer.
    local name=$1 file base failed=0
    shift
    for file in "$@"; do
        base=$(basename "$file" .py)
        (
            ulimit -v "$MEMORY_KB"
            ADVISOR_FUZZ_EXAMPLES=$EXAMPLES ADVISOR_FUZZ_COUNTS="$OUT/$name-$base.json" \
                nice -n 19 .venv/bin/pytest -q -p no:cacheprovider -m fuzz -k "not 100k" \
                --hypothesis-show-statistics --hypothesis-seed="$SEED" "$file" \
                >"$OUT/$name-$base.txt" 2>&1
        ) || failed=1  # the next files still run; the exit status says a test failed
    done
    return "$failed"
}

start=$(date +%s)
half a tests/fuzz/test_fuzz_planner.py tests/fuzz/test_fuzz_wrapper.py tests/fuzz/test_fuzz_spool.py \
    tests/fuzz/test_fuzz_lua.py tests/fuzz/test_fuzz_cli.py &
a=$!
half b tests/fuzz/test_fuzz_slurm_text.py tests/fuzz/test_fuzz_accounting.py \
    tests/fuzz/test_fuzz_imports.py tests/fuzz/test_fuzz_options.py \
    tests/fuzz/test_fuzz_insitu_nodes.py tests/fuzz/test_fuzz_tags.py &
b=$!
status=0
wait "$a" || status=1
wait "$b" || status=1
echo "campaign: $EXAMPLES examples per test, seed $SEED, $(($(date +%s) - start)) s wall, output in $OUT"
.venv/bin/python benchmarks/fuzz_counts.py "$OUT"/[ab]-*.txt
tail -n 1 "$OUT"/[ab]-*.txt
exit "$status"
