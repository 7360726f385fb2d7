#!/usr/bin/env python3
"""Summarise solver benchmark runs (outcome layer) and re-check their layouts.

Reads run summaries NAME-sSEED.json (bench_solver, lcnd solve or lcnctl bench
output with "best", "time_to_target_s", "target_k") from one or more
directories, groups them by instance, and prints a markdown table: runs,
median and best final tuple (lexicographic), K per seed, runs that reached the
target (K <= target) within the budget, median time to target among those,
and censored runs (target missed: kept and counted, never dropped).

With --check INSTANCES_DIR, every run's coordinates (NAME-sSEED.coords.json,
see tools/layout_coords.py) are merged into its instance and checked with
`lcnctl check --instance` (--lcnctl PATH); a verdict or tuple that differs
from the run summary makes the report refuse to print and exit 1.

usage: solver_report.py [--check DIR --lcnctl PATH] [--label L] RUNDIR...
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import results_archive as ra  # runs of packed rounds live in ROUND/raw.tar.xz


def tup(b):
    return (b["K"], b["nK"], b["Phi"], b["C"])


def load(dirs):
    runs = {}
    for d in dirs:
        for f in ra.glob(os.path.join(d, "*-s*.json")):
            if f.endswith(".coords.json") or f.endswith(".layout.json"):
                continue
            m = re.match(r"(.*)-s(\d+)\.json$", os.path.basename(f))
            if not m:
                continue
            r = json.load(ra.open_text(f))
            r["_file"] = f
            r["_seed"] = int(m.group(2))
            runs.setdefault(m.group(1), []).append(r)
    return runs


def check(runs, inst_dir, lcnctl):
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, rs in runs.items():
            paths = glob.glob(os.path.join(inst_dir, "*", name + ".json"))
            if not paths:
                bad.append(f"{name}: instance not found under {inst_dir}")
                continue
            for r in rs:
                coords = r["_file"][:-5] + ".coords.json"
                lay = os.path.join(tmp, "l.json")
                subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "layout_coords.py"),
                                "restore", coords, paths[0], lay], check=True)
                p = subprocess.run([lcnctl, "check", lay, "--instance", paths[0]], capture_output=True, text=True)
                out = json.loads(p.stdout)
                if p.returncode != 0 or not out["valid"] or (out["K"], out["nK"], out["Phi"], out["C"]) != tup(r["best"]):
                    bad.append(f"{name} seed {r['_seed']}: lcnctl check says valid={out.get('valid')} "
                               f"({out.get('K')},{out.get('nK')},{out.get('Phi')},{out.get('C')}), run says {tup(r['best'])}")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check")
    ap.add_argument("--lcnctl", default="build/bin/lcnctl")
    ap.add_argument("--label", default="")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    runs = load(a.dirs)
    if a.check:
        bad = check(runs, a.check, a.lcnctl)
        if bad:
            print("REFUSED: layouts disagree with their run summaries")
            for b in bad:
                print("  " + b)
            return 1
        print(f"checked {sum(len(r) for r in runs.values())} layouts with lcnctl check --instance: all valid, tuples equal\n")
    print(f"| instance {a.label} | runs | median (K, nK, Phi, C) | best | K per seed | target | reached | median TTT s | censored |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in sorted(runs, key=lambda s: (not s.startswith("Automatic"), int(re.sub(r"\D", "", s) or 0))):
        rs = sorted(runs[name], key=lambda r: r["_seed"])
        ts = sorted(tup(r["best"]) for r in rs)
        med = ts[(len(ts) - 1) // 2]  # lower median of the lexicographic order
        tgt = rs[0].get("target_k")
        reached = [r for r in rs if tgt is not None and tgt >= 0 and r["best"]["K"] <= tgt and r.get("time_to_target_s") is not None]
        ttt = statistics.median([r["time_to_target_s"] for r in reached]) if reached else None
        print(f"| {name} | {len(rs)} | {med} | {ts[0]} | {', '.join(str(r['best']['K']) for r in rs)} | "
              f"{tgt} | {len(reached)}/{len(rs)} | {'%.1f' % ttt if ttt is not None else '-'} | {len(rs) - len(reached)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
