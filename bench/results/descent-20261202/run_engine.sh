#!/bin/sh
# CPU-engine runs at a fixed move count: stress+force starts vs stress+force+descent.
# Usage: run_engine.sh BUILD_DIR OUT_DIR
# Moves per replica: 40,000 on instance_04, 8,000 on instance_06 (~40-90 s a run on 2 cores).
B=$1; O=$2
S=/work/shared/instances/course-2026
mkdir -p "$O"
for inst in instance_04 instance_06; do
  N=40000; [ $inst = instance_06 ] && N=8000
  for seed in 1 2 3; do
    for starts in stress+force stress+force+descent; do
      tag=$inst-s$seed-$(echo $starts | tr + _)
      t0=$(date +%s.%N)
      timeout 300 "$B/bin/lcnd" solve "$S/$inst.json" --out "$O/$tag.json" --threads 2 --seed $seed \
        --budget-s 600 --move-limit "$N" --tuning starts=$starts,debug=1 > "$O/$tag.stdout" 2> "$O/$tag.stderr"
      rc=$?
      t1=$(date +%s.%N)
      echo "$tag rc=$rc wall=$(echo "$t1 - $t0" | bc)"
    done
  done
done
