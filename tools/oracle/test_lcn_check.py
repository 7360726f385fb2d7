#!/usr/bin/env python3
"""Unit tests of lcn_check.py on hand-computed fixtures (python3 -m unittest)."""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lcn_check as lc  # noqa: E402


def doc(nodes, edges, w=10, h=10, **extra):
    d = {"nodes": [{"id": i, "x": x, "y": y} for i, (x, y) in enumerate(nodes)],
         "edges": [{"source": a, "target": b} for a, b in edges], "width": w, "height": h}
    d.update(extra)
    return d


class Fixture:
    def __init__(self, d, raw=None):
        self.f = tempfile.NamedTemporaryFile("wb", suffix=".json", delete=False)
        self.f.write(raw if raw is not None else json.dumps(d).encode())
        self.f.close()

    def __enter__(self):
        return self.f.name

    def __exit__(self, *a):
        os.unlink(self.f.name)


def run(d, raw=None, instance=None):
    with Fixture(d, raw) as p:
        if instance is None:
            return lc.check(p, counts=True, max_violations=1000)
        with Fixture(instance) as q:
            return lc.check(p, q, counts=True, max_violations=1000)


class Geometry(unittest.TestCase):
    def test_predicates(self):
        self.assertTrue(lc.closed_meet((0, 0), (4, 4), (0, 4), (4, 0)))  # proper crossing
        self.assertTrue(lc.closed_meet((0, 0), (4, 4), (2, 2), (5, 0)))  # endpoint on the other
        self.assertFalse(lc.closed_meet((0, 0), (4, 4), (3, 2), (5, 0)))
        self.assertTrue(lc.closed_meet((0, 0), (2, 0), (2, 0), (5, 0)))  # collinear touching
        self.assertFalse(lc.closed_meet((0, 0), (2, 0), (3, 0), (5, 0)))  # collinear apart
        self.assertTrue(lc.closed_meet((1, 1), (1, 1), (0, 0), (2, 2)))  # point on segment
        self.assertFalse(lc.closed_meet((1, 1), (1, 1), (0, 0), (2, 3)))
        self.assertTrue(lc.overlap_positive((0, 0), (4, 0), (2, 0), (6, 0)))
        self.assertFalse(lc.overlap_positive((0, 0), (4, 0), (4, 0), (6, 0)))  # a point only
        self.assertTrue(lc.overlap_positive((0, 0), (4, 4), (3, 3), (1, 1)))
        self.assertFalse(lc.overlap_positive((0, 0), (4, 4), (1, 1), (1, 1)))  # degenerate
        self.assertTrue(lc.on_open_segment((0, 0), (4, 2), (2, 1)))
        self.assertFalse(lc.on_open_segment((0, 0), (4, 2), (4, 2)))
        L = lc.COORD_LIMIT  # exact at the coordinate limit
        self.assertTrue(lc.closed_meet((-L, -L), (L, L), (-L, L), (L, -L)))
        self.assertFalse(lc.closed_meet((-L, -L), (L, L - 1), (L, L), (L - 1, L)))

    def test_tuple_example(self):
        # ARCHITECTURE.md: counts [3,3,1,1] give (3, 2, 20, 4)
        self.assertEqual(lc.tuple_of([3, 3, 1, 1]), (3, 2, 20, 4))
        self.assertEqual(lc.tuple_of([]), (0, 0, 0, 0))

    def test_k4_one_crossing(self):
        # square with both diagonals: the diagonals cross once
        rc, out, _ = run(doc([(0, 0), (4, 0), (4, 4), (0, 4)],
                             [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (1, 3)]))
        self.assertEqual(rc, 0)
        self.assertEqual(out["c"], [0, 0, 0, 0, 1, 1])
        self.assertEqual((out["K"], out["nK"], out["Phi"], out["C"]), (1, 2, 2, 1))

    def test_violations(self):
        # node 2 on edge 0-1 (V3), node 3 outside (V1), nodes 4 and 5 together (V2),
        # edges 0-1 and 2-... : 0-2 overlaps 0-1 (V4)
        rc, out, _ = run(doc([(0, 0), (4, 0), (2, 0), (11, 1), (5, 5), (5, 5)],
                             [(0, 1), (0, 2), (4, 3)]))
        self.assertEqual(rc, 1)
        self.assertEqual(out["violation_counts"], {"V1": 1, "V2": 1, "V3": 1, "V4": 1})
        self.assertEqual(out["violations"], [
            {"kind": "V1", "node": 3}, {"kind": "V2", "nodes": [4, 5]},
            {"kind": "V3", "node": 2, "edge": 0}, {"kind": "V4", "edges": [0, 1]}])

    def test_missing_and_instance(self):
        d = doc([(0, 0), (4, 0), (2, 3)], [(0, 1), (1, 2)])
        del d["nodes"][1]["x"], d["nodes"][1]["y"]
        rc, out, _ = run(d)
        self.assertEqual(rc, 1)
        self.assertIsNone(out["K"])
        self.assertEqual(out["problems"], ["nodes[1]: node 1 has no coordinates"])
        inst = doc([(0, 0), (4, 0), (2, 3)], [(1, 0), (2, 0)], w=11)
        rc, out, _ = run(doc([(0, 0), (4, 0), (2, 3)], [(0, 1), (1, 2)]), instance=inst)
        self.assertEqual(rc, 1)
        self.assertEqual(out["problems"], [
            "edges[1]: {1, 2} in the layout, {0, 2} in the instance",
            "width: 10 in the layout, 11 in the instance"])


class Reading(unittest.TestCase):
    def bad(self, raw, msg):
        rc, out, err = run(None, raw=raw.encode() if isinstance(raw, str) else raw)
        self.assertEqual(rc, 2)
        self.assertTrue(err.endswith(msg), "%r does not end with %r" % (err, msg))

    def test_rules(self):
        ok = '{"nodes":[{"id":1,"x":1,"y":1},{"id":0}],"edges":[{"source":0,"target":1,"id":5}],' \
             '"width":3,"height":3,"extra":[1.5]}'
        rc, out, _ = run(None, raw=ok.encode())
        self.assertEqual(rc, 1)  # node 0 has no coordinates
        self.assertEqual(out["missing_coordinates"], 1)
        self.bad("", "empty input")
        # a leading byte-order mark is skipped, as lcnctl does (RFC 8259)
        rc, out, _ = run(None, raw=b"\xef\xbb\xbf" + ok.encode())
        self.assertEqual(rc, 1)
        self.bad(b"\xef\xbb\xbf", "empty input")
        self.bad(b" \xef\xbb\xbf{}", "line 1 column 2: Expecting value")
        self.bad(b'{"a":1}\0', "NUL byte in input")
        self.bad('{"a":1,"a":2}', "duplicate object key 'a'")
        self.bad('{"a":NaN}', "invalid token 'NaN'")
        self.bad('{"nodes":[{"id":0,"x":12.0,"y":1}],"edges":[],"width":1,"height":1}',
                 "nodes[0].x: expected an integer, got real")
        self.bad('{"nodes":[{"id":0,"x":true,"y":1}],"edges":[],"width":1,"height":1}',
                 "nodes[0].x: expected an integer, got boolean")
        self.bad('{"nodes":[{"id":0,"x":1}],"edges":[],"width":1,"height":1}',
                 "nodes[0].y: missing while 'x' is given")
        self.bad('{"nodes":[{"id":0},{"id":0}],"edges":[],"width":1,"height":1}',
                 "nodes[1].id: duplicate id 0 (also nodes[0])")
        self.bad('{"nodes":[{"id":0},{"id":1}],"edges":[{"source":0,"target":1},'
                 '{"source":1,"target":0}],"width":1,"height":1}',
                 "edges[1]: duplicate of edges[0] (nodes 0 and 1)")
        self.bad('{"nodes":[],"edges":[],"width":1073741824,"height":1}',
                 "width: 1073741824 outside [0, 1073741823]")
        self.bad('{"x":' + "[" * 3000 + "]" * 3000 + "}", "maximum parsing depth reached")
        self.bad('{"x":"\\ud800"}', "unpaired surrogate in a string")
        self.bad('{"x":99999999999999999999}', "does not fit 64 bits")


if __name__ == "__main__":
    unittest.main()
