#!/bin/bash
# Files a GPU round fetched from the device machine into the repository:
#   scripts/collect-gpu-round.sh SRC DST [CPU_RESULTS]
# SRC: the round's OUTDIR as fetched (manifests, logs, runs/ with each run's
# JSON and layout); DST: a new folder under bench/results/. Copies the
# manifests, logs, summaries and rate files, keeps each layout as
# coordinates only (tools/layout_coords.py: the instances are never copied),
# re-checks every layout with the oracle (lcnctl check) into DST/report.md,
# and with CPU_RESULTS (a CPU engine results folder) writes the side-by-side
# table DST/compare-cpu.md/.json; then packs the round's raw files (runs/,
# logs, per-run JSON) into DST/raw.tar.xz (tools/results_archive.py; the
# readers in tools/ open them there). Stops at the first layout the oracle
# refuses.
# env: LCN_INSTANCES (../shared/instances)  LCNCTL (build/bin/lcnctl)
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 SRC DST [CPU_RESULTS]" >&2
    exit 2
fi
SRC=$1 DST=$2 CPU=${3:-}
INST=${LCN_INSTANCES:-../shared/instances}
LCNCTL=${LCNCTL:-build/bin/lcnctl}
if [ -e "$DST" ]; then
    echo "$DST exists: results are never overwritten" >&2
    exit 1
fi
mkdir -p "$DST"
for f in "$SRC"/*.json "$SRC"/*.log "$SRC"/*.txt; do
    [ -e "$f" ] || continue
    case $(basename "$f") in
        *-layout.json | grid-*.json) continue ;; # layouts and generated graphs stay behind
    esac
    cp "$f" "$DST"/
done
if [ -d "$SRC/runs" ]; then
    mkdir -p "$DST/runs"
    for f in "$SRC"/runs/*.json; do
        case $f in *.layout.json) continue ;; esac
        base=$(basename "$f" .json)
        name=${base%-s*}
        inst=$(ls "$INST"/*/"$name".json 2>/dev/null | head -1)
        if [ -z "$inst" ]; then
            echo "no instance $name under $INST" >&2
            exit 1
        fi
        cp "$f" "$DST/runs/"
        python3 tools/layout_coords.py extract "$SRC/runs/$base.layout.json" "$inst" "$DST/runs/$base.coords.json"
    done
    python3 tools/solver_report.py --check "$INST" --lcnctl "$LCNCTL" "$DST/runs" > "$DST/report.md"
    head -1 "$DST/report.md"
    if [ -n "$CPU" ]; then
        python3 tools/compare_engines.py --a "CPU 2 threads" "$CPU" --b "GPU H200" "$DST/runs" \
            --json "$DST/compare-cpu.json" > "$DST/compare-cpu.md"
        tail -1 "$DST/compare-cpu.md"
    fi
fi
python3 tools/results_archive.py pack "$DST"
