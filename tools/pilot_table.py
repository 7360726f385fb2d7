#!/usr/bin/env python3
"""One row per (pilot folder, instance): K per seed, the median tuple, steps
per second per replica and the replica count, from the runs' JSON files
(bench_solver's output as filed by scripts/collect-gpu-round.sh).

  pilot_table.py DIR [DIR ...]   (each DIR holds runs/NAME-sSEED.json)
"""
import json
import os
import statistics
import sys

import results_archive as ra  # runs of packed rounds live in ROUND/raw.tar.xz


def main():
    print("| pilot | tuning | instance | replicas | K per seed | median tuple | steps/s per replica (median) |")
    print("|---|---|---|---|---|---|---|")
    for d in sys.argv[1:]:
        tuning = ""
        man = os.path.join(d, "manifest-solver.json")
        if ra.exists(man):
            cmd = json.load(ra.open_text(man)).get("command", "")
            if "--tuning " in cmd:
                tuning = cmd.split("--tuning ", 1)[1].split()[0]
        runs = {}
        for f in ra.glob(os.path.join(d, "runs", "*-s*.json")):
            if f.endswith(".coords.json"):
                continue
            j = json.load(ra.open_text(f))
            name, seed = os.path.basename(f)[:-5].rsplit("-s", 1)
            runs.setdefault(name, []).append((int(seed), j))
        for name, rs in sorted(runs.items()):
            rs.sort(key=lambda x: x[0])
            tuples = [tuple(j["best"][k] for k in ("K", "nK", "Phi", "C")) for _, j in rs]
            med = sorted(tuples)[(len(tuples) - 1) // 2]
            sps = statistics.median(j["telemetry"]["selected"] / j["elapsed_s"] / j["replicas"] for _, j in rs)
            ks = " ".join(str(t[0]) for t in tuples)
            print(f"| {d} | `{tuning}` | {name} | {rs[0][1]['replicas']} | {ks} | {med} | {sps:.0f} |")


if __name__ == "__main__":
    main()
