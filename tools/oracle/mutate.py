"""mutate.py - deterministic variants of a valid generated instance, for
comparing lcnctl check with lcn_check.py on layouts that break each rule,
stress the arithmetic, or cannot be read at all.

mutations(doc, seed) yields (name, bytes, use_instance, expect) where expect
is "valid", "invalid" or "unreadable" (what the rules say the variant is; a
variant that could not be built for this doc is skipped). use_instance means
the variant is checked with --instance against the unmutated file.
"""

import json
import random

COORD_LIMIT = 2**30 - 1


def _dump(doc):
    return (json.dumps(doc, separators=(",", ":")) + "\n").encode()


def _copy(doc):
    return json.loads(json.dumps(doc))


def _pts(doc):
    return {nd["id"]: (nd["x"], nd["y"]) for nd in doc["nodes"]}


def _set(doc, v, p):
    for nd in doc["nodes"]:
        if nd["id"] == v:
            nd["x"], nd["y"] = p


def _adj(doc):
    adj = {nd["id"]: [] for nd in doc["nodes"]}
    for e in doc["edges"]:
        adj[e["source"]].append(e["target"])
        adj[e["target"]].append(e["source"])
    return adj


def _v1(doc, rnd):
    d = _copy(doc)
    _set(d, 0, (d["width"] + 1, 0))
    _set(d, 1, (-3, d["height"] + 2))
    return d


def _v2(doc, rnd):
    d = _copy(doc)
    p = _pts(d)[0]
    for v in (1, 2, 3):
        _set(d, v, p)  # four nodes on one point: six V2 pairs
    return d


def _v3(doc, rnd):
    d = _copy(doc)
    pts = _pts(d)
    edges = list(d["edges"])
    rnd.shuffle(edges)
    for e in edges:
        u, w = e["source"], e["target"]
        (ax, ay), (bx, by) = pts[u], pts[w]
        if (ax + bx) % 2 == 0 and (ay + by) % 2 == 0 and (ax, ay) != (bx, by):
            mid = ((ax + bx) // 2, (ay + by) // 2)
            z = next(v for v in pts if v not in (u, w))
            _set(d, z, mid)
            return d
    return None


def _v4(doc, rnd):
    d = _copy(doc)
    adj = _adj(d)
    for u in sorted(adj):
        if len(adj[u]) >= 2:
            v, w = adj[u][0], adj[u][1]
            ux, uy = _pts(d)[u]
            dx = 1 if ux + 2 <= d["width"] else -1
            dy = 1 if uy + 2 <= d["height"] else -1
            _set(d, v, (ux + dx, uy + dy))
            _set(d, w, (ux + 2 * dx, uy + 2 * dy))
            return d
    return None


def _squash(doc, rnd):
    """Every node in a 4 x 4 box: shared points, nodes on edges, overlaps,
    degenerate edges."""
    d = _copy(doc)
    for nd in d["nodes"]:
        nd["x"] %= 4
        nd["y"] %= 4
    return d


def _collinear(doc, rnd):
    """Every node on one line: nearly every pair of edges overlaps."""
    d = _copy(doc)
    n = len(d["nodes"])
    d["width"] = d["height"] = max(d["width"], d["height"], 2 * n)
    for nd in d["nodes"]:
        nd["x"] = nd["y"] = 2 * nd["id"]
    return d


def _huge(doc, rnd):
    """Scaled towards the coordinate limit: same combinatorics, large products."""
    d = _copy(doc)
    s = COORD_LIMIT // max(d["width"], d["height"], 1)
    d["width"] *= s
    d["height"] *= s
    for nd in d["nodes"]:
        nd["x"] *= s
        nd["y"] *= s
    return d


def _negative(doc, rnd):
    """Shifted and scaled to both ends of the coordinate range (all V1)."""
    d = _copy(doc)
    s = COORD_LIMIT // max(d["width"], d["height"], 1)
    half = (max(d["width"], d["height"]) * s) // 2
    for nd in d["nodes"]:
        nd["x"] = nd["x"] * s - half
        nd["y"] = half - nd["y"] * s
    return d


def _missing(doc, rnd):
    d = _copy(doc)
    del d["nodes"][3]["x"], d["nodes"][3]["y"]
    d["nodes"][5]["x"] = d["nodes"][5]["y"] = None
    return d


def _reordered(doc, rnd):
    """Nodes in reverse order, every edge written backwards, extra fields:
    still the same drawing of the same instance."""
    d = _copy(doc)
    d["nodes"].reverse()
    for i, e in enumerate(d["edges"]):
        e["source"], e["target"] = e["target"], e["source"]
        e["id"] = "e%d" % i
    d["points"] = [{"id": 0, "x": 0, "y": 0}]
    d["lcn"] = {"K": -1}
    return d


def _mismatch_edge(doc, rnd):
    d = _copy(doc)
    n = len(d["nodes"])
    have = {frozenset((e["source"], e["target"])) for e in d["edges"]}
    e = d["edges"][len(d["edges"]) // 2]
    for t in range(n):
        if t != e["source"] and frozenset((e["source"], t)) not in have:
            e["target"] = t
            return d
    return None


def _mismatch_bounds(doc, rnd):
    d = _copy(doc)
    d["width"] += 1
    return d


def _mismatch_n(doc, rnd):
    d = _copy(doc)
    n = len(d["nodes"])
    d["nodes"] = [nd for nd in d["nodes"] if nd["id"] != n - 1]
    d["edges"] = [e for e in d["edges"] if n - 1 not in (e["source"], e["target"])]
    return d


def _text_sub(doc, old, new):
    s = _dump(doc).decode()
    assert old in s, old
    return s.replace(old, new, 1).encode()


def _first_x(doc):
    nd = doc["nodes"][0]
    return '"x":%d' % nd["x"]


UNREADABLE = [
    ("real", lambda d: _text_sub(d, _first_x(d), _first_x(d) + ".0")),
    ("dupkey", lambda d: _text_sub(d, '{"id":0,', '{"id":0,"id":0,')),
    ("bigint", lambda d: _text_sub(d, _first_x(d), '"x":99999999999999999999')),
    ("range", lambda d: _text_sub(d, _first_x(d), '"x":%d' % (COORD_LIMIT + 1))),
    ("nul", lambda d: _dump(d)[:20] + b"\0" + _dump(d)[20:]),
    ("truncated", lambda d: _dump(d)[: len(_dump(d)) // 2]),
    ("top-array", lambda d: b"[" + _dump(d).rstrip() + b"]\n"),
    ("surrogate", lambda d: _text_sub(d, '{"nodes":', '{"note":"\\ud800","nodes":')),
    ("deep", lambda d: _text_sub(d, '{"nodes":', '{"junk":' + "[" * 3000 + "]" * 3000 + ',"nodes":')),
    ("empty", lambda d: b""),
]


def _unknown_node(doc, rnd):
    d = _copy(doc)
    d["edges"][-1]["target"] = len(d["nodes"])
    return d


def _self_loop(doc, rnd):
    d = _copy(doc)
    d["edges"][0]["target"] = d["edges"][0]["source"]
    return d


def _dup_edge(doc, rnd):
    d = _copy(doc)
    e = d["edges"][1]
    d["edges"].append({"source": e["target"], "target": e["source"]})
    return d


def _half_xy(doc, rnd):
    d = _copy(doc)
    del d["nodes"][2]["y"]
    return d


def _id_gap(doc, rnd):
    d = _copy(doc)
    d["nodes"][-1]["id"] = len(d["nodes"])
    return d


GEOMETRY = [
    ("v1", _v1, False, "invalid"),
    ("v2", _v2, False, "invalid"),
    ("v3", _v3, False, "invalid"),
    ("v4", _v4, False, "invalid"),
    ("squash", _squash, False, "invalid"),
    ("collinear", _collinear, False, "invalid"),
    ("huge", _huge, False, "valid"),
    ("negative", _negative, False, "invalid"),
    ("missing", _missing, False, "invalid"),
    ("reordered", _reordered, True, "valid"),
    ("mismatch-edge", _mismatch_edge, True, "invalid"),
    ("mismatch-bounds", _mismatch_bounds, True, "invalid"),
    ("mismatch-n", _mismatch_n, True, "invalid"),
    ("unknown-node", _unknown_node, False, "unreadable"),
    ("self-loop", _self_loop, False, "unreadable"),
    ("dup-edge", _dup_edge, False, "unreadable"),
    ("half-xy", _half_xy, False, "unreadable"),
    ("id-gap", _id_gap, False, "unreadable"),
]


def mutations(doc, seed, names=None):
    rnd = random.Random(seed)
    for name, fn, use_instance, expect in GEOMETRY:
        if names is not None and name not in names:
            continue
        d = fn(doc, rnd)
        if d is not None:
            yield name, _dump(d), use_instance, expect
    for name, fn in UNREADABLE:
        if names is not None and name not in names:
            continue
        yield name, fn(doc), False, "unreadable"
