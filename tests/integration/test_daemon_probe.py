"""test_daemon_probe.py - regression tests for what the reliability probe of
2026-12-02 found (a hostile client, an unlucky operator): each test is the
probe's minimal reproducer. Generated graphs only; bounds on time are
liveness bounds for a loaded machine.
"""

import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lcnd_harness import LCND, WAIT, Daemon, gen_graph, need_binaries, tiny_graph  # noqa: E402


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


class DamagedCheckpoint(unittest.TestCase):
    """A stored layout whose length does not match its job's graph (bytes
    changed inside a value pass SQLite's quick_check) was rendered anyway:
    the solution read past the end of the layout and served 200 with
    coordinates from beyond it. It answers 500 now, as a request that does
    not parse does."""

    def test_short_layout_is_refused(self):
        need_binaries(self)
        g = gen_graph("random", 40, seed=2)
        d = Daemon("--cpu-workers", "1")
        self.addCleanup(d.cleanup)
        d.start()
        job = d.submit(g, budget_s=0.2)
        self.assertEqual(d.wait(job)["state"], "succeeded")
        self.assertEqual(d.get("/jobs/%s/solution" % job).status, 200)
        self.assertEqual(d.stop(), 0)
        db = sqlite3.connect(os.path.join(d.dir, "jobs.db"))
        db.execute("UPDATE checkpoints SET n = 1, layout = zeroblob(8)")
        db.commit()
        db.close()
        d.start()
        for path in ("/jobs/%s/solution", "/jobs/%s/solution.svg"):
            r = d.get(path % job)
            self.assertEqual(r.status, 500, r.body[:300])
            self.assertIn("1 points, the graph 40 nodes", r.json()["error"]["message"])
        r = d.request("POST", "/jobs", body={"graph": g, "budget_s": 0.2, "init_from": job})
        self.assertEqual(r.status, 500, r.body[:300])
        self.assertEqual(d.get("/healthz").status, 200)
        self.assertEqual(d.stop(), 0)


class TokenFile(unittest.TestCase):
    """A token file was read into 4,095 bytes and as a C string: a longer
    token was cut (every client, sending the whole token, got 401), and a
    NUL byte ended the token (its prefix before the NUL opened the API).
    Both are refused at start now, like a token too short."""

    def start_with(self, content):
        d = Daemon()
        self.addCleanup(d.cleanup)
        tf = os.path.join(d.dir, "token")
        with open(tf, "wb") as f:
            f.write(content)
        return d, d.start(extra=["--token-file", tf], expect_fail=True)

    def test_long_and_binary_tokens_refused(self):
        need_binaries(self)
        for content, why in ((b"a" * 5000 + b"\n", "longer than 4095 bytes"),
                             (b"abcdefghijklmnop\0secret-part\n", "visible ASCII"),
                             (b"abcdefghijklmnop\x01\n", "visible ASCII")):
            d, rc = self.start_with(content)
            self.assertEqual(rc, 2, content[:40])
            self.assertIn(why, d.read_stderr())


class HeadOnAStream(unittest.TestCase):
    """HEAD /jobs/<id>/progress with Accept: text/event-stream answered the
    stream's header and then the chunked terminator "0\\r\\n\\r\\n", a body
    a HEAD answer must not have: on a keep-alive connection (a proxy's
    pool) the next answer was read from "0" on, a desync. (The fifth
    probe: the fix answered "Content-Length: 0", which a HEAD answer must
    not say of a GET that streams; it now closes the connection after the
    header, without the chunked coding, so nothing can be read as the
    next answer: test_daemon_probe5 HeadOfAStreamLikeItsGet.)"""

    def test_head_answer_has_no_body(self):
        need_binaries(self)
        d = Daemon("--cpu-workers", "1")
        self.addCleanup(d.cleanup)
        d.start()
        job = d.submit(tiny_graph(), budget_s=0.1)
        d.wait(job)
        host, port = d.addr.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=WAIT) as s:
            s.sendall(("HEAD /jobs/%s/progress HTTP/1.1\r\nHost: x\r\n"
                       "Accept: text/event-stream\r\n\r\n" % job).encode())
            head = b""
            while b"\r\n\r\n" not in head:
                head += s.recv(4096)
            self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)
            rest = head.split(b"\r\n\r\n", 1)[1]
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                rest += chunk
        self.assertIn(b"\r\nConnection: close\r\n", head)
        self.assertEqual(rest, b"")  # no body, and the connection closed
        metrics = d.get("/metrics").body.decode()
        self.assertIn("\nlcn_sse_streams 0\n", metrics)
        self.assertEqual(d.stop(), 0)


class BareGraphQueryArguments(unittest.TestCase):
    """POST /jobs?budget_s=1&budget_s=3600 ran with the first value (a proxy
    or a client library may take the last: JSON bodies refuse a duplicate
    key for that reason), and ?name=%00, which the HTTP layer leaves
    encoded, became the name '%00' although a query argument with %00 is
    invalid (API.md). Both are 400 at the argument now."""

    def test_duplicate_and_nul_arguments_refused(self):
        need_binaries(self)
        d = Daemon("--cpu-workers", "1")
        self.addCleanup(d.cleanup)
        d.start()
        for query, field in (("budget_s=1&budget_s=3600", "budget_s"),
                             ("seed=1&name=a&seed=2", "seed"),
                             ("name=x%00y", "name")):
            r = d.request("POST", "/jobs?" + query, body=tiny_graph())
            self.assertEqual(r.status, 400, (query, r.body))
            e = r.json()["error"]
            self.assertEqual((e["code"], e["field"]), ("invalid_field", field), e)
        r = d.request("POST", "/jobs?budget_s=0.1&name=ok", body=tiny_graph())
        self.assertEqual(r.status, 201, r.body)
        self.assertEqual(d.wait(r.json()["id"])["name"], "ok")
        self.assertEqual(d.stop(), 0)


class LockFileDeleted(unittest.TestCase):
    """The state directory's lock was only a flock on lcnd.lock: once that
    file was deleted (an operator clearing a "stale" lock, a tmpfiles
    rule), a second lcnd created a new one, locked it and opened the same
    jobs.db. Both recovered and ran the same jobs and issued the same ids
    (the second's first insert failed its UNIQUE constraint, and its store
    stayed unhealthy for good). The directory itself is locked too now."""

    def test_second_daemon_refused(self):
        need_binaries(self)
        a = Daemon("--cpu-workers", "1")
        self.addCleanup(a.cleanup)
        a.start()
        os.unlink(os.path.join(a.dir, "lcnd.lock"))
        b = Daemon("--cpu-workers", "1", state_dir=a.dir)
        b.port_file = os.path.join(a.dir, "b.port")
        b.log_file = os.path.join(a.dir, "b.log")
        self.addCleanup(b.cleanup)
        self.assertEqual(b.start(expect_fail=True), 1)
        self.assertIn("is in use by another lcnd", b.read_stderr())
        job = a.submit(tiny_graph(), budget_s=0.1)
        self.assertEqual(a.wait(job)["state"], "succeeded")
        self.assertEqual(a.stop(), 0)


class LogInjection(unittest.TestCase):
    """A job's name (or a bare graph's ?name=) went into the text log as
    sent: a name with a newline wrote a second, forged log line (any
    level, any job), and one with ESC wrote terminal escape sequences to
    whoever tails the log. Control bytes are written as \\xNN now."""

    def test_name_cannot_forge_a_line(self):
        need_binaries(self)
        d = Daemon("--cpu-workers", "1")
        self.addCleanup(d.cleanup)
        d.start()
        forged = "2026-12-02T00:00:00.000Z error job j0000000000000099: FORGED"
        job = d.submit(tiny_graph(), budget_s=0.1, name="x\n" + forged + "\x1b[31m")
        d.wait(job)
        r = d.request("POST", "/jobs?budget_s=0.1&name=y%0D%0A" + forged.replace(" ", "%20"),
                      body=tiny_graph())
        self.assertEqual(r.status, 201, r.body)
        d.wait(r.json()["id"])
        self.assertEqual(d.stop(), 0)
        log = d.log()
        for line in log.splitlines():
            self.assertFalse(line.startswith(forged), line)
        self.assertNotIn("\x1b", log)
        self.assertIn("name x\\x0a" + forged + "\\x1b[31m", log)
        self.assertIn("name y\\x0d\\x0a" + forged, log)


class StalePortFile(unittest.TestCase):
    """The port file of an earlier run stayed in place while a new lcnd
    started (recovery, a quick_check of a large store): a script waiting
    for the file read the old port at once. It is removed as soon as the
    new lcnd owns the state directory, before the long part of a start."""

    def test_stale_port_file_removed_at_start(self):
        need_binaries(self)
        d = Daemon()
        self.addCleanup(d.cleanup)
        with open(d.port_file, "w") as f:
            f.write("127.0.0.1:1\n")
        # refused after taking the state directory: a non-loopback address
        # without a token (not through d.start, which removes the file)
        p = subprocess.run([LCND, "serve", "--listen", "0.0.0.0:0", "--state-dir", d.dir,
                            "--port-file", d.port_file, "--log-file", d.log_file],
                           capture_output=True, timeout=WAIT)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertFalse(os.path.exists(d.port_file))


class BodiesHeldTogether(unittest.TestCase):
    """max_body_bytes bounded one request's body only: concurrent uploads
    (128 connections per address, 64 MiB each) could make the daemon hold
    gigabytes, and four large bodies parsing at once took every thread of
    the pool that also serves solutions. Now the bodies all live requests
    hold are bounded (max_body_total_bytes, 503 busy past it) and at most
    API_PARSES bodies parse at once, the rest in arrival order."""

    def _open_upload(self, d, total, sent):
        host, port = d.addr.rsplit(":", 1)
        s = socket.create_connection((host, int(port)), timeout=WAIT)
        s.sendall(("POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   "Content-Length: %d\r\n\r\n" % total).encode())
        s.sendall(b" " * sent)
        return s

    @staticmethod
    def _answer(s):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return data

    def test_budget_and_waiting_parses(self):
        need_binaries(self)
        d = Daemon("--cpu-workers", "1", "--max-body-bytes", "1500000",
                   "--max-body-total-bytes", "2000000")
        self.addCleanup(d.cleanup)
        d.start()
        a = self._open_upload(d, 1400000, 1300000)
        self.addCleanup(a.close)
        time.sleep(0.3)  # the daemon holds A's 1.3 MB
        body = b'{"graph": ' + (b" " * 900000) + ('%s, "budget_s": 0.1}' % json.dumps(tiny_graph())).encode()
        r = d.request("POST", "/jobs", body=body)
        self.assertEqual(r.status, 503, r.body[:300])
        self.assertEqual(r.json()["error"]["code"], "busy")
        self.assertEqual(r.header("Retry-After"), "1")
        a.sendall(b" " * 100000)  # A ends: whitespace only, not JSON
        self.assertIn(b" 400 ", self._answer(a).split(b"\r\n", 1)[0])
        a.close()
        r = d.request("POST", "/jobs", body=body)  # A's bytes were given back
        self.assertEqual(r.status, 201, r.body[:300])
        # more parses than slots, two clients leaving while theirs wait: every
        # other one is answered, and the daemon keeps serving
        socks = [self._open_upload(d, 200000, 199990) for _ in range(8)]  # 1.6 MB together
        for s in socks:
            s.sendall(b" " * 7 + b"[1]")
        socks[3].close()
        socks[5].close()
        for i, s in enumerate(socks):
            if i in (3, 5):
                continue
            self.assertIn(b" 400 ", self._answer(s).split(b"\r\n", 1)[0])
            s.close()
        job = d.submit(tiny_graph(), budget_s=0.1)
        self.assertEqual(d.wait(job)["state"], "succeeded")
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
