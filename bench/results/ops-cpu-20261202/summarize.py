#!/usr/bin/env python3
"""Summary table of raw/*.json (run.sh): K and C per run, medians per (graph, config)."""
import glob, json, os, statistics, sys
d = sys.argv[1] if len(sys.argv) > 1 else "raw"
runs = {}
for f in sorted(glob.glob(os.path.join(d, "*.json"))):
    if f.endswith(".layout.json") or os.path.getsize(f) == 0:
        continue
    g, cfg, s = os.path.basename(f)[:-5].rsplit(".", 2)
    j = json.load(open(f))
    runs.setdefault((g, cfg), []).append((s, j["best"]["K"], j["best"]["C"], j["elapsed_s"],
                                         j["telemetry"]["attempted"]))
print("| graph | config | K (s1, s2, s3) | C (s1, s2, s3) | median K | median C | mean time s | mean proposals (M) |")
print("|---|---|---|---|---|---|---|---|")
for g in sorted({k[0] for k in runs}):
    for cfg in ("old", "new", "bandit"):
        r = sorted(runs.get((g, cfg), []))
        if not r:
            continue
        ks = [x[1] for x in r]; cs = [x[2] for x in r]
        print(f"| {g} | {cfg} | {', '.join(map(str, ks))} | {', '.join(map(str, cs))} | "
              f"{statistics.median(ks):g} | {statistics.median(cs):g} | "
              f"{statistics.mean(x[3] for x in r):.0f} | {statistics.mean(x[4] for x in r) / 1e6:.2f} |")
