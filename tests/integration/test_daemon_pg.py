#!/usr/bin/env python3
"""lcnd serve with the PostgreSQL job store (store_url; issue 20, first part).

Run under tests/pg/with-postgres.sh, which starts a throwaway server and
sets LCN_TEST_PG_URL (skipped without it). What the daemon keeps in the
database survives a restart from another state directory; a second daemon
on the same database shares it (tests/integration/test_daemon_cluster.py
has three); a bad URL is refused at start.
"""
import os
import unittest

from lcnd_harness import Daemon, check_solution, tiny_graph

URL = os.environ.get("LCN_TEST_PG_URL", "")


class PostgresStore(unittest.TestCase):
    def setUp(self):
        if not URL:
            raise unittest.SkipTest("LCN_TEST_PG_URL is not set (tests/pg/with-postgres.sh)")

    def test_jobs_live_in_the_database(self):
        a = Daemon("--store-url", URL)
        b = Daemon("--store-url", URL)
        try:
            a.start()
            graph = tiny_graph()
            first = a.submit(graph, budget_s=0.3)
            a.wait(first)
            check_solution(self, a, first, graph)
            # several daemons share one database: the second sees the job
            # while the first runs
            b.start()
            self.assertEqual(b.get("/jobs/" + first).json()["state"], "succeeded")
            self.assertEqual(b.stop(), 0)
            self.assertEqual(a.stop(), 0)
            # another state directory, the same database: the job is there
            b.start()
            listed = [j["id"] for j in b.get("/jobs?limit=50").json()["jobs"]]
            self.assertEqual(listed, [first])
            self.assertEqual(b.get("/jobs/" + first).json()["state"], "succeeded")
            check_solution(self, b, first, graph)
            self.assertEqual(b.get("/jobs/%s/progress" % first).status, 200)
            second = b.submit(graph, budget_s=0.2)
            self.assertGreater(second, first)  # ids are never reused
            b.wait(second)
            self.assertEqual(b.stop(), 0)
        finally:
            a.cleanup()
            b.cleanup()

    def test_bad_url_refused(self):
        d = Daemon("--store-url", "mysql://nope")
        try:
            self.assertNotEqual(d.start(expect_fail=True), 0)
            self.assertIn("store_url: expected a postgresql:// URL", d.read_stderr())
        finally:
            d.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
