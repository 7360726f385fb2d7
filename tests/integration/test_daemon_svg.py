#!/usr/bin/env python3
"""GET /jobs/<id>/solution.svg (issue 21 item 2): the picture lcnctl render
draws (proto/render.h), of the job's best validated layout. A finished
job's picture is image/svg+xml, parses as XML, has one <line> per edge and
as many K edges (class "k") as the job's nK; a running job's shows its
latest checkpoint; 409 no_solution before any layout exists, 404 for an
unknown job."""

import time
import unittest
import xml.etree.ElementTree as ET

from lcnd_harness import WAIT, DaemonCase, gen_graph

NS = "{http://www.w3.org/2000/svg}"


class Svg(DaemonCase):
    ARGS = ("--cpu-workers", "1", "--checkpoint-interval-s", "0.2", "--max-budget-s", "60")

    def picture(self, job):
        r = self.d.get("/jobs/%s/solution.svg" % job)
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertEqual(r.header("Content-Type"), "image/svg+xml")
        root = ET.fromstring(r.body)  # raises on malformed XML
        self.assertEqual(root.tag, NS + "svg")
        edges = [el for el in root.iter(NS + "line") if (el.get("id") or "").startswith("e")]
        nodes = [el for el in root.iter(NS + "circle") if (el.get("id") or "").startswith("n")]
        texts = {el.get("id"): "".join(el.itertext()) for el in root.iter(NS + "text")
                 if el.get("id")}
        return root, edges, nodes, texts

    def test_finished_job(self):
        d = self.d
        g = gen_graph("random", 60, seed=3)
        job = d.submit(g, budget_s=1.0, name="pic")
        s = d.wait(job)
        self.assertEqual(s["state"], "succeeded")
        root, edges, nodes, texts = self.picture(job)
        self.assertEqual(len(edges), len(g["edges"]))
        self.assertEqual(sorted(int(e.get("id")[1:]) for e in edges), list(range(len(g["edges"]))))
        self.assertEqual(len(nodes), len(g["nodes"]))
        best = s["best"]
        self.assertGreater(best["K"], 0)
        self.assertEqual(sum(1 for e in edges if e.get("class") == "k"), best["nK"])
        sol = d.get("/jobs/%s/solution" % job).json()["lcn"]
        self.assertEqual(sol["nK"], best["nK"])
        self.assertIn("K = %d, nK = %d, C = %d" % (best["K"], best["nK"], best["C"]),
                      texts["tuple"])
        self.assertIn("valid", texts["verdict"])
        captions = ["".join(el.itertext()) for el in root.iter(NS + "text")]
        self.assertIn("job %s: pic" % job, captions)
        self.assertTrue(any(c.startswith("final layout at ") for c in captions), captions)
        # HEAD answers like GET, without a body
        r = d.request("HEAD", "/jobs/%s/solution.svg" % job)
        self.assertEqual((r.status, r.header("Content-Type"), r.body), (200, "image/svg+xml", b""))

    def test_running_queued_and_unknown(self):
        d = self.d
        g = gen_graph("random", 50, seed=4)
        running = d.submit(g, budget_s=30)
        d.wait(running, states=("running",))
        queued = d.submit(g, budget_s=1)  # one worker: waits behind the first
        r = d.get("/jobs/%s/solution.svg" % queued)
        self.assertEqual(r.status, 409, r.body)
        self.assertEqual(r.json()["error"]["code"], "no_solution")
        deadline = time.time() + WAIT
        while d.get("/jobs/%s/solution" % running).status == 409 and time.time() < deadline:
            time.sleep(0.05)
        root, edges, _, _ = self.picture(running)
        self.assertEqual(len(edges), len(g["edges"]))
        captions = ["".join(el.itertext()) for el in root.iter(NS + "text")]
        self.assertTrue(any(c.startswith("best layout so far at ") for c in captions), captions)
        r = d.get("/jobs/j0000000000009999/solution.svg")
        self.assertEqual(r.status, 404)
        self.assertEqual(r.json()["error"]["code"], "not_found")
        for job in (queued, running):
            self.assertEqual(d.request("DELETE", "/jobs/" + job).status, 200)


if __name__ == "__main__":
    unittest.main(verbosity=2)
