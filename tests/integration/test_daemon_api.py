#!/usr/bin/env python3
"""lcnd API: submit -> progress -> validated solution, budgets, targets,
listing, service endpoints, and every class of bad input (with its status,
code and field path) leaving other jobs untouched."""

import json
import socket
import time
import unittest

from lcnd_harness import (Daemon, assert_error, check_solution, gen_graph, need_binaries,
                          tiny_graph)


class Api(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.g = gen_graph("random", 40, seed=7)
        cls.d = Daemon("--max-nodes", "200", "--max-edges", "1000", "--max-budget-s", "30",
                       "--max-body-bytes", "200000", "--cpu-workers", "2",
                       "--checkpoint-interval-s", "0.2").start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        cls.d.cleanup()
        assert rc == 0, rc

    def test_submit_progress_solution(self):
        d = self.d
        r = d.request("POST", "/jobs", body={"graph": self.g, "budget_s": 1.0, "seed": 5,
                                             "name": "first"})
        self.assertEqual(r.status, 201, r.body)
        body = r.json()
        job = body["id"]
        self.assertEqual(r.header("Location"), "/jobs/" + job)
        self.assertEqual(body["links"]["solution"], "/jobs/%s/solution" % job)
        s = d.wait(job)
        self.assertEqual(s["state"], "succeeded")
        self.assertEqual(s["name"], "first")
        self.assertEqual(s["backend"], "cpu")
        self.assertEqual(s["stop_reason"], "deadline")
        self.assertEqual(s["graph"], {"n": 40, "m": len(self.g["edges"]),
                                      "width": self.g["width"], "height": self.g["height"]})
        self.assertIsNotNone(s["started_at"])
        self.assertIsNotNone(s["finished_at"])
        # the budget is honoured (the engine stops at its deadline; slack for a loaded box)
        self.assertGreater(s["elapsed_s"], 0.5)
        self.assertLess(s["elapsed_s"], 1.0 + 3.0)
        self.assertGreater(s["telemetry"]["evaluated"], 0)
        events, page = d.events(job)
        self.assertTrue(page["done"])
        seqs = [e["seq"] for e in events]
        self.assertEqual(seqs, list(range(1, len(seqs) + 1)))
        self.assertEqual(seqs[-1], s["progress_seq"])
        self.assertEqual([e["state"] for e in events if e["type"] == "state"],
                         ["queued", "running", "succeeded"])
        improves = [e for e in events if e["type"] == "improve"]
        self.assertTrue(improves)
        for a, b in zip(improves, improves[1:]):
            ta = (a["best"]["K"], a["best"]["nK"], a["best"]["Phi"], a["best"]["C"])
            tb = (b["best"]["K"], b["best"]["nK"], b["best"]["Phi"], b["best"]["C"])
            self.assertLess(tb, ta)  # strict improvements only
        self.assertTrue(any(e["type"] == "checkpoint" for e in events))
        # progress pages: after and limit
        r = d.get("/jobs/%s/progress?after=1&limit=1" % job)
        p = r.json()
        self.assertEqual([e["seq"] for e in p["events"]], [2])
        self.assertEqual(p["next"], 2)
        self.assertFalse(p["done"])
        sol, rep = check_solution(self, d, job, self.g)
        self.assertTrue(sol["lcn"]["final"])
        self.assertEqual(sol["lcn"]["job"], job)
        self.assertEqual(rep["K"], s["best"]["K"])
        self.assertEqual(rep["Phi"], s["best"]["Phi"])
        # node and edge order and extra fields are kept
        self.assertEqual([n["id"] for n in sol["nodes"]], [n["id"] for n in self.g["nodes"]])
        self.assertEqual(sol["edges"], self.g["edges"])
        self.assertEqual(sol.get("generator"), self.g.get("generator"))

    def test_target_stops_early(self):
        d = self.d
        job = d.submit(self.g, budget_s=20, target_k=10000, stop_at_target=True)
        s = d.wait(job)
        self.assertEqual(s["state"], "succeeded")
        self.assertEqual(s["stop_reason"], "target")
        self.assertIsNotNone(s["time_to_target_s"])
        self.assertLess(s["elapsed_s"], 20)
        check_solution(self, d, job, self.g)

    def test_missing_coordinates(self):
        g = json.loads(json.dumps(self.g))
        for n in g["nodes"][::3]:
            del n["x"]
            del n["y"]
        job = self.d.submit(g, budget_s=0.3)
        s = self.d.wait(job)
        self.assertEqual(s["state"], "succeeded", s)
        check_solution(self, self.d, job, g)

    def test_list_and_pagination(self):
        d = self.d
        ids = [d.submit(tiny_graph(), budget_s=0.05) for _ in range(3)]
        for j in ids:
            d.wait(j)
        r = d.get("/jobs?limit=2")
        self.assertEqual(r.status, 200)
        page = r.json()
        self.assertEqual(len(page["jobs"]), 2)
        got = [j["id"] for j in page["jobs"]]
        self.assertEqual(got, sorted(got, reverse=True))
        self.assertNotIn("telemetry", page["jobs"][0])
        nxt = page["next_before"]
        self.assertEqual(nxt, got[-1])
        r2 = d.get("/jobs?limit=500&before=" + nxt).json()
        self.assertTrue(all(j["id"] < nxt for j in r2["jobs"]))
        every = got + [j["id"] for j in r2["jobs"]]
        for j in ids:
            self.assertIn(j, every)
        self.assertIsNone(r2["next_before"])
        r3 = d.get("/jobs?state=succeeded&limit=500").json()
        self.assertTrue(all(j["state"] == "succeeded" for j in r3["jobs"]))
        # GET /jobs/<id> serves a cached text; the list builds each status
        # afresh: both agree on every field (the list has no telemetry)
        for j in r3["jobs"]:
            one = d.status(j["id"])
            one.pop("telemetry")
            self.assertEqual(one, j)
        self.assertEqual(d.get("/jobs?state=bogus").status, 400)
        self.assertEqual(d.get("/jobs?limit=0").json()["error"]["field"], "limit")
        self.assertEqual(d.get("/jobs?before=xyz").status, 400)

    def test_service_endpoints(self):
        d = self.d
        self.assertEqual(d.get("/healthz").json(), {"status": "ok"})
        r = d.get("/readyz")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json(), {"ready": True, "store": "ok", "gpu": "absent"})
        v = d.get("/version").json()
        self.assertIn("version", v)
        self.assertIn("commit", v)
        self.assertEqual(v["backends"], ["cpu"])
        m = d.get("/metrics")
        self.assertEqual(m.status, 200)
        text = m.body.decode()
        for name in ("lcn_jobs{state=\"succeeded\"}", "lcn_queue_depth", "lcn_running_jobs",
                     "lcn_evaluations_total", "lcn_http_responses_total{code=\"200\"}",
                     "lcn_gpu_memory_bytes", "lcn_build_info{"):
            self.assertIn(name, text)
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                float(value)

    def assertError(self, r, status, code, field=None, msg=None):
        return assert_error(self, r, status, code, field, msg)

    def test_bad_input(self):
        d = self.d
        # a job that runs while every bad request is thrown at the daemon
        running = d.submit(self.g, budget_s=3)
        d.wait(running, ("running",))
        before = d.get("/jobs?limit=500").json()["jobs"]
        g = self.g
        post = lambda body, **kw: d.request("POST", "/jobs", body=body, **kw)
        e = self.assertError(post(b'{"graph": {"nodes": ['), 400, "bad_json")
        self.assertIn("line 1", e["message"])
        self.assertError(post(b'{"graph": 1, "graph": 2}'), 400, "bad_json", None, "duplicate")
        self.assertError(post(b'[1, 2]'), 400, "invalid_field")
        self.assertError(post(b''), 400, "bad_json")
        self.assertError(post({"budget_s": 1}), 400, "invalid_field", "graph", "missing")
        self.assertError(post({"graph": "nope"}), 400, "invalid_field", "graph")
        self.assertError(post({"graph": g, "budget_s": "10"}), 400, "invalid_field", "budget_s")
        self.assertError(post({"graph": g, "seed": 1.5}), 400, "invalid_field", "seed")
        self.assertError(post({"graph": g, "seed": -1}), 400, "invalid_field", "seed")
        self.assertError(post({"graph": g, "stop_at_target": "yes"}), 400, "invalid_field",
                         "stop_at_target")
        self.assertError(post({"graph": g, "backend": "tpu"}), 400, "invalid_field", "backend")
        self.assertError(post({"graph": g, "solver": {"threads": -2}}), 400, "invalid_field",
                         "solver.threads")
        self.assertError(post({"graph": g, "solver": {"proposal_workers": 300}}), 422,
                         "limit_exceeded", "solver.proposal_workers", "engine limit of 256")
        self.assertError(post({"graph": g, "solver": {"chains": 2}}), 400, "invalid_field",
                         "solver.chains", "unknown field")
        # knobs the engine that would run the job does not have: refused, not failed later
        self.assertError(post({"graph": g, "backend": "cpu", "solver": {"tuning": "groups=3"}}), 422,
                         "invalid_field", "solver.tuning", "cpu engine refuses it")
        self.assertError(post({"graph": g, "solver": {"tuning": "p_swap=2"}}), 422,
                         "invalid_field", "solver.tuning", "p_swap")
        self.assertError(post({"graph": g, "colour": "red"}), 400, "invalid_field", "colour",
                         "unknown field")
        self.assertError(post({"graph": g, "name": "x" * 129}), 400, "invalid_field", "name")
        # graph content: wrong types, unknown node ids, self-loops, duplicate edges
        bad = json.loads(json.dumps(g))
        bad["nodes"][3]["x"] = "7"
        self.assertError(post({"graph": bad}), 400, "invalid_field", "graph.nodes[3].x")
        bad = json.loads(json.dumps(g))
        bad["edges"][12]["source"] = 99
        self.assertError(post({"graph": bad}), 400, "invalid_field", "graph.edges[12].source",
                         "unknown node 99")
        bad = json.loads(json.dumps(g))
        bad["edges"][5]["target"] = bad["edges"][5]["source"]
        self.assertError(post({"graph": bad}), 400, "invalid_field", "graph.edges[5]",
                         "self-loop")
        bad = json.loads(json.dumps(g))
        bad["edges"].append({"source": g["edges"][2]["target"], "target": g["edges"][2]["source"]})
        self.assertError(post({"graph": bad}), 400, "invalid_field",
                         "graph.edges[%d]" % len(g["edges"]), "duplicate")
        bad = json.loads(json.dumps(g))
        del bad["width"]
        self.assertError(post({"graph": bad}), 400, "invalid_field", "graph.width")
        # budget: negative, zero, huge
        self.assertError(post({"graph": g, "budget_s": -1}), 400, "invalid_field", "budget_s")
        self.assertError(post({"graph": g, "budget_s": 0}), 400, "invalid_field", "budget_s")
        self.assertError(post({"graph": g, "budget_s": 1e9}), 422, "limit_exceeded", "budget_s")
        self.assertError(post(b'{"graph": {}, "budget_s": 1e999}'), 400, "bad_json")
        # size limits: too many nodes, too many edges, oversize body
        big = gen_graph("random", 300, seed=1)
        self.assertError(post({"graph": big}), 422, "limit_exceeded", "graph.nodes")
        dense = gen_graph("dense", 100, seed=1)
        self.assertError(post({"graph": dense}), 422, "limit_exceeded", "graph.edges")
        pad = {"graph": g, "name": "n", "solver": {}}
        body = json.dumps(pad).encode()
        body = body[:-1] + b"," + b'"pad":"' + b"x" * 210000 + b'"}'
        self.assertError(post(body), 413, "too_large")
        self.assertEqual(self.partial_upload(300000), 413)
        # media type, unknown job, wrong method, unknown route
        self.assertError(post(json.dumps({"graph": g}), ctype="text/plain"), 415,
                         "unsupported_media_type")
        self.assertError(d.get("/jobs/j0000000000999999"), 404, "not_found")
        self.assertError(d.get("/jobs/bogus"), 404, "not_found")
        self.assertError(d.get("/jobs/j0000000000999999/solution"), 404, "not_found")
        self.assertError(d.request("DELETE", "/jobs/j0000000000999999"), 404, "not_found")
        r = d.request("PUT", "/jobs/" + running)
        self.assertError(r, 405, "method_not_allowed")
        self.assertIn("DELETE", r.header("Allow"))
        self.assertError(d.request("POST", "/healthz", body={}), 405, "method_not_allowed")
        self.assertError(d.get("/nope"), 404, "not_found")
        self.assertError(d.get("/jobs/%s/progress?after=-3" % running), 400, "invalid_field",
                         "after")
        # query integers are digits only, and each argument is given once
        self.assertError(d.get("/jobs/%s/progress?after=%%201" % running), 400, "invalid_field",
                         "after")
        self.assertError(d.get("/jobs/%s/progress?after=+1" % running), 400, "invalid_field",
                         "after")
        self.assertError(d.get("/jobs/%s/progress?after=1&after=2" % running), 400,
                         "invalid_field", "after", "more than once")
        self.assertError(d.get("/jobs?limit=5&limit=6"), 400, "invalid_field", "limit")
        self.assertError(d.get("/jobs?state=queued&state=running"), 400, "invalid_field", "state")
        self.assertError(d.get("/jobs?before=%s&before=%s" % (running, running)), 400,
                         "invalid_field", "before")
        # nothing else changed: same jobs, the running job still runs and ends well
        after = d.get("/jobs?limit=500").json()["jobs"]
        self.assertEqual([j["id"] for j in before], [j["id"] for j in after])
        s = d.wait(running)
        self.assertEqual(s["state"], "succeeded")
        check_solution(self, d, running, g)
        self.assertEqual(d.get("/healthz").status, 200)

    def partial_upload(self, length):
        """Announces a body larger than the limit and sends only part of it:
        the answer (413) must come without the rest being read."""
        host, port = self.d.addr.rsplit(":", 1)
        s = socket.create_connection((host, int(port)), timeout=30)
        s.sendall(b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n{\"graph\":" % length)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        s.close()
        return int(data.split(b" ")[1])

    def test_solution_states(self):
        d = self.d
        # a queued job has no solution yet; an unknown one is 404
        job = d.submit(self.g, budget_s=2)
        r = d.get("/jobs/%s/solution" % job)
        if r.status == 409:
            self.assertEqual(r.json()["error"]["code"], "no_solution")
        else:
            self.assertEqual(r.status, 200)
        # while running, a checkpointed layout is served with final=false
        d.wait(job, ("running",))
        deadline = time.time() + 30
        while time.time() < deadline:
            r = d.get("/jobs/%s/solution" % job)
            if r.status == 200 or d.status(job)["state"] != "running":
                break
            time.sleep(0.05)
        if r.status == 200 and not r.json()["lcn"]["final"]:
            check_solution(self, d, job, self.g)
        d.wait(job)
        sol, _ = check_solution(self, d, job, self.g)
        self.assertTrue(sol["lcn"]["final"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
