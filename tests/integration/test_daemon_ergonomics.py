#!/usr/bin/env python3
"""The daemon's side of issue 21 item 5, against a real lcnd: a bare graph
body with the request fields as query arguments (and the hint for a body
that is neither), log lines that name jobs by their API id at submit,
start, each better K and the end (text and log_format = json), and CORS
(off by default; allowed_origins answers preflights and marks answers for
the allowed origins only, as docs/openapi.json documents); and lcnctl
against it: --retry through a full queue, exit 6 for no solution yet,
Ctrl-C during submit --wait."""

import json
import os
import signal
import subprocess
import unittest

from lcnd_harness import (LCNCTL, Daemon, DaemonCase, assert_error, assert_start_fails,
                          check_solution, gen_graph, need_binaries, tiny_graph)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def bare_post(d, graph, query="", ctype="application/json"):
    return d.request("POST", "/jobs" + query, body=graph, ctype=ctype)


class BareGraph(DaemonCase):
    ARGS = ("--checkpoint-interval-s", "0.2", "--max-budget-s", "100")

    def assertError(self, r, status, code, field=None, msg=None):
        return assert_error(self, r, status, code, field, msg)

    def test_bare_graph_with_query_fields(self):
        g = gen_graph("random", 30, seed=4)
        r = bare_post(self.d, g, "?budget_s=0.5&seed=7&target_k=0&stop_at_target=false"
                                 "&backend=cpu&name=bare%20one")
        self.assertEqual(r.status, 201, r.body)
        job = r.json()["id"]
        self.assertEqual(r.header("Location"), "/jobs/" + job)
        s = self.d.wait(job)
        self.assertEqual(s["state"], "succeeded", s)
        self.assertEqual((s["budget_s"], s["seed"], s["target_k"], s["backend_requested"],
                          s["name"]), (0.5, 7, 0, "cpu", "bare one"))
        self.assertEqual((s["graph"]["n"], s["graph"]["m"]), (len(g["nodes"]), len(g["edges"])))
        sol, _ = check_solution(self, self.d, job, g)
        self.assertEqual(sol["lcn"]["job"], job)

    def test_bare_graph_defaults(self):
        r = bare_post(self.d, tiny_graph(), "?budget_s=0.2")
        self.assertEqual(r.status, 201, r.body)
        s = self.d.wait(r.json()["id"])
        self.assertEqual((s["state"], s["seed"], s["name"]), ("succeeded", 1, None))

    def test_bad_query_arguments(self):
        g = tiny_graph()
        self.assertError(bare_post(self.d, g, "?budget_s=soon"), 400, "invalid_field", "budget_s",
                         "'soon' is not a number")
        self.assertError(bare_post(self.d, g, "?budget_s=1000"), 422, "limit_exceeded",
                         "budget_s")
        self.assertError(bare_post(self.d, g, "?seed=-1"), 400, "invalid_field", "seed")
        self.assertError(bare_post(self.d, g, "?stop_at_target=1"), 400, "invalid_field",
                         "stop_at_target")
        self.assertError(bare_post(self.d, g, "?stop_at_target=true"), 400, "invalid_field",
                         "stop_at_target", "without a target_k")
        self.assertError(bare_post(self.d, g, "?backend=tpu"), 400, "invalid_field", "backend")
        # errors inside the graph keep their graph. paths
        bad = dict(g, edges=[{"source": 0, "target": 9}])
        self.assertError(bare_post(self.d, bad, "?budget_s=1"), 400, "invalid_field",
                         "graph.edges[0].target")

    def test_query_with_a_request_body_is_refused(self):
        r = bare_post(self.d, {"graph": tiny_graph(), "budget_s": 0.2}, "?seed=3")
        self.assertError(r, 400, "invalid_field", "seed", "bare graph body only")

    def test_neither_says_how_to_wrap(self):
        e = self.assertError(bare_post(self.d, {"width": 4, "height": 4}), 400, "invalid_field",
                             "width", "unknown field")
        self.assertIn('wrap the graph as {"graph": GRAPH', e["message"])
        self.assertIn("query arguments", e["message"])
        e = self.assertError(bare_post(self.d, [1, 2]), 400, "invalid_field")
        self.assertIn("wrap the graph", e["message"])

    def test_bare_graph_survives_a_restart(self):
        """The stored request is the wrapped one: a job queued from a bare
        body is read back and run by the next daemon process."""
        d = Daemon("--cpu-workers", "1").start()
        try:
            first = d.submit(gen_graph("random", 40, seed=2), budget_s=30)
            d.wait(first, ("running",))
            g = gen_graph("random", 20, seed=3)
            r = bare_post(d, g, "?budget_s=0.3&seed=5")
            self.assertEqual(r.status, 201, r.body)
            job = r.json()["id"]
            self.assertEqual(d.stop(), 0)
            d.start()
            d.request("DELETE", "/jobs/" + first)
            s = d.wait(job)
            self.assertEqual((s["state"], s["seed"], s["budget_s"]), ("succeeded", 5, 0.3), s)
            check_solution(self, d, job, g)
            self.assertEqual(d.stop(), 0)
        finally:
            d.cleanup()


class Logs(unittest.TestCase):
    def setUp(self):
        need_binaries(self)

    def run_jobs(self, d):
        """A job that runs to its deadline (with improvements) and a cancelled
        queued one; returns their ids."""
        g = gen_graph("random", 60, seed=9)
        first = d.submit(g, budget_s=1.0)
        second = d.submit(tiny_graph(), budget_s=5)
        d.request("DELETE", "/jobs/" + second)
        d.wait(first)
        return first, second

    def test_text_lines_name_jobs_by_api_id(self):
        d = Daemon("--cpu-workers", "1").start()
        try:
            first, second = self.run_jobs(d)
            self.assertEqual(d.stop(), 0)
            lines = [l for l in d.log().splitlines() if " job %s: " % first in l]
            text = "\n".join(lines)
            self.assertIn("info job %s: submitted: n=60" % first, text)
            self.assertIn("info job %s: started on cpu worker 0" % first, text)
            self.assertIn("info job %s: succeeded after" % first, text)
            self.assertIn("stop deadline, K=", text)
            # one line per better K, in strictly decreasing order of K
            ks = [int(l.split("K=")[1].split()[0]) for l in lines if ": K=" in l]
            self.assertGreater(len(ks), 0, text)
            self.assertEqual(ks, sorted(set(ks), reverse=True), text)
            self.assertIn("job %s: cancelled before it started" % second, d.log())
            # no line names a job the old way
            self.assertNotRegex(d.log(), r"job \d+:")
        finally:
            d.cleanup()

    def test_json_format(self):
        d = Daemon("--cpu-workers", "1", "--log-format", "json").start()
        try:
            first, second = self.run_jobs(d)
            final = d.status(first)
            self.assertEqual(d.stop(), 0)
            objs = [json.loads(l) for l in d.log().splitlines()]  # every line is one object
            for o in objs:
                self.assertLessEqual({"time", "level", "message"}, set(o), o)
                self.assertRegex(o["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
                self.assertIn(o["level"], ("error", "warn", "info", "debug"))
            mine = [o for o in objs if o.get("job") == first]
            msgs = [o["message"] for o in mine]
            self.assertTrue(msgs[0].startswith("submitted: n=60"), msgs)
            self.assertTrue(any(m.startswith("started on cpu") for m in msgs), msgs)
            self.assertTrue(msgs[-1].startswith("succeeded after"), msgs)
            self.assertIn("K=%d" % final["best"]["K"], msgs[-1])
            ks = [int(m[2:].split()[0]) for m in msgs if m.startswith("K=")]
            self.assertEqual(ks[-1], final["best"]["K"])
            self.assertTrue(any(o.get("job") == second for o in objs))
            # lines not about a job have no job field
            self.assertTrue(any("listening on" in o["message"] and "job" not in o for o in objs))
        finally:
            d.cleanup()

    def test_log_format_is_checked(self):
        assert_start_fails(self, ("--log-format", "xml"), "--log-format: expected one of text|json")


class Lcnctl(DaemonCase):
    """lcnctl against the real daemon: --retry through a full queue, the exit
    status of a solution that does not exist yet, Ctrl-C during --wait."""
    ARGS = ("--cpu-workers", "1", "--max-queued", "1", "--retry-after-s", "1")

    @classmethod
    def setUpClass(cls):
        if not LCNCTL:
            raise unittest.SkipTest("LCNCTL not set")
        super().setUpClass()
        cls.graph = os.path.join(cls.d.dir, "g.json")
        with open(cls.graph, "w") as f:
            json.dump(gen_graph("random", 40, seed=6), f)

    def lcnctl(self, *args, **kw):
        env = dict(os.environ, LCN_SERVER=self.d.addr)
        return subprocess.Popen([LCNCTL, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, **kw)

    def busy(self):
        """One job running, one queued: the queue is full (max_queued 1)."""
        g = gen_graph("random", 60, seed=8)  # no layout ends its search early
        running = self.d.submit(g, budget_s=60)
        self.d.wait(running, ("running",))
        queued = self.d.submit(g, budget_s=60)
        self.addCleanup(self.d.request, "DELETE", "/jobs/" + running)
        self.addCleanup(self.d.request, "DELETE", "/jobs/" + queued)
        return running, queued

    def test_retry_through_a_full_queue(self):
        running, queued = self.busy()
        p = self.lcnctl("submit", self.graph, "--budget-s", "0.2")
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 5, err)  # no --retry: refused at once
        self.assertIn("HTTP 429 queue_full", err)
        p = self.lcnctl("submit", self.graph, "--budget-s", "0.2", "--retry", "20")
        note = p.stderr.readline()  # the daemon's Retry-After is retry_after_s
        self.assertEqual(note, "lcnctl: HTTP 429 queue_full: retry 1 of 20 in 1 s\n")
        self.d.request("DELETE", "/jobs/" + queued)  # room in the queue
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        job = out.strip()
        self.assertRegex(job, r"^j\d{16}$")
        self.d.request("DELETE", "/jobs/" + running)
        self.assertEqual(self.d.wait(job)["state"], "succeeded")

    def test_no_solution_yet(self):
        running, queued = self.busy()
        p = self.lcnctl("solution", queued)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 6, err)
        self.assertIn("no solution yet (HTTP 409 no_solution)", err)
        p = self.lcnctl("solution", "j0000000000009999")
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, 3)

    def test_ctrl_c_leaves_the_job_running(self):
        p = self.lcnctl("submit", self.graph, "--budget-s", "60", "--wait")
        job = p.stderr.readline().strip()
        self.assertRegex(job, r"^j\d{16}$")
        self.addCleanup(self.d.request, "DELETE", "/jobs/" + job)
        self.d.wait(job, ("running",))
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 130, err)
        self.assertIn("job %s is still running" % job, err)
        self.assertIn("lcnctl watch %s" % job, err)
        self.assertIn("lcnctl cancel %s" % job, err)
        self.assertEqual(self.d.status(job)["state"], "running")
        p = self.lcnctl("cancel", job)
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(self.d.status(job)["state"], "cancelled")


class Cors(unittest.TestCase):
    ORIGIN = "http://app.example.org:8443"
    TOKEN = "cors-token-0123456789"

    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        with open(os.path.join(ROOT, "docs", "openapi.json")) as f:
            cls.doc = json.load(f)

    def start(self, *args):
        d = Daemon(*args, token=self.TOKEN)
        tf = os.path.join(d.dir, "token")
        with open(tf, "w") as f:
            f.write(self.TOKEN + "\n")
        d.start(extra=["--token-file", tf])
        self.addCleanup(d.cleanup)
        return d

    def preflight(self, d, path, origin):
        return d.request("OPTIONS", path, headers={
            "Origin": origin, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
            "Authorization": ""})

    def test_off_by_default(self):
        d = self.start()
        r = d.get("/version", headers={"Origin": self.ORIGIN})
        self.assertEqual(r.status, 200)
        self.assertIsNone(r.header("Access-Control-Allow-Origin"))
        self.assertIsNone(r.header("Vary"))
        # OPTIONS is no preflight: the token first, then 405 as for any method
        r = self.preflight(d, "/jobs", self.ORIGIN)
        self.assertEqual(r.status, 401)
        self.assertIsNone(r.header("Access-Control-Allow-Origin"))
        r = d.request("OPTIONS", "/jobs", headers={"Origin": self.ORIGIN})
        self.assertEqual(r.status, 405)

    def test_allowed_origins(self):
        other = "https://other.example.org"
        d = self.start("--allowed-origins", "%s, https://ops.example.org" % self.ORIGIN)
        for path in ("/jobs", "/jobs/j0000000000000001/progress", "/version", "/no/such/path"):
            r = self.preflight(d, path, self.ORIGIN)
            self.assertEqual(r.status, 204, path)
            self.assertEqual(r.body, b"")
            self.assertEqual(r.header("Access-Control-Allow-Origin"), self.ORIGIN)
            self.assertEqual(r.header("Access-Control-Allow-Methods"), "GET, HEAD, POST, DELETE")
            allowed = {h.strip().lower()
                       for h in r.header("Access-Control-Allow-Headers").split(",")}
            self.assertLessEqual({"authorization", "content-type", "last-event-id"}, allowed)
            self.assertEqual(r.header("Vary"), "Origin")
            # documented for the API's paths
            if path in ("/jobs", "/version"):
                self.assertIn("204", self.doc["paths"][path]["options"]["responses"])
        # an origin not in the list: answered, but nothing allows it
        for r in (self.preflight(d, "/jobs", other),
                  self.preflight(d, "/jobs", self.ORIGIN + "/")):
            self.assertEqual(r.status, 204)
            self.assertIsNone(r.header("Access-Control-Allow-Origin"))
            self.assertIsNone(r.header("Access-Control-Allow-Methods"))
        # real answers carry the origin, errors too (the page can read them)
        r = d.request("POST", "/jobs", body={"graph": tiny_graph(), "budget_s": 0.2},
                      headers={"Origin": self.ORIGIN})
        self.assertEqual(r.status, 201, r.body)
        self.assertEqual(r.header("Access-Control-Allow-Origin"), self.ORIGIN)
        self.assertIn("Location", r.header("Access-Control-Expose-Headers"))
        r = d.get("/jobs", headers={"Origin": self.ORIGIN, "Authorization": "Bearer wrong"})
        self.assertEqual(r.status, 401)
        self.assertEqual(r.header("Access-Control-Allow-Origin"), self.ORIGIN)
        r = d.get("/jobs", headers={"Origin": "https://ops.example.org"})
        self.assertEqual(r.header("Access-Control-Allow-Origin"), "https://ops.example.org")
        r = d.get("/jobs", headers={"Origin": other})
        self.assertEqual(r.status, 200)
        self.assertIsNone(r.header("Access-Control-Allow-Origin"))
        self.assertEqual(r.header("Vary"), "Origin")

    def test_bad_origin_list_refused_at_start(self):
        for bad in ("app.example.org", "https://app.example.org/", "http://a.org, ,http://b.org"):
            assert_start_fails(self, ("--allowed-origins", bad), "is not an origin")


if __name__ == "__main__":
    unittest.main(verbosity=2)
