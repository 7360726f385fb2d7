"""test_daemon_probe4.py - regression tests for what the fourth reliability
probe of 2026-12-02 found (a stuck store at shutdown, a hostile server
under lcnctl): each test is the probe's minimal reproducer. Generated
graphs only; bounds on time are liveness bounds for a loaded machine.
"""

import os
import resource
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lcnd_harness import LCNCTL, WAIT, Daemon, gen_graph, need_binaries, tiny_graph  # noqa: E402
from lcnd_harness import daemon_with_finished_job, listings_of_named_job  # noqa: E402


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


class SolutionOfJobDeletedByRetention(unittest.TestCase):
    """A solution (or picture) of a finished job asked for just before
    retention deleted the job is rendered on the thread pool, which reads
    the job's rows from the store: when they were gone by then, the answer
    was 409 no_solution ("no validated layout exists for this job"; 8 of
    12 requests in the probe), or 503 not_ready when they went between the
    layout and the request. Either told the client to come back later for
    a job that no longer exists; the API's answer is 404."""

    def test_render_after_retention_is_404(self):
        need_binaries(self)
        d = Daemon("--retain-jobs", "1", "--cpu-workers", "1")
        self.addCleanup(d.cleanup)
        d.start()
        old = d.submit(gen_graph(nodes=5000), budget_s=3)
        if d.wait(old)["state"] != "succeeded":
            # a slow machine or a sanitizer build: no layout within the budget
            self.skipTest("the 5,000-node job found no layout in 3 s here")
        # the next job to finish makes retention delete the old one, while
        # the renders of the old one's picture queue on the thread pool
        new = d.submit(gen_graph(nodes=30), budget_s=1)
        d.wait(new, states=("running",))
        with ThreadPoolExecutor(16) as ex:
            fs = [ex.submit(d.get, "/jobs/%s/solution.svg" % old) for _ in range(12)]
            fs += [ex.submit(d.get, "/jobs/%s/solution" % old) for _ in range(4)]
            d.wait(new)
            got = [f.result() for f in fs]
        self.assertEqual(d.get("/jobs/" + old).status, 404)
        for r in got:
            self.assertIn(r.status, (200, 404), r.body[:200])
            if r.status == 404:
                self.assertEqual(r.json()["error"]["code"], "not_found")
        self.assertEqual(d.stop(), 0)


class StateDirReplaced(unittest.TestCase):
    """A state directory renamed away and made anew under a running daemon
    (or its jobs.db deleted): the daemon went on committing into the old
    file, which no later start reads, and answered POST /jobs 201 and
    /readyz ready; a second daemon then started on the same path (the old
    directory's lock no longer covers it) and issued j0000000000000001
    again. The store now counts as failing once its file is no longer
    the one it opened: 503 and not ready, so nothing is acknowledged that
    a restart would not find."""

    def test_commits_refused_after_replacement(self):
        need_binaries(self)
        d = Daemon("--shutdown-timeout-s", "1")
        self.addCleanup(d.cleanup)
        self.addCleanup(shutil.rmtree, d.dir + ".old", True)
        d.start()
        a = d.submit(tiny_graph(), budget_s=0.2)
        self.assertEqual(d.wait(a)["state"], "succeeded")
        os.rename(d.dir, d.dir + ".old")
        os.makedirs(d.dir)
        r = d.request("POST", "/jobs", body={"graph": tiny_graph(), "budget_s": 0.2})
        self.assertEqual(r.status, 503, r.body[:300])
        self.assertEqual(r.json()["error"]["code"], "not_ready")
        r = d.get("/readyz")
        self.assertEqual(r.status, 503, r.body)
        self.assertEqual(r.json()["store"], "unhealthy")
        self.assertEqual(d.get("/jobs/" + a).status, 200)  # reads go on
        self.assertEqual(d.stop(), 0)
        with open(os.path.join(d.dir + ".old", "lcnd.log")) as f:
            self.assertIn("was removed or replaced", f.read())


class LcnctlShowsNamesSafely(unittest.TestCase):
    """A job's name is any submitter's text (128 bytes without NUL); the
    log escapes its control bytes, but `lcnctl list` and `lcnctl get`
    printed it raw, so a name could retitle an operator's terminal, clear
    it or forge lines of the listing (ESC, CR, LF measured coming through).
    They now print control bytes as \\xNN."""

    def test_control_bytes_escaped(self):
        d, out = listings_of_named_job(self, "\x1b]0;pwned\x07\x1b[2J\r\nFAKE")
        for cmd, stdout in out:
            for bad in (b"\x1b", b"\x07", b"\r"):
                self.assertNotIn(bad, stdout, cmd)
            self.assertIn(b"\\x1b]0;pwned\\x07\\x1b[2J\\x0d\\x0aFAKE", stdout, cmd)
        self.assertEqual(d.stop(), 0)


class EndlessServer:
    """A server on a loopback port that answers every request 200 with an
    application/json body that never ends (chunked): as fast as it can, or
    (trickle) one byte every 0.2 s."""

    def __init__(self, trickle=False):
        self.trickle = trickle
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(8)
        self.port = self.s.getsockname()[1]
        self.done = threading.Event()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.done.is_set():
            try:
                c, _ = self.s.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(c,), daemon=True).start()

    def answer(self, c):
        try:
            c.recv(65536)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n")
            chunk = b"[" if self.trickle else b"[" * (1 << 20)
            while not self.done.is_set():
                c.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                if self.trickle:
                    time.sleep(0.2)
        except OSError:
            pass
        finally:
            c.close()

    def close(self):
        self.done.set()
        self.s.close()


def limit_memory():
    # 1 GiB of address space: lcnctl holding an endless answer dies of it
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def sanitized(binary):
    """Whether binary runs under AddressSanitizer, which reserves terabytes
    of address space and cannot start under limit_memory."""
    p = subprocess.run(["ldd", binary], capture_output=True, text=True)
    return "libasan" in p.stdout


class LcnctlEndlessAnswer(unittest.TestCase):
    """lcnctl held a whole answer in memory however large it grew: against
    a server sending an endless body, `lcnctl get` reached 2.8 GB of
    resident memory in 15 s and went on until memory ran out. An answer is
    now cut past 64 MiB (2 GiB for a solution) with exit status 4."""

    def test_endless_answer_is_cut(self):
        need_binaries(self)
        srv = EndlessServer()
        self.addCleanup(srv.close)
        limit = None if sanitized(LCNCTL) else limit_memory
        for cmd in (["get", "j0000000000000001"], ["list"], ["wait", "j0000000000000001"]):
            p = subprocess.run([LCNCTL, "--server", "127.0.0.1:%d" % srv.port] + cmd,
                               capture_output=True, text=True, timeout=WAIT,
                               preexec_fn=limit)
            self.assertEqual(p.returncode, 4, (cmd, p.returncode, p.stderr[-500:]))
            self.assertIn("larger than 64 MiB", p.stderr)



class PythonClientEndlessAnswer(unittest.TestCase):
    """lcn_client read a whole answer (resp.read()) and a whole stream line
    however large: the same endless server grew it until memory ran out.
    It now raises ConnectionError past 64 MiB."""

    def test_endless_answer_raises(self):
        srv = EndlessServer()
        self.addCleanup(srv.close)
        pkg = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients",
                           "python")
        code = ("import sys; from lcn_client import Client\n"
                "try:\n    Client('127.0.0.1:%d').status('j0000000000000001')\n"
                "except ConnectionError as e:\n    print(e); sys.exit(4)\n" % srv.port)
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=WAIT, preexec_fn=limit_memory,
                           env=dict(os.environ, PYTHONPATH=pkg))
        self.assertEqual(p.returncode, 4, p.stderr[-500:])
        self.assertIn("larger than 64 MiB", p.stdout)


class LcnctlTrickledAnswer(unittest.TestCase):
    """A server that sends a byte of its answer now and then never trips
    lcnctl's stall rule (no byte for 60 s): at 2 bytes a second, `lcnctl
    get` was still waiting after 100 s, and would have for as long as the
    server went on. An answer's body must now come within 10 s plus its
    size at 64 KiB/s of its header (exit status 4 otherwise)."""

    def test_trickled_answer_is_cut(self):
        need_binaries(self)
        srv = EndlessServer(trickle=True)
        self.addCleanup(srv.close)
        t0 = time.time()
        p = subprocess.run([LCNCTL, "--server", "127.0.0.1:%d" % srv.port, "get",
                            "j0000000000000001"], capture_output=True, text=True, timeout=45)
        self.assertEqual(p.returncode, 4, p.stderr[-500:])
        self.assertIn("less than 64 KiB/s", p.stderr)
        self.assertLess(time.time() - t0, 45)


class AcceptWeightZero(unittest.TestCase):
    """`Accept: text/event-stream;q=0` (RFC 9110: not acceptable) was taken
    as asking for a progress stream: any listing of the type counted."""

    def test_q_zero_is_not_a_stream(self):
        d, job = daemon_with_finished_job(self, budget_s=0.2)

        def ctype(accept):
            r = d.request("HEAD", "/jobs/%s/progress" % job, headers={"Accept": accept})
            self.assertEqual(r.status, 200)
            return dict((k.lower(), v) for k, v in r.headers).get("content-type", "")

        for accept in ("text/event-stream;q=0", "text/event-stream; q=0.0",
                       "application/json, text/event-stream;q=0", "text/event-streamx"):
            with self.subTest(accept=accept):
                self.assertIn("application/json", ctype(accept))
        for accept in ("text/event-stream", "TEXT/Event-Stream; q=0.5",
                       "application/json;q=0.1, text/event-stream"):
            with self.subTest(accept=accept):
                self.assertIn("text/event-stream", ctype(accept))
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
