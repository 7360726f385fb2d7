#!/usr/bin/env python3
"""Three lcnd on one PostgreSQL job store while the database goes away
(issue 20, database faults). The server is stopped (every connection
dropped) and started again:

* for less than the lease: every daemon turns not ready (/readyz 503 with
  the reason), POST is refused with 503, GETs are still answered from
  memory, the running job goes on with its progress kept in memory and
  committed once the database is back (not resumed: resumes 0), nothing
  acknowledged with 201 is lost;
* for longer than the lease: the daemon that runs the job stops the run
  before its lease can expire (no two daemons run it at once), and once
  the database is back the job is resumed from its last checkpoint.

Run under tests/pg/with-postgres.sh; skipped without it.
"""
import re
import time
import unittest

from cluster_harness import Cluster, ClusterCase, pg
from lcnd_harness import check_solution, gen_graph


def wait_ready(tc, d, ready, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = d.get("/readyz")
        if (r.status == 200) == ready:
            return r
        time.sleep(0.05)
    tc.fail("%s never turned %s" % (d.addr, "ready" if ready else "not ready"))


def log_times(log, needle):
    """The times (seconds of the day, UTC) of the log lines with needle."""
    out = []
    for line in log.splitlines():
        if needle in line:
            h, m, s = re.match(r"\S+T(\d+):(\d+):([\d.]+)Z", line).groups()
            out.append(int(h) * 3600 + int(m) * 60 + float(s))
    return out


class DatabaseFaults(ClusterCase):
    def test_outage_shorter_than_the_lease(self):
        c = Cluster("--lease-s", "15").start()
        try:
            a, b, _ = c.daemons
            g = gen_graph("random", 60, seed=11)
            done = [d.submit(g, budget_s=0.2) for d in c.daemons]
            job = a.submit(g, budget_s=7)
            b.wait(job, ("running",))
            r = c.runner(job)
            x = c.others(r)[0]
            x.wait(job, ("running",))  # its copy has caught up before the outage
            pg("STOP")
            t0 = time.time()
            try:
                for d in c.daemons:
                    ready = wait_ready(self, d, False).json()
                    self.assertEqual(ready["store"], "unhealthy")
                    self.assertTrue(ready["reason"])
                refused = x.request("POST", "/jobs", body={"graph": g, "budget_s": 1})
                self.assertEqual(refused.status, 503, refused.body)
                self.assertEqual(x.status(job)["state"], "running")  # from memory
                time.sleep(max(0, 3 - (time.time() - t0)))
            finally:
                pg("START")
            for d in c.daemons:
                wait_ready(self, d, True)
            s = x.wait(job, ("succeeded",))
            self.assertEqual(s["resumes"], 0)  # the run went on through the outage
            self.assertIn("the database cannot be reached", r.log())
            self.assertNotIn("no lease renewal", r.log())
            events, _ = x.events(job)
            self.assertEqual([e["seq"] for e in events], list(range(1, len(events) + 1)))
            check_solution(self, x, job, g)
            for j in done:  # acknowledged with 201 before the outage: all there
                self.assertEqual(x.wait(j)["state"], "succeeded")
        finally:
            c.cleanup()

    def test_outage_longer_than_the_lease(self):
        c = Cluster("--lease-s", "2").start()
        try:
            a, b, _ = c.daemons
            g = gen_graph("random", 60, seed=13)
            job = a.submit(g, budget_s=8)
            b.wait(job, ("running",))
            r = c.runner(job)
            deadline = time.time() + 30
            while not any(e["type"] == "checkpoint" for e in r.events(job)[0]):
                self.assertLess(time.time(), deadline)
                time.sleep(0.1)
            pg("STOP")
            try:
                deadline = time.time() + 30
                while "no lease renewal" not in r.log():
                    self.assertLess(time.time(), deadline)
                    time.sleep(0.1)
                time.sleep(1)
            finally:
                pg("START")
            s = b.wait(job, ("succeeded",), timeout=60)
            self.assertGreaterEqual(s["resumes"], 1)
            self.assertIn("job %s: its run stopped; the result is not stored" % job, r.log())
            # the run stopped before any daemon started it again
            stopped = log_times(r.log(), "job %s: its run stopped" % job)[0]
            restarted = [t for d in c.daemons for t in log_times(d.log(), "job %s: claimed" % job)
                         if t > stopped - 0.001]
            self.assertTrue(restarted, "nobody claimed it again")
            b.wait(job, ("succeeded",))
            check_solution(self, b, job, g)
        finally:
            c.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
