"""test_daemon_probe4.py - regression tests for what the fourth reliability
probe of 2026-12-02 found (a stuck store at shutdown, a hostile server
under lcnctl): each test is the probe's minimal reproducer. Generated
graphs only; bounds on time are liveness bounds for a loaded machine.
"""

import os
import sqlite3
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lcnd_harness import WAIT, Daemon, gen_graph, need_binaries  # noqa: E402


class ShutdownWithStuckStore(unittest.TestCase):
    """A SIGTERM while the store cannot commit waits out shutdown_timeout_s
    and then goes on without the last commits. Every engine had returned,
    but the daemon exited 4 ("2 engine(s) did not stop in time"): past the
    shutdown deadline the worker pool did not wait at all for its idle
    threads to see the quit flag, and counted each one still waking up as
    an engine left behind (measured on a 3 MB tmpfs filled by the jobs:
    status 4 every time)."""

    def test_idle_workers_are_not_engines_left_behind(self):
        need_binaries(self)
        d = Daemon("--cpu-workers", "2", "--shutdown-timeout-s", "1",
                   "--checkpoint-interval-s", "0.2")
        self.addCleanup(d.cleanup)
        d.start()
        job = d.submit(gen_graph(nodes=60), budget_s=60)
        d.wait(job, states=("running",))
        # the write lock held from outside: every commit of the daemon
        # waits its busy timeout (5 s) and fails, as on a full disk
        c = sqlite3.connect(os.path.join(d.dir, "jobs.db"), timeout=10, isolation_level=None)
        self.addCleanup(c.close)
        c.execute("BEGIN IMMEDIATE")
        t0 = time.time()
        rc = d.stop(timeout=WAIT)
        self.assertLess(time.time() - t0, WAIT)
        self.assertEqual(rc, 0, d.log()[-2000:])
        self.assertNotIn("did not stop in time", d.log())
        c.execute("ROLLBACK")
        # nothing was lost that a client was told: the job resumes
        d.start()
        self.assertIn(d.status(job)["state"], ("queued", "running"))
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
