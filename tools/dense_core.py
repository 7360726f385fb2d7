#!/usr/bin/env python3
"""dense_core.py - where a layout's K sits relative to the graph's densest core.

    tools/dense_core.py GRAPH.json LAYOUT.json [--slack 2] [--core-out CORE.json]

Peels the graph into k-cores, takes the innermost (the highest k), counts every
edge's crossings in the layout (a plain O(m^2) pass with a box filter: a
diagnostic, independent of the engines), and reports how many of the edges
within --slack of K lie inside the core, and the core's own K (its edges'
crossings among themselves). --core-out writes the core as a graph of its own
(input format, the layout's coordinates), to solve it alone. Issue 15 used it
on instance_04 (docs/BENCHMARKS.md).
"""
import argparse
import collections
import json
import sys


def orient(a, b, c):
    v = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
    return (v > 0) - (v < 0)


def crossings(pos, edges):
    """Per-edge counts and the crossing pairs (proper crossings of edges
    without a shared endpoint, the problem's count for valid layouts)."""
    box = []
    for u, v in edges:
        (ax, ay), (bx, by) = pos[u], pos[v]
        box.append((min(ax, bx), max(ax, bx), min(ay, by), max(ay, by)))
    cnt, pairs = [0] * len(edges), []
    for i, (u, v) in enumerate(edges):
        bi = box[i]
        for j in range(i + 1, len(edges)):
            bj = box[j]
            if bi[1] < bj[0] or bj[1] < bi[0] or bi[3] < bj[2] or bj[3] < bi[2]:
                continue
            x, y = edges[j]
            if len({u, v, x, y}) < 4:
                continue
            a, b, c, d = pos[u], pos[v], pos[x], pos[y]
            if orient(a, b, c) * orient(a, b, d) < 0 and orient(c, d, a) * orient(c, d, b) < 0:
                cnt[i] += 1
                cnt[j] += 1
                pairs.append((i, j))
    return cnt, pairs


def innermost_core(n_ids, edges):
    nb = collections.defaultdict(set)
    for u, v in edges:
        nb[u].add(v)
        nb[v].add(u)
    deg = {v: len(nb[v]) for v in n_ids}
    alive, core, k = set(n_ids), {}, 0
    while alive:
        v = min(alive, key=lambda x: (deg[x], x))
        k = max(k, deg[v])
        core[v] = k
        alive.remove(v)
        for w in nb[v]:
            if w in alive:
                deg[w] -= 1
    top = max(core.values()) if core else 0
    return top, {v for v in core if core[v] == top}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("graph")
    ap.add_argument("layout")
    ap.add_argument("--slack", type=int, default=2)
    ap.add_argument("--core-out")
    a = ap.parse_args()
    g = json.load(open(a.graph))
    lay = json.load(open(a.layout))
    pos = {n["id"]: (n["x"], n["y"]) for n in lay["nodes"]}
    edges = [(e["source"], e["target"]) for e in g["edges"]]
    cnt, pairs = crossings(pos, edges)
    K = max(cnt) if cnt else 0
    k, S = innermost_core([n["id"] for n in g["nodes"]], edges)
    inside = [i for i, (u, v) in enumerate(edges) if u in S and v in S]
    ins = set(inside)
    hot = [i for i in range(len(edges)) if cnt[i] >= K - a.slack]
    own = collections.Counter()
    for i, j in pairs:
        if i in ins and j in ins:
            own[i] += 1
            own[j] += 1
    out = {"K": K, "C": len(pairs), "core_k": k, "core_nodes": len(S), "core_edges": len(inside),
           "hot_edges": len(hot), "hot_in_core": sum(1 for i in hot if i in ins),
           "core_own_K": max((own[i] for i in inside), default=0)}
    print(json.dumps(out))
    if a.core_out:
        idx = {v: t for t, v in enumerate(sorted(S))}
        sub = {"nodes": [{"id": idx[v], "x": pos[v][0], "y": pos[v][1]} for v in sorted(S)],
               "edges": [{"source": idx[edges[i][0]], "target": idx[edges[i][1]]} for i in inside],
               "width": g["width"], "height": g["height"]}
        json.dump(sub, open(a.core_out, "w"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
