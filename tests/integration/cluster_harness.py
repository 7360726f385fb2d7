"""cluster_harness.py - three lcnd serve processes on one PostgreSQL job
store (issue 20), for test_daemon_cluster.py and test_daemon_cluster_faults.py.

Run under tests/pg/with-postgres.sh (LCN_TEST_PG_URL, LCN_TEST_PG_STOP,
LCN_TEST_PG_START); skipped without it. Which daemon runs a job is read
from the daemons' logs ("job <id>: started on ..."), the only place that
says so.
"""
import os
import subprocess
import time
import unittest

from lcnd_harness import WAIT, Daemon, need_binaries

URL = os.environ.get("LCN_TEST_PG_URL", "")


def need_postgres():
    if not URL:
        raise unittest.SkipTest("LCN_TEST_PG_URL is not set (tests/pg/with-postgres.sh)")


def pg(what):
    """Stops or starts the throwaway server (what: "STOP" or "START")."""
    subprocess.run(os.environ["LCN_TEST_PG_" + what], shell=True, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Cluster:
    """Three daemons (names n0, n1, n2) on the test database."""

    def __init__(self, *args, n=3):
        self.daemons = [Daemon("--store-url", URL, "--node-name", "n%d" % i, "--cpu-workers", "1",
                               "--queue-poll-ms", "100", "--checkpoint-interval-s", "0.3",
                               "--log-level", "debug", *args) for i in range(n)]

    def start(self):
        for d in self.daemons:
            d.start()
        return self

    def cleanup(self):
        for d in self.daemons:
            d.cleanup()

    def runner(self, job, timeout=None, exclude=()):
        """The daemon that started job last (among the live ones)."""
        deadline = time.time() + (timeout or WAIT)
        needle = "job %s: started on" % job
        while time.time() < deadline:
            for d in self.daemons:
                if d not in exclude and d.proc.poll() is None and needle in d.log():
                    return d
            time.sleep(0.05)
        raise AssertionError("no daemon started job %s" % job)

    def others(self, d):
        return [x for x in self.daemons if x is not d and x.proc.poll() is None]


class ClusterCase(unittest.TestCase):
    def setUp(self):
        need_binaries(self)
        need_postgres()
