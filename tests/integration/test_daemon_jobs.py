#!/usr/bin/env python3
"""lcnd jobs: cancelling queued and running jobs (idempotently), the queue
limit (429 with Retry-After), and the Server-Sent-Events progress stream
(ids, event types, Last-Event-ID, heartbeats, end at the terminal state)."""

import http.client
import json
import time
import unittest

from lcnd_harness import Daemon, check_solution, gen_graph, need_binaries, tiny_graph


def sse_open(d, job, last_event_id=None, timeout=60):
    host, port = d.addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    h = {"Accept": "text/event-stream"}
    if last_event_id is not None:
        h["Last-Event-ID"] = str(last_event_id)
    conn.request("GET", "/jobs/%s/progress" % job, headers=h)
    r = conn.getresponse()
    return conn, r


def sse_read_all(r):
    """Reads SSE frames until the server ends the stream. Returns (events,
    comments): events as dicts with id/event/data."""
    events, comments, cur = [], [], {}
    while True:
        line = r.readline()
        if not line:
            return events, comments
        line = line.decode().rstrip("\n")
        if line == "":
            if cur:
                events.append(cur)
            cur = {}
        elif line.startswith(":"):
            comments.append(line)
        else:
            k, _, v = line.partition(": ")
            cur[k] = v


class Jobs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.g = gen_graph("random", 40, seed=3)
        cls.d = Daemon("--cpu-workers", "1", "--max-queued", "3", "--retry-after-s", "7",
                       "--sse-heartbeat-s", "0.2", "--checkpoint-interval-s", "0.2").start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        cls.d.cleanup()
        assert rc == 0, rc

    def drain(self):
        for j in self.d.get("/jobs?limit=500").json()["jobs"]:
            if j["state"] in ("queued", "running"):
                self.d.request("DELETE", "/jobs/" + j["id"])

    def test_cancel_running_and_queued(self):
        d = self.d
        self.drain()
        a = d.submit(self.g, budget_s=60)
        d.wait(a, ("running",))
        # a cancel before the engine validated its start ends the job without
        # a solution (docs/ENGINE.md); this test wants one, so it waits for
        # the first validated checkpoint (on a loaded machine the start takes
        # longer)
        t_end = time.time() + 30
        while d.get("/jobs/%s/solution" % a).status != 200 and time.time() < t_end:
            time.sleep(0.05)
        self.assertEqual(d.get("/jobs/%s/solution" % a).status, 200)
        b = d.submit(self.g, budget_s=60)  # waits behind a (one worker)
        self.assertEqual(d.status(b)["state"], "queued")
        # cancel the queued one: it never starts
        r = d.request("DELETE", "/jobs/" + b)
        self.assertEqual(r.status, 200)
        sb = r.json()
        self.assertEqual(sb["state"], "cancelled")
        self.assertIsNone(sb["started_at"])
        self.assertTrue(sb["cancel_requested"])
        # cancel the running one: the answer comes once it is cancelled
        t0 = time.time()
        r = d.request("DELETE", "/jobs/" + a)
        self.assertEqual(r.status, 200)
        sa = r.json()
        self.assertEqual(sa["state"], "cancelled")
        self.assertEqual(sa["stop_reason"], "cancelled")
        self.assertLess(time.time() - t0, 30)
        self.assertLess(sa["elapsed_s"], 60)
        # the best layout found so far stays available and valid
        sol, _ = check_solution(self, d, a, self.g)
        self.assertTrue(sol["lcn"]["final"])
        # idempotent
        for j in (a, b):
            r = d.request("DELETE", "/jobs/" + j)
            self.assertEqual(r.status, 200)
            self.assertEqual(r.json()["state"], "cancelled")
        self.assertEqual(d.get("/jobs/%s/solution" % b).status, 409)
        events, page = d.events(b)
        self.assertEqual([e.get("state") for e in events], ["queued", "cancelled"])
        self.assertTrue(page["done"])
        # the worker is free again
        c = d.submit(tiny_graph(), budget_s=0.1)
        self.assertEqual(d.wait(c)["state"], "succeeded")

    def test_queue_full(self):
        d = self.d
        self.drain()
        a = d.submit(self.g, budget_s=60)
        d.wait(a, ("running",))
        queued = [d.submit(tiny_graph(), budget_s=0.1) for _ in range(3)]
        r = d.request("POST", "/jobs", body={"graph": tiny_graph()})
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json()["error"]["code"], "queue_full")
        self.assertEqual(r.header("Retry-After"), "7")
        d.request("DELETE", "/jobs/" + a)
        for j in queued:
            self.assertEqual(d.wait(j)["state"], "succeeded")
        # room again
        self.assertEqual(d.wait(d.submit(tiny_graph(), budget_s=0.05))["state"], "succeeded")

    def test_sse_stream(self):
        d = self.d
        self.drain()
        job = d.submit(self.g, budget_s=1.0)
        conn, r = sse_open(d, job)
        self.assertEqual(r.status, 200)
        self.assertTrue(r.getheader("Content-Type").startswith("text/event-stream"))
        events, comments = sse_read_all(r)
        conn.close()
        self.assertTrue(events)
        ids = [int(e["id"]) for e in events]
        self.assertEqual(ids, list(range(1, len(ids) + 1)))
        for e in events:
            data = json.loads(e["data"])
            self.assertEqual(data["seq"], int(e["id"]))
            self.assertEqual(data["type"], e["event"])
        last = json.loads(events[-1]["data"])
        self.assertEqual(last["type"], "state")
        self.assertEqual(last["state"], "succeeded")
        s = d.status(job)
        self.assertEqual(ids[-1], s["progress_seq"])
        # the stream and the polling endpoint agree
        polled, _ = d.events(job)
        self.assertEqual([json.loads(e["data"]) for e in events], polled)
        # Last-Event-ID resumes after that event; a finished job's stream ends at once
        conn, r = sse_open(d, job, last_event_id=ids[-3])
        rest, _ = sse_read_all(r)
        conn.close()
        self.assertEqual([int(e["id"]) for e in rest], ids[-2:])

    def test_sse_heartbeat_while_queued(self):
        d = self.d
        self.drain()
        a = d.submit(self.g, budget_s=60)
        d.wait(a, ("running",))
        b = d.submit(tiny_graph(), budget_s=0.1)
        conn, r = sse_open(d, b)
        # a queued job's stream shows its first event, then keepalives
        seen_keepalive = False
        frames = 0
        deadline = time.time() + 30
        while time.time() < deadline and not seen_keepalive:
            line = r.readline().decode()
            if line.startswith(": keepalive"):
                seen_keepalive = True
            frames += 1
        self.assertTrue(seen_keepalive)
        d.request("DELETE", "/jobs/" + a)
        events, _ = sse_read_all(r)  # ends once b has run
        conn.close()
        self.assertEqual(json.loads(events[-1]["data"])["state"], "succeeded")

    def test_sse_vanishing_clients(self):
        """Clients that disconnect mid-stream leave nothing behind."""
        d = self.d
        self.drain()
        job = d.submit(self.g, budget_s=1.5)
        for _ in range(20):
            conn, r = sse_open(d, job)
            r.readline()
            conn.sock.close() if conn.sock else None
            conn.close()
        s = d.wait(job)
        self.assertEqual(s["state"], "succeeded")
        # streams are reaped within a heartbeat or two
        deadline = time.time() + 30
        while time.time() < deadline:
            text = d.get("/metrics").body.decode()
            n = [l for l in text.splitlines() if l.startswith("lcn_sse_streams ")]
            if n and n[0].endswith(" 0"):
                break
            time.sleep(0.1)
        self.assertTrue(n[0].endswith(" 0"), n)


if __name__ == "__main__":
    unittest.main(verbosity=2)
