#!/usr/bin/env python3
"""Summarises a bench-cpu.sh output directory into summary.md and summary.csv.

Per instance: runs, valid runs, the median and the best final tuple (tuples
ordered lexicographically; the median of an even count is the lower middle),
the median K, and the time-to-target distribution for the instance's target K:
every run is listed, runs that missed the target as censored ">budget" (never
dropped, never zero); the median time-to-target is reported only when more
than half of the runs reached the target (otherwise it is censored too).
A run whose layout failed `lcnctl check --instance`, or whose claimed tuple
differs from the checker's, counts as a failed run and is flagged.
"""
import csv
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import results_archive as ra  # noqa: E402 (runs of packed rounds live in DIR/raw.tar.xz)


def tup(b):
    return (b["K"], b["nK"], b["Phi"], b["C"])


def fmt(t):
    return "(%d, %d, %d, %d)" % t if t else "-"


def main(d):
    man = json.load(ra.open_text(os.path.join(d, "manifest.json")))
    budget = man["budget_s"]
    runs = []
    for f in ra.listdir(os.path.join(d, "runs")):
        if f.endswith(".json") and not f.endswith(".solve.json") and not f.endswith(".check.json"):
            runs.append(json.load(ra.open_text(os.path.join(d, "runs", f))))
    order = [i["name"] for i in man["instances"]]
    rows = []
    for name in order:
        rs = sorted((r for r in runs if r["instance"] == name), key=lambda r: r["seed"])
        if not rs:
            continue
        ok = [r for r in rs if r["exit"] == 0 and r["valid"] and r["tuple_matches_check"]]
        tuples = sorted(tup(r["solve"]["best"]) for r in ok)
        med = tuples[(len(tuples) - 1) // 2] if tuples else None
        best = tuples[0] if tuples else None
        target = rs[0]["target_k"]
        ttt = []
        for r in rs:
            t = (r["solve"] or {}).get("time_to_target_s") if r in ok else None
            ttt.append((r["seed"], t))
        reached = [t for _, t in ttt if t is not None]
        if target is not None and len(reached) * 2 > len(rs):
            srt = sorted(t if t is not None else float("inf") for _, t in ttt)
            mt = srt[(len(srt) - 1) // 2]
            med_ttt = "%.2f" % mt
        elif target is not None:
            med_ttt = ">%g (censored)" % budget
        else:
            med_ttt = "-"
        rate = [r["solve"]["telemetry"]["attempted_per_s"] for r in ok]
        rows.append({
            "instance": name,
            "n": ok[0]["solve"]["n"] if ok else "",
            "m": ok[0]["solve"]["m"] if ok else "",
            "runs": len(rs),
            "valid_runs": len(ok),
            "median_K": med[0] if med else "",
            "median_tuple": fmt(med),
            "best_tuple": fmt(best),
            "all_K": " ".join(str(t[0]) for t in sorted(tuples, key=lambda t: t)),
            "target_K": "" if target is None else target,
            "reached": "%d/%d" % (len(reached), len(rs)) if target is not None else "",
            "median_ttt_s": med_ttt,
            "ttt_s": " ".join(
                ("%s:%.2f" % (s, t)) if t is not None else ("%s:>%g" % (s, budget))
                for s, t in ttt) if target is not None else "",
            "evaluator": ok[0]["solve"]["evaluator"] if ok else "",
            "median_attempted_per_s": "%.0f" % sorted(rate)[(len(rate) - 1) // 2] if rate else "",
        })
    keys = list(rows[0].keys()) if rows else []
    with open(os.path.join(d, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write("# bench-cpu: %s, commit %s%s\n\n" % (
            man["started_utc"], man["commit"], " (dirty)" if man["dirty"] else ""))
        f.write("budget %g s, %d threads, seeds %s, machine: %s, %s cores, load at start %s, "
                "at end %s\n\n" % (
                    budget, man["threads"], " ".join(map(str, man["seeds"])),
                    man["machine"]["cpu"], man["machine"]["cores_online"],
                    " ".join(man["machine"]["loadavg_start"]),
                    " ".join(man.get("loadavg_end", ["?"]))))
        f.write("| instance | n | m | valid | median K | median tuple | best tuple | K per run | "
                "target K | reached | median TTT s | TTT per seed (s) | evaluator | "
                "attempted/s |\n")
        f.write("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write("| %s | %s | %s | %d/%d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" % (
                r["instance"], r["n"], r["m"], r["valid_runs"], r["runs"], r["median_K"],
                r["median_tuple"], r["best_tuple"], r["all_K"], r["target_K"], r["reached"],
                r["median_ttt_s"], r["ttt_s"], r["evaluator"], r["median_attempted_per_s"]))
    print(open(os.path.join(d, "summary.md")).read())


if __name__ == "__main__":
    main(sys.argv[1])
