"""test_daemon_probe.py - regression tests for what the reliability probe of
2026-12-02 found (a hostile client, an unlucky operator): each test is the
probe's minimal reproducer. Generated graphs only; bounds on time are
liveness bounds for a loaded machine.
"""

import os
import re
import sqlite3
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lcnd_harness import Daemon, gen_graph, need_binaries  # noqa: E402


class ShutdownKeepsEngineTime(unittest.TestCase):
    """A run stopped by SIGTERM before it validated a layout (its start
    phase) kept no engine time: the job's elapsed_s stayed 0 and the
    restarted daemon gave it its whole budget again, at every restart."""

    def test_elapsed_kept_across_sigterm_during_start(self):
        need_binaries(self)
        dense = gen_graph("dense", 2000, seed=3)  # a start phase of seconds
        d = Daemon("--cpu-workers", "1")
        self.addCleanup(d.cleanup)
        d.start()
        job = d.submit(dense, budget_s=30)
        d.wait(job, ("running",))
        time.sleep(0.8)  # inside the start phase
        self.assertEqual(d.stop(), 0)
        d.start()
        s = d.status(job)
        self.assertGreaterEqual(s["elapsed_s"], 0.6, s)
        left = [float(x) for x in re.findall(r"\(([0-9.]+) s of budget left\)", d.log())]
        self.assertEqual(len(left), 2, d.log())
        self.assertLessEqual(left[1], 30 - 0.6, d.log())
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
