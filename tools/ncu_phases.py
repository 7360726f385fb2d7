#!/usr/bin/env python3
"""Where a kernel's warps wait, phase by phase, from an Nsight Compute SASS page.

Input: the CSV that `ncu -i REPORT --page source --csv --print-source sass`
writes (tests/gpu/run-on-gpu.sh profile -> profile-sass.csv). A phase is
the run of instructions between two BAR.SYNC; a barrier's waiting is
sampled on the instruction after it, so each phase's share includes the
wait for the slowest warp of the phase before. Prints, per phase over
--min percent of the warp-stall samples, its instruction range, its share
and its two largest stall reasons; then the --top instructions.

  ncu_phases.py profile-sass.csv [--min 1] [--top 15]
"""
import argparse
import csv


def num(s):
    try:
        return int(s.replace(",", "") or 0)
    except ValueError:
        return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--min", type=float, default=1.0)
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    rows = list(csv.reader(open(a.csv)))
    hdr = next(i for i, r in enumerate(rows) if "Address" in r and "Source" in r)
    head, data = rows[hdr], rows[hdr + 1:]
    src = head.index("Source")
    smp = head.index("Warp Stall Sampling (All Samples)")
    ex = head.index("Instructions Executed")
    reasons = [(i, h) for i, h in enumerate(head) if h.startswith("stall_") and "Not Issued" not in h]
    total = sum(num(r[smp]) for r in data) or 1
    print(f"{len(data)} instructions, {total} warp-stall samples\n")
    print("| instructions | share | top stall reasons |")
    print("|---|---|---|")
    start, acc, why = 0, 0, {}
    for i, r in enumerate(data):
        acc += num(r[smp])
        for j, h in reasons:
            why[h] = why.get(h, 0) + num(r[j])
        if "BAR.SYNC" in r[src] or i == len(data) - 1:
            if 100.0 * acc / total >= a.min:
                top = sorted(why.items(), key=lambda kv: -kv[1])[:2]
                tops = ", ".join(f"{h[6:]} {100.0 * v / acc:.0f}%" for h, v in top)
                print(f"| #{start}-#{i} | {100.0 * acc / total:.1f}% | {tops} |")
            start, acc, why = i + 1, 0, {}
    print(f"\ntop {a.top} instructions by samples:\n")
    print("| # | share | executed | SASS |")
    print("|---|---|---|---|")
    order = sorted(range(len(data)), key=lambda i: -num(data[i][smp]))[: a.top]
    for i in order:
        r = data[i]
        print(f"| #{i} | {100.0 * num(r[smp]) / total:.1f}% | {r[ex]} | `{r[src].strip()}` |")


if __name__ == "__main__":
    main()
