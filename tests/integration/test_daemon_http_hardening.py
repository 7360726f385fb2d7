#!/usr/bin/env python3
"""lcnd's HTTP layer against a hostile client (issue 14), on a real daemon.

Connection limits (item 2): once max_connections has been reached and the
connections closed, new ones are served again (the daemon used to stop
accepting for good); one address that opens more connections than the
limit, or sends its headers a byte at a time (slowloris), cannot starve
the others (max_connections_per_ip, header_timeout_s); idle or slow
connections from many addresses cannot keep a new client waiting either:
the daemon keeps connection_reserve slots free by closing the connections
that have waited longest for a request header (eviction).

Framing (item 5): duplicate or conflicting Content-Length and
Transfer-Encoding are refused with the connection closed.

Paths (item 6): a path that decodes to NUL or to bytes that are not UTF-8
names nothing (404), never 500.

Auth (item 7): with a token, everything but /healthz answers 401 first.

Every client here talks to loopback addresses only, and every loop is
bounded in count and time. No test asserts how fast something happened,
only that it happened within a generous liveness bound (ANSWER seconds for
an answer that would never come on the old code).
"""

import http.client
import json
import os
import socket
import threading
import time
import unittest

from lcnd_harness import Daemon, need_binaries, tiny_graph  # noqa: E402
from lcnd_harness import exchange as harness_exchange  # noqa: E402

ANSWER = 5.0  # seconds a request may take to be answered (liveness only)


def hostport(d):
    host, port = d.addr.rsplit(":", 1)
    return host, int(port)


def connect(d, src=None, timeout=ANSWER):
    """A TCP connection to the daemon, from loopback address src if given."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if src:
        s.bind((src, 0))
    s.connect(hostport(d))
    return s


def get(d, path, timeout=ANSWER, headers=None):
    """GET on a new connection; (status, body). Raises on a timeout."""
    host, port = hostport(d)
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def closed_by_server(s, within):
    """True when the server closes s (EOF or reset) within `within` s."""
    s.settimeout(0.2)
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            if s.recv(4096) == b"":
                return True
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


class Slowloris:
    """n connections from address src, each sending one more header byte
    every `every` seconds and reopened when the server closes it, until
    stop() (or `limit` seconds at most)."""

    def __init__(self, d, src, n, every=0.5, limit=60.0):
        self.d, self.src, self.n, self.every, self.limit = d, src, n, every, limit
        self.stopping = threading.Event()
        self.reopened = 0
        self.t = threading.Thread(target=self.run, daemon=True)

    def open_one(self):
        try:
            s = connect(self.d, self.src, timeout=1.0)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            return s
        except OSError:
            return None

    def run(self):
        socks = [self.open_one() for _ in range(self.n)]
        deadline = time.time() + self.limit
        while not self.stopping.is_set() and time.time() < deadline:
            for i, s in enumerate(socks):
                try:
                    if s is None:
                        raise OSError
                    s.sendall(b"X")
                except OSError:
                    if s is not None:
                        s.close()
                    socks[i] = self.open_one()
                    self.reopened += 1
            self.stopping.wait(self.every)
        for s in socks:
            if s is not None:
                s.close()

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.t.join(timeout=30)


class ConnectionLimit(unittest.TestCase):
    """max_connections 16: reaching it never wedges the daemon. Without
    eviction (connection_reserve 0), so that idle connections really fill
    the limit and new ones wait in the listen backlog (the path of the
    wedge; with eviction the daemon gets there only when every connection
    is busy)."""

    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.d = Daemon("--max-connections", "16", "--connection-reserve", "0").start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        cls.d.cleanup()
        assert rc == 0, rc

    def test_idle_connections_closed(self):
        # the probe of issue 14: fill the limit with idle connections,
        # close them, ask; the old daemon never answered again
        for _ in range(5):
            socks = [connect(self.d) for _ in range(16)]
            # one request through each connection makes sure MHD holds
            # them all (the limit is reached) before they close
            for s in socks:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertIn(b" 200 ", s.recv(4096))
            for s in socks:
                s.close()
            time.sleep(0.2)  # let the daemon see them close (not needed to pass)
            status, _ = get(self.d, "/healthz")
            self.assertEqual(status, 200)

    def test_waiting_connection_admitted_when_one_closes(self):
        socks = [connect(self.d) for _ in range(16)]
        try:
            for s in socks:  # each one answered: MHD holds all 16
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertIn(b" 200 ", s.recv(4096))
            waiting = connect(self.d)  # in the listen backlog
            waiting.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            socks.pop().close()
            waiting.settimeout(ANSWER)
            self.assertIn(b" 200 ", waiting.recv(4096))
            waiting.close()
        finally:
            for s in socks:
                s.close()

    def test_many_short_requests(self):
        # 40 concurrent short requests against a limit of 16, three rounds
        for _ in range(3):
            out = []

            def one():
                try:
                    out.append(get(self.d, "/healthz", timeout=30)[0])
                except OSError as e:
                    out.append(repr(e))

            ts = [threading.Thread(target=one) for _ in range(40)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.assertEqual(out, [200] * 40)
            self.assertEqual(get(self.d, "/healthz")[0], 200)


class Starvation(unittest.TestCase):
    """One address cannot hold every connection: 4 per address out of 16,
    and 2 s to send a request header."""

    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.d = Daemon("--max-connections", "16", "--max-connections-per-ip", "4",
                       "--header-timeout-s", "2").start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        cls.d.cleanup()
        assert rc == 0, rc

    def test_slowloris_from_one_address(self):
        # twice the limit from 127.0.0.2, a header byte every 0.5 s;
        # requests from 127.0.0.1 are answered all along
        with Slowloris(self.d, "127.0.0.2", 32) as sl:
            time.sleep(1.0)
            for _ in range(10):
                status, _ = get(self.d, "/jobs")
                self.assertEqual(status, 200)
                time.sleep(0.3)
            self.assertGreater(sl.reopened, 0)  # the per-address limit closed some
        self.assertEqual(get(self.d, "/healthz")[0], 200)

    def test_idle_connection_closed(self):
        # nothing sent at all: closed by the header timeout
        s = connect(self.d, "127.0.0.3")
        self.assertTrue(closed_by_server(s, 20.0))
        s.close()

    def test_header_never_completed(self):
        # a header line every 0.3 s resets an idle timeout for ever; the
        # header timeout counts from the opening
        s = connect(self.d, "127.0.0.4")
        s.sendall(b"GET /healthz HTTP/1.1\r\n")
        deadline = time.time() + 20.0
        closed = False
        while time.time() < deadline and not closed:
            try:
                s.sendall(b"X-Slow: 1\r\n")
            except OSError:
                closed = True
                break
            closed = closed_by_server(s, 0.3)
        s.close()
        self.assertTrue(closed)

    def test_slow_body_not_cut(self):
        # the header is complete: the header timeout no longer applies
        s = connect(self.d, "127.0.0.5", timeout=30)
        s.sendall(b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 2\r\n\r\n{")
        time.sleep(3.5)  # past the header timeout and the next sweep
        s.sendall(b"}")
        data = b""
        while b"}\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        s.close()
        # answered (the body is parsed: no graph), not cut off
        self.assertTrue(data.startswith(b"HTTP/1.1 400"), data[:200])
        self.assertIn(b'"field":"graph"', data)


SPREAD = ["127.0.0.%d" % i for i in range(2, 10)]  # 8 attacking addresses
QUICK = 2.0  # seconds: an ordinary request while every slot is contested


class Eviction(unittest.TestCase):
    """Attackers from 8 addresses, each within its per-address limit (4),
    together twice max_connections (16): idle or slow connections would
    hold every slot for header_timeout_s (10 s, the default), while new
    clients waited in the backlog. With the default reserve (a quarter of
    16 here: 4) the connections waiting longest for a header are closed as
    soon as fewer slots are free, so an ordinary request from 127.0.0.1 is
    answered within QUICK seconds (a liveness bound: the benchmark
    measures the real figure), and a request in progress is never cut."""

    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.d = Daemon("--max-connections", "16", "--max-connections-per-ip", "4").start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        cls.d.cleanup()
        assert rc == 0, rc

    def timed_get(self, path):
        t0 = time.time()
        status, _ = get(self.d, path, timeout=QUICK)
        return status, time.time() - t0

    def test_idle_from_many_addresses(self):
        # a request in progress (its body is slow) from its own address
        busy = connect(self.d, "127.0.0.10", timeout=30)
        busy.sendall(b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 2\r\n\r\n{")
        for _ in range(3):
            idle = [connect(self.d, src) for src in SPREAD for _ in range(4)]
            try:
                status, took = self.timed_get("/healthz")
                self.assertEqual(status, 200)
                self.assertLess(took, QUICK)
                # the oldest idle connections were closed for it
                self.assertTrue(closed_by_server(idle[0], ANSWER))
            finally:
                for s in idle:
                    s.close()
        busy.sendall(b"}")
        data = b""
        while b"}\n" not in data:
            chunk = busy.recv(4096)
            if not chunk:
                break
            data += chunk
        busy.close()
        self.assertTrue(data.startswith(b"HTTP/1.1 400"), data[:200])  # answered, not cut
        self.assertIn(b'"field":"graph"', data)
        self.assertIn("waited longest for a request header", self.d.log())

    def test_slowloris_from_many_addresses(self):
        # twice the limit, within the per-address limit of every address
        sls = [Slowloris(self.d, src, 4, every=0.5, limit=30.0) for src in SPREAD]
        for sl in sls:
            sl.__enter__()
        try:
            time.sleep(1.0)
            for _ in range(10):
                status, took = self.timed_get("/jobs")
                self.assertEqual(status, 200)
                self.assertLess(took, QUICK)
                time.sleep(0.2)
            self.assertGreater(sum(sl.reopened for sl in sls), 0)  # evicted
        finally:
            for sl in sls:
                sl.__exit__()
        self.assertEqual(get(self.d, "/healthz")[0], 200)


def exchange(d, raw):
    """Sends raw bytes on a new connection and reads until the server
    closes it (or ANSWER seconds pass); returns what came."""
    return harness_exchange(d, raw, ANSWER)


class RefusedFraming:
    """A daemon for the class, and assert_refused: 400 bad_request with the
    connection closed and no second answer (Framing here, the probes')."""

    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.d = Daemon().start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        cls.d.cleanup()
        assert rc == 0, rc

    def assert_refused(self, raw):
        data = exchange(self.d, raw)
        self.assertTrue(data.startswith(b"HTTP/1.1 400 "), data[:300])
        head, _, body = data.partition(b"\r\n\r\n")
        self.assertIn(b"\r\nConnection: close", head)
        self.assertIn(b'"code":"bad_request"', body)
        self.assertNotIn(b"HTTP/1.1 2", data)  # no smuggled answer
        self.assertNotIn(b"HTTP/1.1 405", data)
        self.assertNotIn(b"<not closed>", data)


class Framing(RefusedFraming, unittest.TestCase):
    """Ambiguous framing is 400 with the connection closed: nothing after a
    short body is served as a second request (issue 14, 5)."""

    def test_duplicate_content_length(self):
        smuggled = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        self.assert_refused(b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            b"Content-Length: 2\r\nContent-Length: %d\r\n\r\n{}" %
                            (2 + len(smuggled)) + smuggled)
        self.assert_refused(b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}" + smuggled)

    def test_content_length_and_transfer_encoding(self):
        self.assert_refused(b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                            b"2\r\n{}\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")

    def test_other_transfer_coding(self):
        self.assert_refused(b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            b"Transfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")

    def test_plain_framing_still_served(self):
        data = exchange(self.d, b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                                b"2\r\n{}\r\n0\r\n\r\n")
        self.assertIn(b'"field":"graph"', data)  # parsed: the graph is missing



class Paths(unittest.TestCase):
    """Paths that decode to NUL or to bytes that are not UTF-8 name no job
    and no route: 404 (400 for a query argument), never 500, never another
    resource (issue 14, 6)."""

    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.d = Daemon().start()
        cls.job = cls.d.submit(tiny_graph(), budget_s=0.05)

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        cls.d.cleanup()
        assert rc == 0, rc

    def test_not_found(self):
        for path in ("/jobs/%ff", "/jobs/%00", "/jobs/" + self.job + "%00xyz", "/jobs%00",
                     "/healthz%00", "/jobs/%c0%af", "/jobs/%ed%a0%80", "/nope%ff",
                     "/jobs/" + self.job + "/progress%00", "/jobs/" + self.job + "%ff",
                     "/jobs/j000000000000000%ef%bc%91", "/jobs/J" + self.job[1:],
                     "/jobs/" + self.job + "0", "/jobs/" + self.job[:-1], "/jobs/j+00000000000001"):
            status, body = get(self.d, path)
            self.assertEqual(status, 404, (path, body))
            self.assertEqual(json.loads(body)["error"]["code"], "not_found")

    def test_bad_query_arguments(self):
        for path in ("/jobs?state=%ff", "/jobs?state=%00", "/jobs?before=%00",
                     "/jobs?state=%c3%a9%ff", "/jobs?limit=1%00"):
            status, body = get(self.d, path)
            self.assertEqual(status, 400, (path, body))
            self.assertEqual(json.loads(body)["error"]["code"], "invalid_field")

    def test_exact_id_still_served(self):
        self.assertEqual(get(self.d, "/jobs/" + self.job)[0], 200)



class AuthFirst(unittest.TestCase):
    """With a token, every path but /healthz answers 401 without it, known
    or not, whatever the method: routes cannot be enumerated (issue 14, 7)."""

    TOKEN = "hardening-token-0123456789"

    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.d = Daemon(token=cls.TOKEN)
        tf = os.path.join(cls.d.dir, "token")
        with open(tf, "w") as f:
            f.write(cls.TOKEN + "\n")
        cls.d.start(extra=["--token-file", tf])

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        cls.d.cleanup()
        assert rc == 0, rc

    def test_unauthenticated(self):
        for method, path in (("GET", "/nope"), ("GET", "/admin"), ("PUT", "/jobs"),
                             ("PATCH", "/jobs/j0000000000000001"), ("POST", "/metrics"),
                             ("GET", "/jobs/j0000000000000001/nope"), ("GET", "/jobs/%ff"),
                             ("DELETE", "/version"), ("GET", "/jobs")):
            for auth in ("", "Bearer wrong"):
                r = self.d.request(method, path, headers={"Authorization": auth})
                self.assertEqual(r.status, 401, (method, path, auth, r.body))
                self.assertIsNone(r.header("Allow"), (method, path))
                self.assertEqual(r.json()["error"]["code"], "unauthorized")
                self.assertEqual(r.header("WWW-Authenticate"), "Bearer")

    def test_healthz_open(self):
        self.assertEqual(self.d.request("GET", "/healthz", headers={"Authorization": ""}).status,
                         200)

    def test_authenticated_routing(self):
        self.assertEqual(self.d.request("GET", "/nope").status, 404)
        r = self.d.request("PUT", "/jobs")
        self.assertEqual(r.status, 405)
        self.assertEqual(r.header("Allow"), "POST, GET, HEAD")


if __name__ == "__main__":
    unittest.main(verbosity=2)
