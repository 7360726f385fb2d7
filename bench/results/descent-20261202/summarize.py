#!/usr/bin/env python3
"""Summarises run_engine.sh's output folder: one row per run (markdown)."""
import json, math, re, sys, pathlib

d = pathlib.Path(sys.argv[1])
print("| instance | seed | starts | best start (K, nK, Phi, C) | starts s | final K | final C | K/ceil(2C/m) | wall s |")
print("|---|---|---|---|---|---|---|---|---|")
for f in sorted(d.glob("*.stdout")):
    tag = f.stem
    inst, seed, starts = re.match(r"(instance_\d+)-s(\d+)-(.*)", tag).groups()
    try:
        r = json.loads(f.read_text())
    except ValueError:
        continue  # a run in progress
    err = (d / (tag + ".stderr")).read_text()
    tuples = [tuple(int(x) for x in t.split(", ")) for t in re.findall(r"  -> \(([^)]*)\)", err)]
    best = min(tuples)
    sd = float(re.search(r"starts done at ([0-9.]+) s", err).group(1))
    K, C, m = r["best"]["K"], r["best"]["C"], r["m"]
    ratio = K / math.ceil(2 * C / m)
    print(f"| {inst} | {seed} | {starts.replace('_', '+')} | {best} | {sd:.1f} | {K} | {C} | {ratio:.2f} | {r['elapsed_s']:.0f} |")
