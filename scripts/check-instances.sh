#!/bin/sh
# Compares `lcnctl check` with the independent Python checker
# (tools/oracle/lcn_check.py) on every JSON file of the given directories
# (default: ../shared/instances, the benchmark graphs; sol-* files are checked
# with --instance against their input) and on held-out generated graphs and
# their mutations. Writes manifest.json (commit, dirty flag, machine, lcnctl
# hash, every input with its sha256), results.jsonl and summary.json.
#
# usage: scripts/check-instances.sh [--out DIR] [--heldout none|small|full] [DIR...]
#   --out DIR   results folder (default out/check-instances/<UTC time>-<commit>)
#   LCNCTL=path overrides build/bin/lcnctl.
# Exit status: 0 when both checkers agree on every file, 1 otherwise, 2 on
# usage errors.
set -eu
cd "$(dirname "$0")/.."

out=""
heldout="full"
while [ $# -gt 0 ]; do
    case "$1" in
    --out) [ $# -ge 2 ] || { echo "check-instances: --out needs a value" >&2; exit 2; }
        out="$2"; shift 2 ;;
    --out=*) out="${1#--out=}"; shift ;;
    --heldout) [ $# -ge 2 ] || { echo "check-instances: --heldout needs a value" >&2; exit 2; }
        heldout="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) echo "check-instances: unknown option '$1'" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || set -- ../shared/instances

lcnctl="${LCNCTL:-build/bin/lcnctl}"
if [ ! -x "$lcnctl" ]; then
    echo "check-instances: $lcnctl not found; build first (see README.md)" >&2
    exit 2
fi
for d in "$@"; do
    [ -d "$d" ] || { echo "check-instances: '$d' is not a directory" >&2; exit 2; }
done
if [ -z "$out" ]; then
    commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
    out="out/check-instances/$(date -u +%Y%m%dT%H%M%SZ)-$commit"
fi
exec python3 tools/oracle/run_checks.py --lcnctl "$lcnctl" --out "$out" --heldout "$heldout" "$@"
