"""dense_core.py - where a layout's K sits relative to the graph's densest core.

    tools/dense_core.py GRAPH.json LAYOUT.json [--slack 2] [--core-out CORE.json]

Peels the graph into k-cores, takes the innermost (the highest k), counts every
edge's crossings in the layout with the independent oracle (tools/oracle/
lcn_check.py), and reports how many of the edges within --slack of K lie inside
the core, and the core's own K (the oracle's K of the core drawn alone, its
edges' crossings among themselves). --core-out writes the core as a graph of
its own (input format, the layout's coordinates), to solve it alone. Issue 15
used it on instance_04 (docs/BENCHMARKS.md).
"""
import argparse
import collections
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "oracle"))
from lcn_check import check  # noqa: E402


def counts(layout, instance=None):
    """The oracle's per-edge crossing counts (exits on an unreadable file)."""
    status, out, err = check(layout, instance, counts=True)
    if out is None:
        sys.exit(err)
    return out["c"], out["valid"]


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
    cnt, valid = counts(a.layout, a.graph)
    K = max(cnt) if cnt else 0
    k, S = innermost_core([n["id"] for n in g["nodes"]], edges)
    inside = [i for i, (u, v) in enumerate(edges) if u in S and v in S]
    ins = set(inside)
    hot = [i for i in range(len(edges)) if cnt[i] >= K - a.slack]
    idx = {v: t for t, v in enumerate(sorted(S))}
    sub = {"nodes": [{"id": idx[v], "x": pos[v][0], "y": pos[v][1]} for v in sorted(S)],
           "edges": [{"source": idx[edges[i][0]], "target": idx[edges[i][1]]} for i in inside],
           "width": g["width"], "height": g["height"]}
    path = a.core_out
    if not path:
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
    try:
        with open(path, "w") as f:
            json.dump(sub, f)
        own, _ = counts(path)
    finally:
        if not a.core_out:
            os.unlink(path)
    out = {"valid": valid, "K": K, "C": sum(cnt) // 2, "core_k": k, "core_nodes": len(S),
           "core_edges": len(inside), "hot_edges": len(hot),
           "hot_in_core": sum(1 for i in hot if i in ins), "core_own_K": max(own, default=0)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
