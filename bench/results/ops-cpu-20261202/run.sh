#!/bin/sh
# Operator comparison (issue 15): 3 configurations x 3 seeds x graphs, fixed
# move counts (deterministic: machine load changes the time, not the result).
# usage: run.sh LCND OUTDIR [graphs...]   (graph spec: path:moves)
LCND=$1; OUT=$2; shift 2
NEW="p_median=0.1,p_empty=0.02,p_pair=0.03,p_swap=0.02,p_cluster=0.1"
mkdir -p "$OUT"
for spec in "$@"; do
  G=${spec%%:*}; N=${spec##*:}; name=$(basename "$G" .json)
  for seed in 1 2 3; do
    for cfg in old new bandit; do
      case $cfg in old) T="";; new) T="$NEW";; bandit) T="ops=bandit";; esac
      f="$OUT/$name.$cfg.s$seed"
      [ -s "$f.json" ] && continue
      $LCND solve "$G" --out "$f.layout.json" --threads 2 --seed $seed --budget-s 900 \
          --move-limit $N ${T:+--tuning "$T"} >"$f.json" 2>"$f.err" || echo "FAIL $f"
      rm -f "$f.layout.json"
    done
  done
done
