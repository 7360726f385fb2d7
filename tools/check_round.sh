#!/bin/sh
# Re-checks every committed layout of an acceptance round with `lcnctl check`
# against its instance, one line per layout:
#   GRAPH[.CONFIG].sSEED VALID K nK Phi C balance K/ceil(2C/m)
# usage: tools/check_round.sh LCNCTL ROUND_DIR INSTANCE_DIR...
# (the instance is looked up by the layout's graph name in each INSTANCE_DIR)
set -u
LCNCTL=$1 ROUND=$2
shift 2
for f in "$ROUND"/layouts/*.json; do
    name=$(basename "$f" .json)
    g=${name%%.*} # GRAPH[.CONFIG].sSEED: graph names hold no dot
    inst=
    for d in "$@"; do [ -f "$d/$g.json" ] && inst=$d/$g.json; done
    if [ -z "$inst" ]; then echo "$name no-instance"; continue; fi
    "$LCNCTL" check "$f" --instance "$inst" | python3 -c '
import json, math, sys
j = json.load(sys.stdin)
floor = max(1, math.ceil(2 * j["C"] / j["m"]))
print(sys.argv[1], j["valid"], j["K"], j["nK"], j["Phi"], j["C"], "balance", round(j["K"] / floor, 3))' "$name"
done
