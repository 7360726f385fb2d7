#!/usr/bin/env python3
"""Audit a kernel benchmark result (bench_gpu JSON) before anyone quotes it.

Refuses (exit 1, no speedup printed) when:
  - any correctness gate failed (a kernel's per-edge output differed from the CPU oracle);
  - a recorded median is not the median of the recorded raw samples;
  - a recorded ratio differs from the ratio of the recorded medians.
Otherwise prints the table of medians and ratios.

usage: tools/bench_audit.py RESULT.json
"""
import json
import statistics
import sys

import results_archive as ra  # results of packed rounds live in ROUND/raw.tar.xz


def close(a, b, rel=1e-4):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)


def main(path):
    doc = json.load(ra.open_text(path))
    problems = []
    if not doc.get("all_gates_passed"):
        problems.append("all_gates_passed is false")
    for s in doc["shapes"]:
        name = s["shape"]
        for k, ok in s["gate"].items():
            if not ok:
                problems.append(f"{name}: correctness gate '{k}' failed")
        for k, samples in s["ms_per_launch"].items():
            med = statistics.median(samples)
            if not close(med, s["median_ms"][k]):
                problems.append(f"{name}: median of {k} samples {med} != recorded {s['median_ms'][k]}")
        m = s["median_ms"]
        if not close(m["full"] / m["delta"], s["ratio_full_over_delta"]):
            problems.append(f"{name}: recorded full/delta ratio differs from the ratio of medians")
        if not close(m["full"] / m["grid"], s["ratio_full_over_grid"]):
            problems.append(f"{name}: recorded full/grid ratio differs from the ratio of medians")
    if problems:
        print("AUDIT FAILED: no speedup is reported")
        for p in problems:
            print("  " + p)
        return 1
    man = doc["manifest"]
    print(f"audit passed: {path} (commit {man['commit']}, dirty {man['dirty']}, {man['device']})")
    print(f"{'shape n/m/W':<18} {'full ms':>10} {'delta ms':>10} {'grid ms':>10} {'full/delta':>11} {'full/grid':>10} {'delta cand/s':>13}")
    for s in doc["shapes"]:
        m = s["median_ms"]
        print(f"{s['shape']:<18} {m['full']:>10.5f} {m['delta']:>10.5f} {m['grid']:>10.5f} "
              f"{s['ratio_full_over_delta']:>11.3f} {s['ratio_full_over_grid']:>10.3f} {s['candidates_per_s_delta']:>13.4g}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
