"""lcnctl render: the SVG is well-formed XML (python's parser), draws every
node and edge, colours the K edges and counts the legend from the same
per-edge counts as `lcnctl check --counts`, keeps the y axis pointing up,
scales to bounds of 2^30, escapes text, marks invalid layouts, refuses a
layout that does not draw its instance. Needs only lcnctl (LCNCTL)."""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

LCNCTL = os.environ.get("LCNCTL", "")
NS = "{http://www.w3.org/2000/svg}"


def run(*args):
    return subprocess.run([LCNCTL, *args], capture_output=True, text=True)


class Render(unittest.TestCase):
    def setUp(self):
        if not LCNCTL:
            self.skipTest("LCNCTL not set")
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.d, name)

    def write(self, name, obj):
        p = self.path(name)
        with open(p, "w") as f:
            json.dump(obj, f)
        return p

    def gen(self, family, nodes, seed, *extra):
        p = self.path("%s-%d-%d.json" % (family, nodes, seed))
        r = run("gen", family, "--nodes", str(nodes), "--seed", str(seed), "-o", p, *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        return p

    def render(self, layout, *extra, want=0):
        out = self.path("out.svg")
        r = run("render", layout, "-o", out, "--json", *extra)
        self.assertEqual(r.returncode, want, r.stderr)
        tree = ET.parse(out)  # raises on malformed XML
        return tree.getroot(), json.loads(r.stdout)

    def check(self, layout):
        r = run("check", layout, "--counts")
        return json.loads(r.stdout)

    def svg_parts(self, root):
        lines = {el.get("id"): el for el in root.iter(NS + "line") if el.get("id")}
        circles = {el.get("id"): el for el in root.iter(NS + "circle")}
        texts = {el.get("id"): "".join(el.itertext()) for el in root.iter(NS + "text")
                 if el.get("id")}
        legend = [("".join(el.itertext())) for el in root.iter(NS + "text")
                  if el.get("class") == "legend-row"]
        return lines, circles, texts, legend

    def assert_consistent(self, layout):
        root, info = self.render(layout)
        rep = self.check(layout)
        for k in ("K", "nK", "Phi", "C"):
            self.assertEqual(info[k], rep[k], k)
        self.assertEqual(info["valid"], rep["valid"])
        lines, circles, texts, legend = self.svg_parts(root)
        self.assertEqual(len(lines), rep["m"])
        self.assertEqual(len(circles), rep["n"])
        c = rep["c"]
        K = rep["K"]
        kedges = {"e%d" % e for e in range(rep["m"]) if c[e] == K and K > 0}
        self.assertEqual({i for i, el in lines.items() if el.get("class") == "k"}, kedges)
        self.assertEqual(len(kedges), rep["nK"] if K > 0 else 0)
        # legend rows count every edge once, and the K row counts nK
        total = 0
        for row in legend:
            m = re.match(r"(\d+)(?:-(\d+))?(?: = K)?: (\d+) edges?$", row)
            self.assertIsNotNone(m, row)
            lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
            want = sum(1 for x in c if lo <= x <= hi and (x < K or "= K" in row or K == 0))
            self.assertEqual(int(m.group(3)), want, row)
            total += int(m.group(3))
        self.assertEqual(total, rep["m"])
        self.assertIn("K = %d, nK = %d, C = %d" % (K, rep["nK"], rep["C"]), texts["tuple"])
        return root, rep

    def test_generated_families(self):
        for fam, n, seed in (("random", 30, 1), ("grid", 50, 2), ("dense", 40, 3),
                             ("planted", 40, 4)):
            with self.subTest(fam=fam):
                self.assert_consistent(self.gen(fam, n, seed))

    def test_planar_layout_has_no_k_edges(self):
        g = {"nodes": [{"id": 0, "x": 0, "y": 0}, {"id": 1, "x": 3, "y": 0},
                       {"id": 2, "x": 0, "y": 3}],
             "edges": [{"source": 0, "target": 1}, {"source": 1, "target": 2}],
             "width": 3, "height": 3}
        root, rep = self.assert_consistent(self.write("tri.json", g))
        self.assertEqual(rep["K"], 0)

    def test_y_axis_up_and_x_right(self):
        # node i at (i, i*i): larger y must be drawn higher (smaller SVG y)
        n = 6
        g = {"nodes": [{"id": i, "x": i * 3, "y": i * i} for i in range(n)],
             "edges": [{"source": i, "target": i + 1} for i in range(n - 1)],
             "width": 20, "height": 30}
        root, _ = self.render(self.write("curve.json", g))
        _, circles, _, _ = self.svg_parts(root)
        cx = [float(circles["n%d" % i].get("cx")) for i in range(n)]
        cy = [float(circles["n%d" % i].get("cy")) for i in range(n)]
        self.assertEqual(cx, sorted(cx))
        self.assertEqual(cy, sorted(cy, reverse=True))
        # (0,0) is the bottom-left corner of the bounds rectangle
        b = next(el for el in root.iter(NS + "rect") if el.get("id") == "bounds")
        bottom = float(b.get("y")) + float(b.get("height"))
        self.assertAlmostEqual(cy[0], bottom, places=1)
        self.assertAlmostEqual(cx[0], float(b.get("x")), places=1)

    def test_huge_bounds(self):
        L = (1 << 30) - 1  # the largest coordinate the format allows
        g = {"nodes": [{"id": 0, "x": 0, "y": 0}, {"id": 1, "x": L, "y": L},
                       {"id": 2, "x": 0, "y": L}, {"id": 3, "x": L, "y": 0},
                       {"id": 4, "x": L // 3, "y": 7}],
             "edges": [{"source": 0, "target": 1}, {"source": 2, "target": 3},
                       {"source": 4, "target": 1}],
             "width": L, "height": L}
        root, _ = self.assert_consistent(self.write("huge.json", g))
        vb = [float(x) for x in root.get("viewBox").split()]
        self.assertLess(vb[2], 2000)
        self.assertLess(vb[3], 2000)
        _, circles, _, _ = self.svg_parts(root)
        for c in circles.values():
            self.assertTrue(0 <= float(c.get("cx")) <= vb[2])
            self.assertTrue(0 <= float(c.get("cy")) <= vb[3])
        # a large generated family too
        self.assert_consistent(self.gen("large", 300, 5))

    def test_sizes_follow_the_graph_and_k_edges_on_top(self):
        """Dots shrink with n and strokes with m (render.h): a 2,500-node
        graph's dots are small beside the space each node gets, the K edges
        are drawn after (over) every node and thicker than the others; a
        small graph keeps large dots."""
        def sizes(root):
            b = next(el for el in root.iter(NS + "rect") if el.get("id") == "bounds")
            area = float(b.get("width")) * float(b.get("height"))
            radii = {float(c.get("r")) for grp in root.iter(NS + "g")
                     if grp.get("fill") == "#222" for c in grp.iter(NS + "circle")}
            strokes = {grp.get("stroke"): float(grp.get("stroke-width"))
                       for grp in root.iter(NS + "g") if grp.get("stroke-linecap")}
            return area, radii, strokes

        root, info = self.render(self.gen("grid", 2500, 3))
        area, radii, strokes = sizes(root)
        self.assertEqual(len(radii), 1)
        r = radii.pop()
        spacing = (area / 2500) ** 0.5  # the side of each node's share of the drawing
        self.assertLessEqual(r, 0.15 * spacing)
        self.assertGreaterEqual(r, 0.4)
        k = strokes.pop("#d62728")
        self.assertTrue(all(k >= 2 * w for w in strokes.values()), (k, strokes))
        order = [el for el in root.iter() if el.tag in (NS + "circle", NS + "line")
                 and (el.get("id") or "").startswith(("n", "e"))]
        last_node = max(i for i, el in enumerate(order) if el.tag == NS + "circle")
        first_k = min(i for i, el in enumerate(order) if el.get("class") == "k")
        self.assertGreater(first_k, last_node)
        self.assertEqual(sum(1 for el in order if el.get("class") == "k"), info["nK"])

        root, _ = self.render(self.gen("random", 10, 1))
        _, radii, strokes = sizes(root)
        self.assertEqual(radii, {5.0})
        self.assertTrue(all(w == 1.6 for c, w in strokes.items() if c != "#d62728"))

    def test_escaped_title(self):
        p = self.gen("random", 10, 7)
        root, _ = self.render(p, "--title", "a<b & \"c\" >d")
        texts = ["".join(el.itertext()) for el in root.iter(NS + "text")]
        self.assertIn("a<b & \"c\" >d", texts)

    def test_json_summary_of_a_path_that_is_not_utf8(self):
        """--json summaries name the output file; a path that is not UTF-8
        cannot be a JSON string, so json_pack failed: `gen --json -o
        y\xff.json` crashed (SIGSEGV on the NULL document), `render --json`
        and `check` printed nothing or left the name out. The name is
        given with '?' for its bytes past ASCII."""
        d = os.fsencode(self.d)
        lcn = os.fsencode(LCNCTL)
        out = os.path.join(d, b"y\xff.json")
        r = subprocess.run([lcn, b"--json", b"gen", b"random", b"--nodes", b"8", b"-o", out],
                           capture_output=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(json.loads(r.stdout)["instance"].endswith("y?.json"))
        svg = os.path.join(d, b"x\xff.svg")
        r = subprocess.run([lcn, b"--json", b"render", out, b"-o", svg], capture_output=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(json.loads(r.stdout)["output"].endswith("x?.svg"))
        r = subprocess.run([lcn, b"check", out, b"--instance", out], capture_output=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        rep = json.loads(r.stdout)
        self.assertTrue(rep["layout"].endswith("y?.json"), rep)
        self.assertTrue(rep["instance"].endswith("y?.json"), rep)

    def test_title_bytes_that_are_not_xml_text(self):
        """The default title is the file name, any bytes: a Latin-1 name
        (caf\xe9.json) or a title with U+FFFE went into the caption as it
        was, and the picture was not well-formed XML. Bytes that are not
        UTF-8 of an XML character are drawn as '?'."""
        g = self.gen("random", 10, 7)
        latin1 = os.path.join(os.fsencode(self.d), b"caf\xe9.json")
        with open(g, "rb") as f, open(latin1, "wb") as o:
            o.write(f.read())
        out = self.path("out.svg")
        r = subprocess.run([os.fsencode(LCNCTL), b"render", latin1, b"-o", os.fsencode(out)],
                           capture_output=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        texts = ["".join(el.itertext()) for el in ET.parse(out).getroot().iter(NS + "text")]
        self.assertTrue(any(t.endswith("caf?.json") for t in texts), texts)
        for title, want in ((b"a\xef\xbf\xbeb\xef\xbf\xbfc", "a?b?c"),
                            (b"\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80", "\u00e9t\u00e9 \U0001f600"),
                            (b"\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\xe2\x82", "?" * 11)):
            r = subprocess.run([os.fsencode(LCNCTL), b"render", os.fsencode(g), b"-o",
                                os.fsencode(out), b"--title", title], capture_output=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            texts = ["".join(el.itertext()) for el in ET.parse(out).getroot().iter(NS + "text")]
            self.assertIn(want, texts, title)

    def test_invalid_layout_is_drawn_and_marked(self):
        g = {"nodes": [{"id": 0, "x": 0, "y": 0}, {"id": 1, "x": 4, "y": 0},
                       {"id": 2, "x": 2, "y": 0}, {"id": 3, "x": 9, "y": 9}],
             "edges": [{"source": 0, "target": 1}, {"source": 2, "target": 3}],
             "width": 5, "height": 5}
        root, info = self.render(self.write("bad.json", g), want=1)
        self.assertFalse(info["valid"])
        _, circles, texts, _ = self.svg_parts(root)
        self.assertIn("INVALID", texts["verdict"])
        self.assertIn("V1", texts["verdict"])
        self.assertIn("V3", texts["verdict"])
        red = set()
        for grp in root.iter(NS + "g"):
            if grp.get("fill") == "#e8000b":
                red |= {c.get("id") for c in grp.iter(NS + "circle")}
        # node 2 lies on edge 0 (V3), node 3 is out of bounds (V1)
        self.assertEqual(red, {"n2", "n3"})
        self.assertEqual(len(circles), 4)

    def test_instance_mismatch_refused(self):
        a = self.gen("random", 10, 1)
        b = self.gen("random", 11, 1)
        out = self.path("never.svg")
        r = run("render", a, "--instance", b, "-o", out)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("does not draw the instance", r.stderr)
        self.assertFalse(os.path.exists(out))
        r = run("render", a, "--instance", a, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        ET.parse(out)

    def test_usage_and_input_errors(self):
        p = self.gen("random", 10, 1)
        self.assertEqual(run("render", p).returncode, 2)  # no -o
        self.assertEqual(run("render", "-o", self.path("x.svg")).returncode, 2)
        r = run("render", self.path("missing.json"), "-o", self.path("x.svg"))
        self.assertEqual(r.returncode, 2)
        g = {"nodes": [{"id": 0}, {"id": 1, "x": 1, "y": 1}], "edges": [], "width": 2,
             "height": 2}
        r = run("render", self.write("nocoord.json", g), "-o", self.path("x.svg"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("without coordinates", r.stderr)
        r = run("render", p, "-o", os.path.join(self.d, "no", "such", "dir.svg"))
        self.assertEqual(r.returncode, 2)
        # stdout
        r = subprocess.run([LCNCTL, "render", p, "-o", "-"], capture_output=True)
        self.assertEqual(r.returncode, 0)
        ET.fromstring(r.stdout)

    def test_output_on_stdout_keeps_the_note_out(self):
        """-o /dev/stdout (or any path to the file stdout is on, or a path
        that is not a regular file) wrote the picture and then appended the
        note "wrote ...: K=..." to it on stdout: junk after the document
        element. The note goes to stderr there, and --json, which wants
        stdout too, is a usage error as with -o -."""
        p = self.gen("random", 8, 1)
        r = subprocess.run([LCNCTL, "render", p, "-o", "/dev/stdout"], capture_output=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        ET.fromstring(r.stdout)  # the picture alone
        self.assertIn(b"wrote /dev/stdout: K=", r.stderr)
        out = self.path("same.svg")
        with open(out, "wb") as f:  # stdout is the file -o names
            r = subprocess.run([LCNCTL, "render", p, "-o", out], stdout=f,
                               stderr=subprocess.PIPE)
        self.assertEqual(r.returncode, 0, r.stderr)
        ET.parse(out)
        self.assertIn(b"wrote ", r.stderr)
        r = subprocess.run([LCNCTL, "render", p, "-o", "/dev/stdout", "--json"],
                           capture_output=True)
        self.assertEqual(r.returncode, 2, r.stdout[-200:])
        self.assertIn(b"both want stdout", r.stderr)
        self.assertEqual(r.stdout, b"")
        # a regular file elsewhere: the note stays on stdout
        r = run("render", p, "-o", self.path("x.svg"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("wrote ", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
