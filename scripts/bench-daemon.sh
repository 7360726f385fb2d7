#!/bin/sh
# Service benchmark of lcnd serve (tools/bench_daemon.py): GET /jobs/<id>
# latency with 50 concurrent pollers (idle, and while a job runs), and the
# time from POST /jobs to the engine starting on an idle daemon. Writes
#   out/bench-daemon/<UTC stamp>-<commit>/results.json  (manifest + results)
#   out/bench-daemon/<UTC stamp>-<commit>/summary.txt
#   out/bench-daemon/<UTC stamp>-<commit>/*.txt         (raw samples)
# Extra arguments go to bench_daemon.py, e.g.
#   scripts/bench-daemon.sh --note "shared machine, 2 other builds running"
# Environment: BUILD (default build), RESULTS (default out/bench-daemon).
# Takes about 1 minute.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RESULTS=${RESULTS:-out/bench-daemon}
cmake -S . -B "$BUILD" >/dev/null
cmake --build "$BUILD" --target lcnd lcnctl bench_http_poll -j"$(nproc)" >/dev/null
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
dir="$RESULTS/$(date -u +%Y%m%dT%H%M%SZ)-$commit"
mkdir -p "$dir"
python3 tools/bench_daemon.py --lcnd "$BUILD/bin/lcnd" --lcnctl "$BUILD/bin/lcnctl" \
    --poller "$BUILD/bin/bench_http_poll" --out "$dir" "$@"
echo "results: $dir"
