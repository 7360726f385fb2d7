#!/bin/sh
# Evaluator benchmark: builds build/bin/bench_eval and runs it, writing
#   out/bench-eval/<UTC stamp>-<commit>/bench_eval.json   (manifest, raw samples, medians)
#   out/bench-eval/<UTC stamp>-<commit>/stdout.txt        (summary table)
#   out/bench-eval/<UTC stamp>-<commit>/machine.txt       (lscpu, load, other processes)
# Extra arguments go to bench_eval (see tests/bench/bench_eval.c), e.g.
#   scripts/bench-eval.sh --case grid:2519:4938 --note "shared machine"
# Environment: BUILD (build directory, default build), RESULTS (default out/bench-eval).
# Takes about 1.5 minutes on a 2-core machine with the default cases.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RESULTS=${RESULTS:-out/bench-eval}
cmake -S . -B "$BUILD" >/dev/null
cmake --build "$BUILD" --target bench_eval -j"$(nproc)" >/dev/null
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
dir="$RESULTS/$(date -u +%Y%m%dT%H%M%SZ)-$commit"
mkdir -p "$dir"
{
    echo "# uptime before"; uptime
    echo "# lscpu"; lscpu 2>/dev/null || true
    echo "# busiest processes before"; ps -eo pcpu,comm --sort=-pcpu 2>/dev/null | head -8 || true
} >"$dir/machine.txt"
status=0
"$BUILD/bin/bench_eval" --out "$dir/bench_eval.json" "$@" | tee "$dir/stdout.txt" || status=$?
{ echo "# uptime after"; uptime; } >>"$dir/machine.txt"
echo "results: $dir"
exit "$status"
