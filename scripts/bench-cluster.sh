#!/bin/sh
# Acceptance benchmark of the shared queue (issue 20, tools/bench_cluster.py):
# three lcnd on one throwaway PostgreSQL (tests/pg/with-postgres.sh), 200
# jobs of 2-5 s submitted round-robin while one daemon is killed with
# SIGKILL every 10 s and restarted; then GET /jobs/<id> latency through the
# daemons that do not run the job (50 pollers) and DELETE through another
# daemon. Writes OUT/manifest.json (commit, machine, command, inputs, seeds,
# every job) and OUT/summary.txt.
#   scripts/bench-cluster.sh OUT [bench_cluster.py arguments...]
# Environment: BUILD (default build), INSTANCES (default
# ../shared/instances/gd2025-automatic). Takes about 6 minutes on 2 cores.
set -eu
cd "$(dirname "$0")/.."
OUT=$1
shift
BUILD=${BUILD:-build}
INSTANCES=${INSTANCES:-../shared/instances/gd2025-automatic}
cmake --build "$BUILD" --target lcnd lcnctl bench_http_poll -j2 >/dev/null
exec sh tests/pg/with-postgres.sh python3 tools/bench_cluster.py --lcnd "$BUILD/bin/lcnd" \
    --lcnctl "$BUILD/bin/lcnctl" --poller "$BUILD/bin/bench_http_poll" \
    --instances "$INSTANCES" --out "$OUT" "$@"
