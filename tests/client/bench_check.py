#!/usr/bin/env python3
"""Re-derives an `lcnctl bench` output directory from its raw files, with
the lcnctl binary's `check --instance` as the judge: every run's solution is
checked again, its tuple and verdict compared with the manifest, and every
graph's summary (valid, refused, failed, median and best tuple, successes,
censored, median time to target) recomputed and compared with summary.json.
Input hashes are recomputed with hashlib.

usage: bench_check.py LCNCTL OUTDIR      (exit 0: everything agrees)
"""

import hashlib
import json
import os
import statistics
import subprocess
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def tup(d):
    return (d["K"], d["nK"], d["Phi"], d["C"])


def verify(lcnctl, out):
    """Returns a list of disagreements (empty: all agree) and a report."""
    bad = []
    man = load(os.path.join(out, "manifest.json"))
    summary = load(os.path.join(out, "summary.json"))
    files = {}
    for inp in man["inputs"]:
        with open(inp["file"], "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() != inp["sha256"]:
                bad.append("%s: sha256 differs from the manifest" % inp["file"])
        files[inp["name"]] = inp["file"]
    targets = {i["name"]: i["target_k"] for i in man["inputs"]}
    per = {}
    lines = []
    for run in man["runs"]:
        base = os.path.join(out, run["files"])
        name, seed = run["graph"], run["seed"]
        sol = base + ".solution.json"
        verdict = None
        if os.path.exists(sol):
            p = subprocess.run([lcnctl, "check", sol, "--instance", files[name]],
                               capture_output=True, text=True)
            rep = json.loads(p.stdout)
            verdict = (rep["valid"], tup(rep) if rep["K"] is not None else None)
            if (p.returncode == 0) != rep["valid"]:
                bad.append("%s seed %d: check's exit status contradicts its verdict" % (name, seed))
        if run["outcome"] == "ok":
            if not verdict or not verdict[0]:
                bad.append("%s seed %d: summarised but lcnctl check rejects it" % (name, seed))
            elif tuple(run["tuple"].values()) != verdict[1]:
                bad.append("%s seed %d: tuple %s, lcnctl check %s" % (
                    name, seed, tuple(run["tuple"].values()), verdict[1]))
            st = load(base + ".status.json")
            if st["state"] != "succeeded" or tup(st["best"]) != verdict[1]:
                bad.append("%s seed %d: status %s %s" % (name, seed, st["state"], st["best"]))
            t = targets[name]
            if t is not None and run["success"] != (verdict[1][0] <= t):
                bad.append("%s seed %d: success flag wrong" % (name, seed))
        elif run["outcome"] == "refused" and verdict and verdict[0]:
            # refused although valid: only a tuple disagreement may cause that
            st = load(base + ".status.json")
            lcn = load(sol).get("lcn", {})
            if tup(st["best"]) == verdict[1] and tup(lcn) == verdict[1]:
                bad.append("%s seed %d: refused without a reason" % (name, seed))
        per.setdefault(name, []).append((run, verdict))
        lines.append("%-12s seed %d  %-8s check: %s" % (
            name, seed, run["outcome"],
            "valid %s" % (verdict[1],) if verdict and verdict[0] else
            ("INVALID" if verdict else "no solution")))
    for g in summary["graphs"]:
        runs = per.get(g["graph"], [])
        ok = sorted(v[1] for r, v in runs if r["outcome"] == "ok")
        want = {"runs": len(runs), "valid": len(ok),
                "refused": sum(r["outcome"] == "refused" for r, _ in runs),
                "failed": sum(r["outcome"] == "failed" for r, _ in runs)}
        for k, v in want.items():
            if g[k] != v:
                bad.append("%s: %s %s, recomputed %s" % (g["graph"], k, g[k], v))
        if ok:
            if tuple(g["best_tuple"].values()) != ok[0]:
                bad.append("%s: best tuple" % g["graph"])
            if tuple(g["median_tuple"].values()) != ok[(len(ok) - 1) // 2]:
                bad.append("%s: median tuple" % g["graph"])
        t = targets[g["graph"]]
        if t is not None:
            succ = [r for r, v in runs if r["outcome"] == "ok" and v[1][0] <= t]
            if g["successes"] != len(succ) or g["censored"] != len(runs) - len(succ):
                bad.append("%s: successes/censored" % g["graph"])
            ttt = [r["time_to_target_s"] for r in succ]
            m = statistics.median(ttt) if ttt else None
            if (m is None) != (g["median_time_to_target_s"] is None) or (
                    m is not None and abs(m - g["median_time_to_target_s"]) > 1e-9):
                bad.append("%s: median time to target %s, recomputed %s" % (
                    g["graph"], g["median_time_to_target_s"], m))
    return bad, lines


def main():
    lcnctl, out = sys.argv[1], sys.argv[2]
    bad, lines = verify(lcnctl, out)
    print("\n".join(lines))
    for b in bad:
        print("DISAGREES: " + b)
    print("%d runs re-checked with %s check --instance: %s" % (
        len(lines), lcnctl, "all agree" if not bad else "%d disagreements" % len(bad)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
