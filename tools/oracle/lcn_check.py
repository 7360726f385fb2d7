#!/usr/bin/env python3
"""lcn_check.py - an independent checker for lcn graph/layout files.

Standard library only, exact integer arithmetic, its own parsing. It shares
the problem's definitions (ARCHITECTURE.md section 1, docs/FORMAT.md) with
common/validate.c and proto/graphio.c but none of their code, so the two can
be compared (tools/oracle/run_checks.py, scripts/check-instances.sh).

  lcn_check.py LAYOUT.json [--instance GRAPH.json] [--counts] [--max-violations N]

prints one JSON object with the same keys as `lcnctl check` and exits 0
(valid), 1 (invalid) or 2 (a file cannot be read; the reason on stderr).

Definitions, restated:
  V1 every node inside [0,W] x [0,H] (one violation per node);
  V2 no two nodes on one point (one per pair of nodes);
  V3 no node on the relative interior of an edge it is not an endpoint of
     (one per node and edge);
  V4 no two edges overlapping along a positive length (one per pair of edges,
     adjacent ones included).
  Two edges cross when they share no endpoint and their closed segments have
  a common point. c[e] = number of edges crossing e; the tuple is
  (K, nK, Phi, C) = (max c, #edges with c = K, sum c^2, sum c / 2).
"""

import argparse
import bisect
import json
import sys

COORD_LIMIT = 2**30 - 1
MAX_NODES = 1_000_000
MAX_EDGES = 4_000_000
MAX_DEPTH = 2048  # the C reader's parser refuses deeper nesting
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_PROBLEMS = 20


class Unreadable(Exception):
    """The file cannot be read as a graph; str() is 'path: reason'."""

    syntax = False  # True: the bytes are not acceptable JSON (no field path)


class BadJson(Unreadable):
    """The document level: syntax, duplicate key, depth, number range,
    encoding. The C reader's messages for these come from its JSON parser and
    are not compared."""

    syntax = True


class Real:
    """A JSON number written with a fraction or an exponent (never accepted
    where lcn wants an integer, even when integral: docs/FORMAT.md)."""

    def __init__(self, text):
        self.text = text


def _no_duplicates(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise BadJson("duplicate object key '%s'" % k)
        obj[k] = v
    return obj


def _reject_constant(name):
    raise BadJson("invalid token '%s'" % name)


def _bad_string(s):
    for ch in s:
        o = ord(ch)
        if o == 0:
            return "NUL character in a string"
        if 0xD800 <= o <= 0xDFFF:
            return "unpaired surrogate in a string"
    return None


def _scan(doc):
    """Document-level rules the JSON module does not apply itself: depth,
    int64 range, finite reals, no NUL or lone surrogate in any string."""
    stack = [(doc, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > MAX_DEPTH:
                raise BadJson("maximum parsing depth reached")
            if isinstance(v, dict):
                for k, x in v.items():
                    why = _bad_string(k)
                    if why:
                        raise BadJson(why)
                    stack.append((x, depth + 1))
            else:
                stack.extend((x, depth + 1) for x in v)
        elif isinstance(v, str):
            why = _bad_string(v)
            if why:
                raise BadJson(why)
        elif isinstance(v, bool) or v is None:
            pass
        elif isinstance(v, int):
            if v < INT64_MIN or v > INT64_MAX:
                raise BadJson("integer %d does not fit 64 bits" % v)
        elif isinstance(v, Real):
            if float(v.text) in (float("inf"), float("-inf")):
                raise BadJson("real number overflow '%s'" % v.text)


def parse_json(data):
    """bytes -> the document (dicts keep their order). Raises Unreadable."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # a byte-order mark, which RFC 8259 lets a parser ignore
    if len(data) == 0:
        raise BadJson("empty input")
    if b"\0" in data:
        raise BadJson("NUL byte in input")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadJson("invalid UTF-8: %s" % e)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20000))
    try:
        doc = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_float=Real,
            parse_constant=_reject_constant,
        )
    except json.JSONDecodeError as e:
        raise BadJson("line %d column %d: %s" % (e.lineno, e.colno, e.msg))
    except RecursionError:
        raise BadJson("maximum parsing depth reached")
    finally:
        sys.setrecursionlimit(old)
    if not isinstance(doc, (dict, list)):
        raise BadJson("'[' or '{' expected")
    _scan(doc)
    return doc


# the JSON type names of Python values, first match wins (bool before int:
# True is an int too)
_TYPES = ((bool, "boolean"), (dict, "object"), (list, "array"), (str, "string"),
          (int, "integer"), (Real, "real"), (type(None), "null"))


def _type(v):
    return next((name for t, name in _TYPES if isinstance(v, t)), "unknown")


def _int(v, lo, hi, path):
    if isinstance(v, bool) or not isinstance(v, int):
        raise Unreadable("%s: expected an integer, got %s" % (path, _type(v)))
    if v < lo or v > hi:
        raise Unreadable("%s: %d outside [%d, %d]" % (path, v, lo, hi))
    return v


def _get(obj, key, path):
    if key not in obj:
        raise Unreadable("%s: missing required field" % path)
    return obj[key]


class Graph:
    def __init__(self, n, edges, width, height, pts, node_pos):
        self.n = n
        self.edges = edges  # list of (u, v) in document order
        self.width = width
        self.height = height
        self.pts = pts  # list of (x, y) or None, by node id
        self.node_pos = node_pos  # node id -> index in "nodes"


def read_graph(doc):
    """The document -> Graph, with the rules of docs/FORMAT.md."""
    if not isinstance(doc, dict):
        raise Unreadable("expected an object, got %s" % _type(doc))
    nodes = _get(doc, "nodes", "nodes")
    if not isinstance(nodes, list):
        raise Unreadable("nodes: expected an array, got %s" % _type(nodes))
    edges = _get(doc, "edges", "edges")
    if not isinstance(edges, list):
        raise Unreadable("edges: expected an array, got %s" % _type(edges))
    if len(nodes) > MAX_NODES:
        raise Unreadable("nodes: %d nodes exceed the limit of %d" % (len(nodes), MAX_NODES))
    if len(edges) > MAX_EDGES:
        raise Unreadable("edges: %d edges exceed the limit of %d" % (len(edges), MAX_EDGES))
    width = _int(_get(doc, "width", "width"), 0, COORD_LIMIT, "width")
    height = _int(_get(doc, "height", "height"), 0, COORD_LIMIT, "height")
    n = len(nodes)
    pts = [None] * n
    node_pos = [None] * n
    for i, nd in enumerate(nodes):
        p = "nodes[%d]" % i
        if not isinstance(nd, dict):
            raise Unreadable("%s: expected an object, got %s" % (p, _type(nd)))
        nid = _int(_get(nd, "id", p + ".id"), 0, n - 1, p + ".id")
        if node_pos[nid] is not None:
            raise Unreadable("%s.id: duplicate id %d (also nodes[%d])" % (p, nid, node_pos[nid]))
        node_pos[nid] = i
        x, y = nd.get("x"), nd.get("y")
        if x is not None:
            x = _int(x, -COORD_LIMIT, COORD_LIMIT, p + ".x")
        if y is not None:
            y = _int(y, -COORD_LIMIT, COORD_LIMIT, p + ".y")
        if (x is None) != (y is None):
            raise Unreadable(
                "%s.%s: missing while '%s' is given" % (p, "y" if y is None else "x", "x" if y is None else "y")
            )
        if x is not None:
            pts[nid] = (x, y)
    elist = []
    for j, ed in enumerate(edges):
        p = "edges[%d]" % j
        if not isinstance(ed, dict):
            raise Unreadable("%s: expected an object, got %s" % (p, _type(ed)))
        ends = []
        for key in ("source", "target"):
            v = _get(ed, key, "%s.%s" % (p, key))
            if isinstance(v, bool) or not isinstance(v, int):
                raise Unreadable("%s.%s: expected an integer, got %s" % (p, key, _type(v)))
            if not -(2**31) <= v < 2**31:
                # beyond 32 bits no node can match; the C reader says so at once
                raise Unreadable("%s.%s: unknown node %d" % (p, key, v))
            ends.append(v)
        elist.append(tuple(ends))
    # the edge list as a whole: unknown nodes and self-loops first, then duplicates
    for j, (a, b) in enumerate(elist):
        if not 0 <= a < n:
            raise Unreadable("edges[%d].source: unknown node %d" % (j, a))
        if not 0 <= b < n:
            raise Unreadable("edges[%d].target: unknown node %d" % (j, b))
        if a == b:
            raise Unreadable("edges[%d]: self-loop at node %d" % (j, a))
    seen = {}
    dups = []
    for j, (a, b) in enumerate(elist):
        key = (min(a, b), max(a, b))
        if key in seen:
            dups.append((key, j, seen[key]))
        else:
            seen[key] = j
    if dups:
        key, j, first = min(dups)  # the C reader reports the smallest duplicate pair first
        raise Unreadable("edges[%d]: duplicate of edges[%d] (nodes %d and %d)" % (j, first, key[0], key[1]))
    return Graph(n, elist, width, height, pts, node_pos)


def load(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise BadJson("cannot open '%s': %s" % (path, e.strerror))
    return read_graph(parse_json(data))


# ---------------------------------------------------------------- geometry


def orient(ax, ay, bx, by, cx, cy):
    """Sign of (b - a) x (c - a): 1 left turn, -1 right turn, 0 collinear."""
    d = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
    return (d > 0) - (d < 0)


def in_box(ax, ay, bx, by, px, py):
    return min(ax, bx) <= px <= max(ax, bx) and min(ay, by) <= py <= max(ay, by)


def closed_meet(a, b, c, d):
    """Closed segments ab and cd have a common point (degenerate ones too)."""
    d1 = orient(c[0], c[1], d[0], d[1], a[0], a[1])
    d2 = orient(c[0], c[1], d[0], d[1], b[0], b[1])
    d3 = orient(a[0], a[1], b[0], b[1], c[0], c[1])
    d4 = orient(a[0], a[1], b[0], b[1], d[0], d[1])
    if d1 * d2 < 0 and d3 * d4 < 0:
        return True
    if d1 == 0 and in_box(c[0], c[1], d[0], d[1], a[0], a[1]):
        return True
    if d2 == 0 and in_box(c[0], c[1], d[0], d[1], b[0], b[1]):
        return True
    if d3 == 0 and in_box(a[0], a[1], b[0], b[1], c[0], c[1]):
        return True
    if d4 == 0 and in_box(a[0], a[1], b[0], b[1], d[0], d[1]):
        return True
    return False


def overlap_positive(a, b, c, d):
    """ab and cd collinear with a common part of positive length."""
    if a == b or c == d:
        return False
    if orient(a[0], a[1], b[0], b[1], c[0], c[1]) != 0:
        return False
    if orient(a[0], a[1], b[0], b[1], d[0], d[1]) != 0:
        return False
    # parameters along ab (scaled by |ab|^2): a -> 0, b -> L
    dx, dy = b[0] - a[0], b[1] - a[1]
    L = dx * dx + dy * dy
    tc = (c[0] - a[0]) * dx + (c[1] - a[1]) * dy
    td = (d[0] - a[0]) * dx + (d[1] - a[1]) * dy
    lo, hi = max(0, min(tc, td)), min(L, max(tc, td))
    return hi > lo


def on_open_segment(a, b, p):
    """p on ab, different from a and b (ab not a point)."""
    if a == b or p == a or p == b:
        return False
    return orient(a[0], a[1], b[0], b[1], p[0], p[1]) == 0 and in_box(a[0], a[1], b[0], b[1], p[0], p[1])


def check_layout(g):
    """Returns (violations, counts c) for a complete layout."""
    pts = g.pts
    viol = []
    for v, (x, y) in enumerate(pts):
        if not (0 <= x <= g.width and 0 <= y <= g.height):
            viol.append(("V1", v, None))
    at = {}
    for v, p in enumerate(pts):
        at.setdefault(p, []).append(v)
    for group in at.values():
        for i in range(len(group)):
            for j in range(i + 1, len(group)):
                viol.append(("V2", group[i], group[j]))
    # V3: nodes by x, each edge looks at the nodes inside its x-range
    byx = sorted(range(g.n), key=lambda v: pts[v][0])
    xs = [pts[v][0] for v in byx]
    for e, (u, w) in enumerate(g.edges):
        a, b = pts[u], pts[w]
        lo = bisect.bisect_left(xs, min(a[0], b[0]))
        hi = bisect.bisect_right(xs, max(a[0], b[0]))
        for k in range(lo, hi):
            v = byx[k]
            if v != u and v != w and on_open_segment(a, b, pts[v]):
                viol.append(("V3", v, e))
    # crossings and V4: edges by their left end, pairs whose boxes meet
    m = len(g.edges)
    c = [0] * m
    seg = []
    for e, (u, w) in enumerate(g.edges):
        a, b = pts[u], pts[w]
        seg.append((min(a[0], b[0]), max(a[0], b[0]), min(a[1], b[1]), max(a[1], b[1]), e))
    seg.sort()
    for i in range(m):
        x0, x1, y0, y1, e = seg[i]
        u, w = g.edges[e]
        a, b = pts[u], pts[w]
        for j in range(i + 1, m):
            fx0, fx1, fy0, fy1, f = seg[j]
            if fx0 > x1:
                break
            if fy0 > y1 or fy1 < y0:
                continue
            p, q = g.edges[f]
            cc, dd = pts[p], pts[q]
            if overlap_positive(a, b, cc, dd):
                viol.append(("V4", min(e, f), max(e, f)))
            if u == p or u == q or w == p or w == q:
                continue
            if closed_meet(a, b, cc, dd):
                c[e] += 1
                c[f] += 1
    return viol, c


def tuple_of(c):
    if not c:
        return 0, 0, 0, 0
    K = max(c)
    s = sum(c)
    if s % 2:
        raise AssertionError("odd crossing-count sum %d" % s)
    return K, sum(1 for x in c if x == K), sum(x * x for x in c), s // 2


def _violation_json(kind, a, b):
    if kind == "V1":
        return {"kind": kind, "node": a}
    if kind == "V2":
        return {"kind": kind, "nodes": [a, b]}
    if kind == "V3":
        return {"kind": kind, "node": a, "edge": b}
    return {"kind": kind, "edges": [a, b]}


def check(layout_path, instance_path=None, counts=False, max_violations=100, errors=None):
    """Returns (exit status, result dict or None, error message or None).
    When a file is unreadable and errors is a list, the exception is
    appended to it."""
    paths = [layout_path] + ([instance_path] if instance_path is not None else [])
    graphs = []
    for path in paths:
        try:
            graphs.append(load(path))
        except Unreadable as e:
            if errors is not None:
                errors.append(e)
            msg = str(e) if str(e).startswith("cannot open") else "%s: %s" % (path, e)
            return 2, None, msg
    g = graphs[0]
    inst = graphs[1] if instance_path is not None else None
    problems = []
    if inst is not None:
        if g.n != inst.n:
            problems.append("nodes: %d in the layout, %d in the instance" % (g.n, inst.n))
        m, mi = len(g.edges), len(inst.edges)
        if m != mi:
            problems.append("edges: %d in the layout, %d in the instance" % (m, mi))
        else:
            for j in range(m):
                a, b = sorted(g.edges[j])
                c, d = sorted(inst.edges[j])
                if (a, b) != (c, d):
                    problems.append("edges[%d]: {%d, %d} in the layout, {%d, %d} in the instance" % (j, a, b, c, d))
        if g.width != inst.width:
            problems.append("width: %d in the layout, %d in the instance" % (g.width, inst.width))
        if g.height != inst.height:
            problems.append("height: %d in the layout, %d in the instance" % (g.height, inst.height))
    missing = [v for v in range(g.n) if g.pts[v] is None]
    for v in missing:
        problems.append("nodes[%d]: node %d has no coordinates" % (g.node_pos[v], v))
    out = {
        "layout": layout_path,
        "instance": instance_path,
        "n": g.n,
        "m": len(g.edges),
        "width": g.width,
        "height": g.height,
        "missing_coordinates": len(missing),
    }
    valid = not problems
    if missing:
        out.update({"K": None, "nK": None, "Phi": None, "C": None, "violation_counts": None})
        out.update({"violations_total": 0, "violations": [], "violations_listed_all": True})
        if counts:
            out["c"] = None
    else:
        viol, c = check_layout(g)
        K, nK, Phi, C = tuple_of(c)
        out.update({"K": K, "nK": nK, "Phi": Phi, "C": C})
        vc = {k: 0 for k in ("V1", "V2", "V3", "V4")}
        for kind, _, _ in viol:
            vc[kind] += 1
        viol.sort(key=lambda t: (t[0], t[1], t[2] if t[2] is not None else -1))
        out["violation_counts"] = vc
        out["violations_total"] = len(viol)
        out["violations"] = [_violation_json(*t) for t in viol[:max_violations]]
        out["violations_listed_all"] = len(viol) <= max_violations
        if counts:
            out["c"] = c
        valid = valid and not viol
    out["problems_total"] = len(problems)
    out["problems"] = problems[:MAX_PROBLEMS]
    out["valid"] = valid
    return (0 if valid else 1), out, None


def main(argv=None):
    ap = argparse.ArgumentParser(description="independent checker for lcn layout files")
    ap.add_argument("layout")
    ap.add_argument("--instance")
    ap.add_argument("--counts", action="store_true", help="print per-edge crossing counts as c")
    ap.add_argument("--max-violations", type=int, default=100)
    ap.add_argument("--pretty", action="store_true")
    args = ap.parse_args(argv)
    rc, out, err = check(args.layout, args.instance, args.counts, args.max_violations)
    if err:
        print("lcn_check: %s" % err, file=sys.stderr)
        return rc
    print(json.dumps(out, indent=2 if args.pretty else None, separators=None if args.pretty else (",", ":")))
    return rc


if __name__ == "__main__":
    sys.exit(main())
