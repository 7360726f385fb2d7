#!/usr/bin/env python3
"""Side-by-side outcome of two solver benchmarks on the same instances and seeds.

Reads two run directories, each in one of the two formats the project writes:
  * scripts/bench-cpu.sh output (DIR/runs/NAME.sSEED.json: the lcnd solve
    summary under "solve", plus "valid" and "tuple_matches_check" from
    `lcnctl check --instance`), or
  * run summaries NAME-sSEED.json (tests/gpu/run-on-gpu.sh solver round,
    lcnctl bench): "best" and "oracle_valid".
A run counts only when it is valid (checked); others are listed as failed.

Per instance it prints the median final tuple of each side (tuples ordered
lexicographically; the lower middle for an even count), whether B's median is
at most A's, and the paired per-seed outcome (B better / equal / worse on the
same seed). Instances present on one side only are listed, never dropped.
Writes the table as markdown to stdout and, with --json F, the rows to F.

usage: compare_engines.py --a LABEL DIR --b LABEL DIR [--json F]
"""
import argparse
import json
import os
import re
import sys

import results_archive as ra  # runs of packed rounds live in ROUND/raw.tar.xz


def tup(b):
    return (b["K"], b["nK"], b["Phi"], b["C"])


def fmt(t):
    return "(%d, %d, %d, %d)" % t if t else "-"


def load(d):
    """{instance: {seed: tuple or None (failed)}}"""
    out = {}
    if ra.isdir(os.path.join(d, "runs")) and ra.exists(os.path.join(d, "manifest.json")):
        for f in ra.glob(os.path.join(d, "runs", "*.json")):
            if f.endswith((".solve.json", ".check.json", ".coords.json")):
                continue
            r = json.load(ra.open_text(f))
            ok = r.get("exit") == 0 and r.get("valid") and r.get("tuple_matches_check")
            out.setdefault(r["instance"], {})[int(r["seed"])] = tup(r["solve"]["best"]) if ok else None
        return out
    for f in ra.glob(os.path.join(d, "*-s*.json")):
        m = re.match(r"(.*)-s(\d+)\.json$", os.path.basename(f))
        if not m or f.endswith(".coords.json"):
            continue
        r = json.load(ra.open_text(f))
        ok = r.get("oracle_valid", False) and "best" in r
        out.setdefault(m.group(1), {})[int(m.group(2))] = tup(r["best"]) if ok else None
    return out


def median(ts):
    ts = sorted(t for t in ts if t is not None)
    return ts[(len(ts) - 1) // 2] if ts else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", nargs=2, metavar=("LABEL", "DIR"), required=True)
    ap.add_argument("--b", nargs=2, metavar=("LABEL", "DIR"), required=True)
    ap.add_argument("--json")
    o = ap.parse_args()
    (la, da), (lb, db) = o.a, o.b
    A, B = load(da), load(db)
    if not A or not B:
        sys.exit("compare_engines: no runs in %s" % (da if not A else db))
    rows = []
    for name in sorted(set(A) | set(B), key=lambda s: (s.startswith("Automatic"), len(s), s)):
        a, b = A.get(name, {}), B.get(name, {})
        ma, mb = median(a.values()), median(b.values())
        paired = sorted(set(a) & set(b))
        better = sum(1 for s in paired if a[s] and b[s] and b[s] < a[s])
        equal = sum(1 for s in paired if a[s] and b[s] and b[s] == a[s])
        worse = sum(1 for s in paired if a[s] and b[s] and b[s] > a[s])
        rows.append({
            "instance": name,
            "runs_a": len(a), "failed_a": sum(1 for t in a.values() if t is None),
            "runs_b": len(b), "failed_b": sum(1 for t in b.values() if t is None),
            "median_a": ma, "median_b": mb,
            "b_at_most_a": (ma is not None and mb is not None and mb <= ma),
            "K_a": [a[s][0] if a[s] else None for s in sorted(a)],
            "K_b": [b[s][0] if b[s] else None for s in sorted(b)],
            "paired_seeds": len(paired), "b_better": better, "b_equal": equal, "b_worse": worse,
        })
    print("| instance | %s median tuple | %s median tuple | %s <= %s | K per seed (%s) | K per seed (%s) "
          "| paired seeds: %s better / equal / worse |" % (la, lb, lb, la, la, lb, lb))
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        ks = lambda v: " ".join("x" if k is None else str(k) for k in v) or "-"
        print("| %s | %s | %s | %s | %s | %s | %d / %d / %d of %d |" % (
            r["instance"], fmt(r["median_a"]), fmt(r["median_b"]),
            "yes" if r["b_at_most_a"] else "**no**", ks(r["K_a"]), ks(r["K_b"]),
            r["b_better"], r["b_equal"], r["b_worse"], r["paired_seeds"]))
    n_ok = sum(r["b_at_most_a"] for r in rows)
    print("\n%s median <= %s median on %d of %d instances." % (lb, la, n_ok, len(rows)))
    if o.json:
        with open(o.json, "w") as f:
            json.dump({"a": {"label": la, "dir": da}, "b": {"label": lb, "dir": db}, "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
