#!/usr/bin/env python3
"""lcnd under load: 50 concurrent clients each submit a job, poll it to the
end, read its progress and solution; no request fails, every job succeeds,
every solution is valid, and the daemon answers pollers while jobs run.
Budgets of 0.3 s: long enough for a first validated layout of these small
graphs on a loaded machine (at 0.05 s some jobs ended without one when the
test ran beside others on two busy cores), short enough for 50 jobs on two
workers to take seconds."""

import threading
import unittest

from lcnd_harness import Daemon, check_solution, gen_graph, need_binaries

CLIENTS = 50


class Load(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.graphs = [gen_graph("random", 20 + (i % 5) * 4, seed=100 + i) for i in range(5)]
        cls.d = Daemon("--cpu-workers", "2", "--max-queued", str(CLIENTS),
                       "--max-connections", "256", "--checkpoint-interval-s", "0.1").start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        cls.d.cleanup()
        assert rc == 0, rc

    def test_concurrent_clients(self):
        d = self.d
        results = [None] * CLIENTS
        errors = []

        def client(i):
            try:
                g = self.graphs[i % len(self.graphs)]
                job = d.submit(g, budget_s=0.3 + 0.02 * (i % 4), seed=i, name="c%d" % i)
                polls = 0
                while True:
                    s = d.status(job)
                    polls += 1
                    if s["state"] in ("succeeded", "failed", "cancelled", "interrupted"):
                        break
                    r = d.get("/jobs/%s/progress?after=0&limit=10" % job)
                    if r.status != 200:
                        raise AssertionError("progress %d" % r.status)
                    lst = d.get("/jobs?limit=5")
                    if lst.status != 200:
                        raise AssertionError("list %d" % lst.status)
                events, page = d.events(job)
                r = d.get("/jobs/%s/solution" % job)
                results[i] = (job, s, events, page, r.status, polls)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append("client %d: %r" % (i, e))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        ids = set()
        for i, (job, s, events, page, sol_status, polls) in enumerate(results):
            ids.add(job)
            self.assertEqual(s["state"], "succeeded", s)
            self.assertEqual(s["name"], "c%d" % i)
            self.assertEqual(s["seed"], i)
            self.assertTrue(page["done"])
            self.assertEqual(events[-1]["state"], "succeeded")
            self.assertEqual(sol_status, 200)
        self.assertEqual(len(ids), CLIENTS)
        # a sample of the solutions checked by the oracle
        for i in range(0, CLIENTS, 10):
            job = results[i][0]
            check_solution(self, d, job, self.graphs[i % len(self.graphs)])
        metrics = d.get("/metrics").body.decode()
        for line in metrics.splitlines():
            if line.startswith("lcn_http_responses_total"):
                code = int(line.split('code="')[1].split('"')[0])
                self.assertLess(code, 400, line)
        self.assertIn('lcn_jobs{state="succeeded"} %d' % CLIENTS, metrics)


if __name__ == "__main__":
    unittest.main(verbosity=2)
