#!/usr/bin/env python3
"""lcnd and its state directory when things go wrong (issue 14): a state
directory that cannot be used, job ids after retention emptied the store,
commits that fail while clients wait (POST, DELETE), and a damaged database
at start."""

import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import threading
import time
import unittest

from lcnd_harness import Daemon, gen_graph, need_binaries, tiny_graph, LCND, WAIT


def run_lcnd(state_dir, log_file, wrapper=()):
    """Starts lcnd serve on state_dir and expects it to give up at once;
    returns (exit status, stderr)."""
    cmd = list(wrapper) + [LCND, "serve", "--listen", "127.0.0.1:0", "--state-dir", state_dir,
                           "--log-file", log_file, "--backend", "cpu"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=WAIT)
    return p.returncode, p.stderr


class StateDir(unittest.TestCase):
    """Only a lock held by another process is "in use by another lcnd";
    every other failure names the path and the system's reason (exit 1)."""

    @classmethod
    def setUpClass(cls):
        need_binaries(cls)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lcnd-statedir-")
        self.log = os.path.join(self.tmp, "lcnd.log")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def refused(self, state_dir, reason, wrapper=()):
        rc, err = run_lcnd(state_dir, self.log, wrapper)
        if rc == 77:
            self.skipTest("cannot set up the case here: " + err)
        self.assertEqual(rc, 1, err)
        self.assertIn("state_dir %s" % state_dir, err)
        self.assertIn(reason, err)
        self.assertNotIn("in use by another lcnd", err)

    def test_not_a_directory(self):
        f = os.path.join(self.tmp, "file")
        open(f, "w").close()
        self.refused(f, "Not a directory")
        self.refused(os.path.join(f, "sub"), "Not a directory")

    def test_lock_file_is_a_directory(self):
        d = os.path.join(self.tmp, "state")
        os.makedirs(os.path.join(d, "lcnd.lock"))
        self.refused(d, "Is a directory")

    def test_permission_denied(self):
        d = os.path.join(self.tmp, "state")
        os.mkdir(d, 0o500)
        os.chmod(self.tmp, 0o755)
        wrapper = ()
        if os.geteuid() == 0:  # root writes anyway: run as nobody
            if not shutil.which("setpriv"):
                self.skipTest("running as root without setpriv")
            wrapper = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
            self.log = "/dev/null"
        self.refused(d, "Permission denied", wrapper)

    def test_read_only_file_system(self):
        # a read-only bind mount in a private mount namespace (needs root)
        d = os.path.join(self.tmp, "state")
        os.mkdir(d)
        if os.geteuid() != 0 or not shutil.which("unshare"):
            self.skipTest("needs root and unshare for a read-only mount")
        script = ('mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" || exit 77; '
                  'exec "$@"')
        wrapper = ("unshare", "-m", "--propagation", "private", "sh", "-c", script, d)
        self.refused(d, "Read-only file system", wrapper)

    def test_in_use(self):
        a = Daemon()
        try:
            a.start()
            rc, err = run_lcnd(a.dir, self.log)
            self.assertEqual(rc, 1, err)
            self.assertIn("state_dir %s is in use by another lcnd" % a.dir, err)
            self.assertEqual(a.stop(), 0)
        finally:
            a.cleanup()


class Ids(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_binaries(cls)

    def test_ids_survive_retention_and_restarts(self):
        """Retention deletes every job (retain_days about 1.7 s), the daemon
        restarts with an empty store: the next job still gets a new id, and
        the old ids stay unknown (issue 14: j0000000000000001 was issued
        again and GET on the old id returned the new job)."""
        d = Daemon("--retain-days", "0.00002")
        try:
            d.start()
            ids = [d.submit(tiny_graph(), budget_s=0.05) for _ in range(3)]
            for j in ids:
                d.wait(j)
            self.assertEqual(d.stop(), 0)
            time.sleep(2)
            d.start()  # retention at start deletes all three
            deadline = time.time() + WAIT
            while d.get("/jobs").json()["jobs"] and time.time() < deadline:
                time.sleep(0.05)
            self.assertEqual(d.get("/jobs").json()["jobs"], [])
            self.assertEqual(d.stop(), 0)
            d.start()  # nothing left to derive the next id from
            new = d.submit(tiny_graph(), budget_s=0.05)
            self.assertGreater(new, ids[-1])
            for j in ids:
                self.assertEqual(d.get("/jobs/" + j).status, 404, j)
            self.assertEqual(d.stop(), 0)
        finally:
            d.cleanup()


class StoreLock:
    """Holds SQLite's write lock on a daemon's jobs.db from outside (a
    BEGIN IMMEDIATE on another connection): every commit of the daemon
    waits its busy timeout (5 s) and fails, as on a full disk, without a
    test hook in the daemon. The BEGIN itself waits up to 10 s for a commit
    of the daemon in progress."""

    def __init__(self, db):
        self.c = sqlite3.connect(db, timeout=10, isolation_level=None)
        self.c.execute("BEGIN IMMEDIATE")

    def release(self):
        self.c.execute("ROLLBACK")
        self.c.close()


def in_thread(fn, *args, **kw):
    """Runs fn in a thread; returns a callable that joins it and gives its
    result (or raises its exception)."""
    out = {}

    def run():
        try:
            out["r"] = fn(*args, **kw)
        except Exception as e:  # noqa: BLE001 - handed to the caller
            out["e"] = e
    t = threading.Thread(target=run)
    t.start()

    def join():
        t.join()
        if "e" in out:
            raise out["e"]
        return out["r"]
    return join


class FailedCommits(unittest.TestCase):
    """A commit that fails answers the clients parked on it: a POST gets
    503 (the job is not created, then or later), a DELETE gets 503 (the
    cancel is withdrawn, the job goes on); both with Retry-After. Issue 14:
    neither got an answer while the disk was full, the job appeared after
    space returned and the cancel was lost."""

    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.g = gen_graph("random", 60, seed=7)

    def unavailable(self, r, what):
        self.assertEqual(r.status, 503, r.body)
        self.assertIsNotNone(r.header("Retry-After"))
        e = r.json()["error"]
        self.assertEqual(e["code"], "not_ready")
        self.assertIn(what, e["message"])

    def test_post_and_delete_answered_while_commits_fail(self):
        d = Daemon("--cpu-workers", "1", "--telemetry-interval-s", "0.2")
        try:
            d.start()
            long = d.submit(self.g, budget_s=120)
            d.wait(long, ("running",))
            lock = StoreLock(os.path.join(d.dir, "jobs.db"))
            try:
                post = in_thread(d.request, "POST", "/jobs", body={"graph": tiny_graph()},
                                 timeout=40)
                delete = in_thread(d.request, "DELETE", "/jobs/" + long, timeout=40)
                self.unavailable(post(), "not created")
                self.unavailable(delete(), "not cancelled")
                # while the store fails, both are refused at once
                self.assertEqual(d.get("/readyz").status, 503)
                self.unavailable(d.request("POST", "/jobs", body={"graph": tiny_graph()}),
                                 "unhealthy")
                self.unavailable(d.request("DELETE", "/jobs/" + long), "not cancelled")
            finally:
                lock.release()
            deadline = time.time() + WAIT
            while d.get("/readyz").status != 200 and time.time() < deadline:
                time.sleep(0.05)
            self.assertEqual(d.get("/readyz").status, 200)
            # the refused POST created nothing, now or later; its id stays unused
            gone = "j%016d" % (int(long[1:]) + 1)
            self.assertEqual([j["id"] for j in d.get("/jobs").json()["jobs"]], [long])
            self.assertEqual(d.get("/jobs/" + gone).status, 404)
            # the refused DELETE was withdrawn: the job runs on
            s = d.status(long)
            self.assertEqual(s["state"], "running")
            self.assertFalse(s["cancel_requested"])
            later = d.submit(tiny_graph(), budget_s=0.05)
            self.assertGreater(later, gone)
            r = d.request("DELETE", "/jobs/" + long)
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json()["state"], "cancelled")
            d.wait(later)
            self.assertEqual(d.stop(), 0)
            d.start()
            self.assertEqual(d.get("/jobs/" + gone).status, 404)
            self.assertEqual(d.status(long)["state"], "cancelled")
            self.assertEqual(sorted(j["id"] for j in d.get("/jobs").json()["jobs"]),
                             [long, later])
            self.assertGreater(d.submit(tiny_graph(), budget_s=0.05), later)
            self.assertEqual(d.stop(), 0)
        finally:
            d.cleanup()

    def test_durable_cancel_request_honoured_at_start(self):
        """A queued job whose request to cancel committed but whose cancel
        did not (the store failed in between) is cancelled at the next
        start, not run."""
        d = Daemon("--cpu-workers", "1")
        try:
            d.start()
            blocker = d.submit(self.g, budget_s=120)
            d.wait(blocker, ("running",))
            queued = d.submit(tiny_graph(), budget_s=0.05)
            self.assertEqual(d.status(queued)["state"], "queued")
            d.kill9()
            c = sqlite3.connect(os.path.join(d.dir, "jobs.db"))
            (status,) = c.execute("SELECT status FROM jobs WHERE id = ?",
                                  (int(queued[1:]),)).fetchone()
            st = json.loads(status)
            st["cancel_requested"] = True
            c.execute("UPDATE jobs SET status = ? WHERE id = ?",
                      (json.dumps(st), int(queued[1:])))
            c.commit()
            c.close()
            d.start()
            s = d.status(queued)
            self.assertEqual(s["state"], "cancelled")
            self.assertEqual(s["stop_reason"], "cancelled")
            d.request("DELETE", "/jobs/" + blocker)
            self.assertEqual(d.stop(), 0)
        finally:
            d.cleanup()


class DamagedStore(unittest.TestCase):
    """A damaged jobs.db is refused at start (exit 1, the reason on
    stderr), before the daemon reports ready."""

    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.g = gen_graph("random", 120, seed=3)

    def setUp(self):
        # a store spanning many pages: finished jobs with their requests
        self.d = Daemon()
        self.d.start()
        for j in [self.d.submit(self.g, budget_s=0.05) for _ in range(12)]:
            self.d.wait(j)
        self.assertEqual(self.d.stop(), 0)
        self.db = os.path.join(self.d.dir, "jobs.db")

    def tearDown(self):
        self.d.cleanup()

    def refused(self, state_dir, reason):
        b = Daemon(state_dir=state_dir)
        rc = b.start(expect_fail=True)
        err = b.read_stderr()
        self.assertEqual(rc, 1, err)
        self.assertIn(os.path.join(state_dir, "jobs.db"), err)
        self.assertIn(reason, err)

    def test_corrupt_page_in_the_middle(self):
        copy = tempfile.mkdtemp(prefix="lcnd-test-copy-")
        try:
            shutil.copy(self.db, copy)
            path = os.path.join(copy, "jobs.db")
            c = sqlite3.connect(path)
            pages = c.execute("PRAGMA page_count").fetchone()[0]
            size = c.execute("PRAGMA page_size").fetchone()[0]
            c.close()
            self.assertGreater(pages, 20)
            with open(path, "r+b") as f:
                f.seek((pages // 2 - 1) * size)
                f.write(b"\x5a" * size)
            self.refused(copy, "the database is damaged (quick_check: ")
        finally:
            shutil.rmtree(copy, ignore_errors=True)
        # the original is fine
        self.d.start()
        self.assertEqual(len(self.d.get("/jobs").json()["jobs"]), 12)
        self.assertEqual(self.d.stop(), 0)

    def test_missing_jobs_table(self):
        c = sqlite3.connect(self.db)
        c.execute("DROP TABLE jobs")
        c.commit()
        c.close()
        self.refused(self.d.dir, "table jobs is missing")


if __name__ == "__main__":
    unittest.main(verbosity=2)
