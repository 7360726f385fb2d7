"""test_daemon_probe3.py - regression tests for what the third reliability
probe of 2026-12-02 found (a hostile client, an unlucky operator): each test
is the probe's minimal reproducer. Generated graphs only; bounds on time are
liveness bounds for a loaded machine.
"""

import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lcnd_harness import WAIT, Daemon, gen_graph, need_binaries, tiny_graph  # noqa: E402


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


class DeepPathLeak(unittest.TestCase):
    """A path of more than 16 segments (routing splits at most 16) leaked
    the 16 segments already copied, before auth: without a token, 2,000
    such requests of 20 x 1,000 bytes grew the daemon by 32 MB."""

    def test_deep_paths_do_not_grow_the_daemon(self):
        need_binaries(self)
        d = Daemon(token="t" * 32)
        self.addCleanup(d.cleanup)
        tf = os.path.join(d.dir, "token")
        with open(tf, "w") as f:
            f.write(d.token)
        d.start(extra=["--token-file", tf])
        host, port = d.addr.rsplit(":", 1)
        path = "/" + "/".join(["a" * 1000] * 20)

        def burst(n):
            for _ in range(n):
                s = socket.create_connection((host, int(port)), timeout=WAIT)
                s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                           % path).encode())
                head = s.recv(64)
                while s.recv(65536):
                    pass
                s.close()
                self.assertIn(b" 401 ", head)

        burst(200)  # the allocator's pools settle
        before = rss_kib(d.proc.pid)
        burst(2000)
        grown = rss_kib(d.proc.pid) - before
        self.assertLess(grown, 8 * 1024, "RSS grew by %d KiB" % grown)
        self.assertEqual(d.stop(), 0)


def threads_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError("no Threads for %d" % pid)


class FaultKnobsRefused(unittest.TestCase):
    """The CPU engine's fault-injection knobs were open to every client
    through solver.tuning: fault_stall_ms=600000 made a run deaf to its
    deadline and cancel, so the daemon abandoned it with its thread and
    memory; 10 such jobs (2,000 nodes, 64 replicas) left 14 more threads
    and 57 MB more RSS for 10 minutes, held a worker 2.7 s each, and made
    the next SIGTERM exit with status 4. They are refused now (400 at
    solver.tuning) unless test_engine_faults is set."""

    def test_refused_by_default(self):
        need_binaries(self)
        d = Daemon("--cpu-workers", "1", "--shutdown-timeout-s", "1")
        self.addCleanup(d.cleanup)
        d.start()
        g = gen_graph("random", 200, seed=1)
        job = d.submit(tiny_graph(), budget_s=0.2, solver={"tuning": "p_global=0.1"})
        self.assertEqual(d.wait(job)["state"], "succeeded")  # the pools are up
        before = threads_of(d.proc.pid)
        for knob in ("fault_stall_ms=60000", "p_global=0.1,fault-stall-ms=60000",
                     "fault_final_miss=1"):
            r = d.request("POST", "/jobs", body={"graph": g, "budget_s": 0.3,
                                                 "solver": {"tuning": knob}})
            self.assertEqual(r.status, 400, r.body)
            e = r.json()["error"]
            self.assertEqual((e["code"], e["field"]), ("invalid_field", "solver.tuning"), e)
            self.assertIn("fault", e["message"])
        self.assertEqual(threads_of(d.proc.pid), before)
        self.assertEqual(d.stop(), 0)


class ThreadsSetReplicas(unittest.TestCase):
    """Admission judged solver.replicas only, but without it the CPU engine
    runs two replicas per thread of solver.threads: {"threads": 1024} ran
    2,048 replicas that {"replicas": 2048} is refused (on 2,000 nodes and a
    5 s budget: 'take at least 8.20 s to set up'; it was accepted and grew
    the daemon to 566 MB; on 30,000 nodes, 9.2 GiB of states against the
    4 GiB a job may hold, accepted with budget_s 3600)."""

    def test_threads_alone_judged_like_replicas(self):
        need_binaries(self)
        d = Daemon("--cpu-workers", "1")
        self.addCleanup(d.cleanup)
        d.start()
        g = gen_graph("random", 2000, seed=1)
        for solver, field in (({"replicas": 2048}, "solver.replicas"),
                              ({"threads": 1024}, "solver.threads")):
            r = d.request("POST", "/jobs", body={"graph": g, "budget_s": 5, "solver": solver})
            self.assertEqual(r.status, 422, r.body)
            e = r.json()["error"]
            self.assertEqual((e["code"], e["field"]), ("too_large", field), e)
            self.assertIn("2048 replicas", e["message"])
        # what fits is still admitted, and a request without solver fields
        # keeps the daemon's own cpu_threads
        for solver in ({"threads": 2}, {}):
            job = d.submit(tiny_graph(), budget_s=0.2, solver=solver)
            self.assertEqual(d.wait(job)["state"], "succeeded")
        self.assertEqual(d.stop(), 0)


class SlowReadersOfPictures(unittest.TestCase):
    """Every GET /jobs/<id>/solution.svg (or /solution) rendered its whole
    answer and MHD held it until the client read it: clients that ask and
    do not read made the daemon hold any number of them (40 slow readers of
    a 20,000-node picture, 4.2 MB each: RSS +206 MB; max_body_total_bytes
    bounded request bodies only). Answers now have a budget of the same size:
    past it a solution or picture larger than 64 KiB is answered 503 busy
    with Retry-After; uploads and small answers are not held up."""

    def test_answers_held_are_bounded(self):
        need_binaries(self)
        d = Daemon("--cpu-workers", "1", "--max-body-bytes", "5000000",
                   "--max-body-total-bytes", "10000000")
        self.addCleanup(d.cleanup)
        d.start()
        g = gen_graph("large", 20000, seed=1)
        job = d.submit(g, budget_s=2)
        self.assertEqual(d.wait(job)["state"], "succeeded")
        # larger than what the kernel's socket buffers take off the daemon
        size = len(d.get("/jobs/%s/solution.svg" % job).body)
        self.assertGreater(size, 4000000)
        host, port = d.addr.rsplit(":", 1)
        socks = []
        for _ in range(10):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.settimeout(WAIT)
            s.connect((host, int(port)))
            s.sendall(("GET /jobs/%s/solution.svg HTTP/1.1\r\nHost: x\r\n\r\n" % job).encode())
            socks.append(s)
        self.addCleanup(lambda: [s.close() for s in socks])
        statuses = [s.recv(12)[9:12] for s in socks]  # the status line only
        self.assertIn(b"200", statuses)
        self.assertIn(b"503", statuses)  # all ten were held before
        # while they hold the answers' budget: uploads have their own, and a
        # small answer (at most 64 KiB) always passes (the review's finding:
        # one stuck reader of a large picture refused everyone's solutions)
        small = d.submit(gen_graph("planted", 30, seed=2), budget_s=0.5)
        self.assertEqual(d.wait(small)["state"], "succeeded")
        r = d.get("/jobs/%s/solution" % small)
        self.assertEqual(r.status, 200, r.body[:200])
        for s in socks:
            s.close()
        deadline = time.time() + WAIT
        while time.time() < deadline:  # the held answers are given back
            r = d.get("/jobs/%s/solution.svg" % job)
            if r.status == 200:
                break
            self.assertEqual(r.json()["error"]["code"], "busy")
            self.assertEqual(r.header("Retry-After"), "1")
            time.sleep(0.1)
        self.assertEqual(r.status, 200)
        self.assertEqual(d.stop(), 0)


class AbsoluteFormTarget(unittest.TestCase):
    """A request target in absolute form (RFC 9112 3.2.2: a server must
    accept it) was answered 404 whatever it named."""

    def test_absolute_form_is_routed(self):
        need_binaries(self)
        d = Daemon()
        self.addCleanup(d.cleanup)
        d.start()
        host, port = d.addr.rsplit(":", 1)

        def status(target):
            with socket.create_connection((host, int(port)), timeout=WAIT) as s:
                s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                           % (target, d.addr)).encode())
                data = b""
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    data += b
            return int(data.split(b" ", 2)[1]), data

        code, data = status("http://%s/healthz" % d.addr)
        self.assertEqual(code, 200, data[:200])
        code, _ = status("HTTPS://%s/version" % d.addr)
        self.assertEqual(code, 200)
        code, data = status("http://%s/jobs/nosuchjob" % d.addr)
        self.assertEqual(code, 404)
        self.assertIn(b"not_found", data)
        code, _ = status("http://%s" % d.addr)  # no path: "/"
        self.assertNotEqual(code, 500)
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
