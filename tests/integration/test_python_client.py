#!/usr/bin/env python3
"""clients/python (lcn_client) against a real lcnd with a token (issue 21
item 6): submit a generated graph, wait with a progress callback that sees
every event once and in order, fetch the solution and check it with the
independent Python checker (tools/oracle/lcn_check.py); cancel a queued and
a running job; list them (pages, state filter, limit); errors as LcnError
with the status and the API's error body; a wait that times out; and a
wait that pages through the events when the daemon refuses streams.

The package is imported from the source tree (PYTHONPATH), not installed."""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

from lcnd_harness import Daemon, gen_graph, need_binaries, tiny_graph

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))

from lcn_client import Client, LcnError  # noqa: E402

TOKEN = "client-token-0123456789"


def start_daemon(*args):
    d = Daemon("--cpu-workers", "1", "--checkpoint-interval-s", "0.2", "--sse-heartbeat-s",
               "0.2", *args, token=TOKEN)
    tf = os.path.join(d.dir, "token")
    with open(tf, "w") as f:
        f.write(TOKEN + "\n")
    return d.start(extra=["--token-file", tf])


def oracle(layout, graph):
    """tools/oracle/lcn_check.py's report of layout against graph."""
    with tempfile.TemporaryDirectory() as t:
        lp, gp = os.path.join(t, "layout.json"), os.path.join(t, "graph.json")
        for path, doc in ((lp, layout), (gp, graph)):
            with open(path, "w") as f:
                json.dump(doc, f)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "oracle", "lcn_check.py"),
                            lp, "--instance", gp], capture_output=True, text=True)
    return p.returncode, json.loads(p.stdout)


class PythonClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.g = gen_graph("random", 40, seed=5)
        cls.d = start_daemon()
        cls.c = Client(cls.d.addr, token=TOKEN, timeout=30)

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        cls.d.cleanup()
        assert rc == 0, rc

    def running(self, job):
        t_end = time.time() + 60
        while self.c.status(job)["state"] == "queued" and time.time() < t_end:
            time.sleep(0.05)
        self.assertEqual(self.c.status(job)["state"], "running")

    def test_submit_wait_solution(self):
        c = self.c
        job = c.submit(self.g, budget_s=1.0, seed=3, target_k=0, backend="cpu", threads=1,
                       name="python client")
        self.assertRegex(job, r"^j[0-9]{16}$")
        events = []
        final = c.wait(job, progress=events.append, timeout=60)
        self.assertEqual(final["id"], job)
        self.assertEqual(final["state"], "succeeded")
        self.assertEqual(final["name"], "python client")
        self.assertEqual(final["seed"], 3)
        # every event once, in order, up to the last durable one
        self.assertEqual([e["seq"] for e in events], list(range(1, final["progress_seq"] + 1)))
        self.assertEqual([e["state"] for e in events if e["type"] == "state"],
                         ["queued", "running", "succeeded"])
        self.assertTrue(any(e["type"] == "improve" for e in events))
        self.assertEqual(events[-1]["type"], "state")
        sol = c.solution(job)
        self.assertTrue(sol["lcn"]["final"])
        self.assertEqual(sol["lcn"]["job"], job)
        self.assertEqual(sol["lcn"]["K"], final["best"]["K"])
        rc, rep = oracle(sol, self.g)
        self.assertEqual(rc, 0, rep)
        self.assertTrue(rep["valid"])
        for k in ("K", "nK", "Phi", "C"):
            self.assertEqual(rep[k], sol["lcn"][k], k)
        # the last checkpoint event carries the final layout's tuple
        last_ck = [e for e in events if e["type"] == "checkpoint"][-1]
        self.assertEqual(last_ck["best"]["K"], sol["lcn"]["K"])

    def test_cancel_and_list(self):
        c = self.c
        a = c.submit(self.g, budget_s=60)
        self.running(a)
        b = c.submit(tiny_graph(), budget_s=60)  # waits behind a (one worker)
        self.assertEqual(c.status(b)["state"], "queued")
        sb = c.cancel(b)
        self.assertEqual((sb["state"], sb["cancel_requested"]), ("cancelled", True))
        self.assertIsNone(sb["started_at"])
        sa = c.cancel(a)
        self.assertEqual((sa["state"], sa["stop_reason"]), ("cancelled", "cancelled"))
        self.assertEqual(c.cancel(a)["state"], "cancelled")  # idempotent
        ids = [s["id"] for s in c.list()]
        self.assertLess(ids.index(b), ids.index(a))  # newest first
        self.assertEqual(ids, sorted(ids, reverse=True))
        cancelled = [s["id"] for s in c.list(state="cancelled")]
        self.assertIn(a, cancelled)
        self.assertIn(b, cancelled)
        self.assertEqual([s["id"] for s in c.list(limit=1)], [ids[0]])
        self.assertNotIn("telemetry", c.list(limit=1)[0])
        # a queued job cancelled before it ran has no solution
        with self.assertRaises(LcnError) as e:
            c.solution(b)
        self.assertEqual((e.exception.status, e.exception.code), (409, "no_solution"))

    def test_errors(self):
        c = self.c
        with self.assertRaises(LcnError) as e:
            c.status("j0000000000009999")
        err = e.exception
        self.assertEqual((err.status, err.code), (404, "not_found"))
        self.assertEqual(json.loads(err.body)["error"]["message"], err.message)
        self.assertIn("404", str(err))
        for call in (c.solution, c.cancel):
            with self.assertRaises(LcnError) as e:
                call("j0000000000009999")
            self.assertEqual(e.exception.status, 404)
        bad = dict(tiny_graph(), edges=[{"source": 0, "target": 9}])
        with self.assertRaises(LcnError) as e:
            c.submit(bad)
        self.assertEqual((e.exception.status, e.exception.code, e.exception.field),
                         (400, "invalid_field", "graph.edges[0].target"))
        with self.assertRaises(LcnError) as e:
            c.submit(tiny_graph(), backend="gpu")
        self.assertEqual((e.exception.status, e.exception.code), (422, "backend_unavailable"))
        with self.assertRaises(LcnError) as e:
            Client("http://" + self.d.addr, token="wrong").list()
        self.assertEqual((e.exception.status, e.exception.code), (401, "unauthorized"))
        with self.assertRaises(TypeError):
            c.submit(tiny_graph(), thread=2)  # a typo is not sent

    def test_wait_times_out(self):
        c = self.c
        job = c.submit(self.g, budget_s=60)
        seen = []
        t0 = time.monotonic()
        with self.assertRaises(TimeoutError):
            c.wait(job, progress=seen.append, timeout=1.0)
        self.assertLess(time.monotonic() - t0, 10)
        self.assertEqual(seen[0]["state"], "queued")
        self.assertEqual(c.cancel(job)["state"], "cancelled")


class PollingFallback(unittest.TestCase):
    """With max_streams 0 every stream is refused (503 too_many_streams):
    wait pages through the events instead and sees the same ones."""

    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.d = start_daemon("--max-streams", "0")

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        cls.d.cleanup()
        assert rc == 0, rc

    def test_wait_by_pages(self):
        c = Client(self.d.addr, token=TOKEN)
        job = c.submit(gen_graph("random", 30, seed=9), budget_s=0.5)
        events = []
        final = c.wait(job, progress=events.append, timeout=60)
        self.assertEqual(final["state"], "succeeded")
        self.assertEqual([e["seq"] for e in events], list(range(1, final["progress_seq"] + 1)))
        self.assertEqual(c.solution(job)["lcn"]["K"], final["best"]["K"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
