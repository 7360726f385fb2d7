"""lcnctl's HTTP commands against a scripted fake server (no daemon needed):
usage errors, exit statuses for every class of server answer, error
messages with the API's code, message and field path, the bearer token,
request bodies and query strings, Server-Sent Events split at awkward
places, reconnects that resume from the last event, the polling fallback,
and an unreachable server for every command. LCNCTL names the binary."""

import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

LCNCTL = os.environ.get("LCNCTL", "")
WAIT = 60

GRAPH = {"nodes": [{"id": 0, "x": 0, "y": 0}, {"id": 1, "x": 4, "y": 4},
                   {"id": 2, "x": 0, "y": 4}, {"id": 3, "x": 4, "y": 0}],
         "edges": [{"source": 0, "target": 1}, {"source": 2, "target": 3}],
         "width": 8, "height": 8}
SOLUTION = dict(GRAPH, nodes=[{"id": 0, "x": 0, "y": 0}, {"id": 1, "x": 4, "y": 4},
                              {"id": 2, "x": 0, "y": 4}, {"id": 3, "x": 1, "y": 5}],
                lcn={"job": "j1", "final": True, "K": 0, "nK": 2, "Phi": 0, "C": 0,
                     "elapsed_s": 1.0, "validated": True})


def status(job, state, **kw):
    s = {"id": job, "name": None, "state": state, "created_at": "2026-01-01T00:00:00.000Z",
         "started_at": None, "finished_at": None, "budget_s": 2.0, "elapsed_s": 0.5, "seed": 1,
         "target_k": 3, "stop_at_target": False, "backend_requested": "auto", "backend": "cpu",
         "evaluator": "grid-delta", "graph": {"n": 4, "m": 2, "width": 8, "height": 8},
         "best": None, "time_to_target_s": None, "stop_reason": None, "error": None,
         "progress_seq": 0, "telemetry": None}
    s.update(kw)
    return s


def ev(seq, typ, el, **kw):
    e = {"seq": seq, "type": typ, "elapsed_s": el}
    e.update(kw)
    return e


BEST = [{"K": 5, "nK": 1, "Phi": 30, "C": 9}, {"K": 3, "nK": 2, "Phi": 20, "C": 8},
        {"K": 2, "nK": 1, "Phi": 10, "C": 7}]
EVENTS = [ev(1, "state", 0.0, state="running"),
          ev(2, "improve", 0.01, stage="start", best=BEST[0]),
          ev(3, "improve", 0.25, stage="anneal", best=BEST[1]),
          ev(4, "improve", 0.5, stage="anneal", best=BEST[2]),
          ev(5, "checkpoint", 1.0, best=BEST[2]),
          ev(6, "state", 2.0, state="succeeded")]
FINAL = status("j1", "succeeded", elapsed_s=2.0, best=BEST[2], time_to_target_s=0.25,
               stop_reason="deadline", progress_seq=6)


SLOW = "j0000000000000007"  # a job that keeps running
LONG = "j0000000000000042"  # j1's events under an id of the API's length

# bench through the fake: one good run, one whose layout is invalid (V2), one
# whose status tuple disagrees with the recount of its (valid) layout
BAD_SOLUTION = dict(SOLUTION, nodes=[{"id": 0, "x": 0, "y": 0}, {"id": 1, "x": 4, "y": 4},
                                     {"id": 2, "x": 0, "y": 4}, {"id": 3, "x": 0, "y": 4}])
OK_BEST = {"K": 0, "nK": 2, "Phi": 0, "C": 0}
BENCH = {"jgood": (OK_BEST, SOLUTION), "jbad": (OK_BEST, BAD_SOLUTION),
         "jmism": (BEST[2], SOLUTION)}


def sse_bytes(events, crlf=False):
    nl = "\r\n" if crlf else "\n"
    out = ": lcnd progress stream" + nl + nl
    for e in events:
        out += ": keepalive" + nl + nl
        out += "id: %d%sevent: %s%sdata: %s%s%s" % (e["seq"], nl, e["type"], nl,
                                                  json.dumps(e), nl, nl)
    return out.encode()


class Fake(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log = []  # (method, path, headers, body)
    busy_seen = 0  # POSTs named "busy N" so far (setUp resets)
    lock = threading.Lock()
    connections = {}  # job -> SSE connections seen

    def log_message(self, *a):
        pass

    def send(self, code, body, ctype="application/json", headers=()):
        if not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def error(self, code, ecode, msg, field=None, headers=()):
        e = {"code": ecode, "message": msg}
        if field:
            e["field"] = field
        self.send(code, {"error": e}, headers=headers)

    def record(self, body=None):
        with Fake.lock:
            Fake.log.append((self.command, self.path, dict(self.headers), body))

    def stream(self, chunks, close_early=False):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for c in chunks:
            self.wfile.write(c)
            self.wfile.flush()
            time.sleep(0.02)
        self.close_connection = True

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        self.record(body)
        name = (json.loads(body).get("name") or "") if self.path == "/jobs" else ""
        if name.startswith("busy "):  # "busy N": 429 to the first N posts of the test
            with Fake.lock:
                Fake.busy_seen += 1
                refuse = Fake.busy_seen <= int(name.split()[1])
            if refuse:
                return self.error(429, "queue_full", "the queue holds 2 jobs, the limit",
                                  headers=[("Retry-After", "1")])
            return self.send(201, {"id": "j1", "state": "queued"})
        if name == "slow":
            return self.send(201, {"id": SLOW, "state": "queued"})
        if self.path == "/jobs" and b'"name":"bench' in body:
            name = json.loads(body)["name"].split()[1]
            self.send(201, {"id": "j" + name, "state": "queued"})
        elif self.path == "/jobs":
            self.send(201, {"id": "j1", "state": "queued", "links": {"self": "/jobs/j1"}},
                      headers=[("Location", "/jobs/j1")])
        else:
            self.error(404, "not_found", "no route")

    def do_DELETE(self):
        self.record()
        job = self.path.split("/")[2]
        if job == "r503":
            return self.error(503, "not_ready", "the job store is unhealthy: the job was not "
                              "cancelled", headers=[("Retry-After", "1")])
        if job == "j1":
            self.send(200, status("j1", "running", cancel_requested=True))
        elif job == "done":
            self.send(200, status("done", "succeeded"))
        else:
            self.error(404, "not_found", "no job '%s'" % job)

    def do_GET(self):
        self.record()
        u = urlparse(self.path)
        q = parse_qs(u.query)
        parts = u.path.strip("/").split("/")
        sse = "text/event-stream" in self.headers.get("Accept", "")
        if parts == ["version"]:
            return self.send(200, {"version": "fake", "commit": "none", "cuda": False,
                                   "backends": ["cpu"]})
        if parts == ["readyz"]:
            return self.send(503, {"ready": False, "store": "ok", "gpu": "absent"})
        if parts == ["jobs"]:
            return self.send(200, {"jobs": [FINAL, status("j0", "queued")],
                                   "next_before": "j0"})
        if parts[0] != "jobs" or len(parts) < 2:
            return self.error(404, "not_found", "no route")
        job = parts[1]
        # scripted error answers for GET /jobs/<code>
        answers = {
            "e400": (400, "invalid_field", "unknown node 99", "graph.edges[12].source"),
            "e401": (401, "unauthorized", "token missing or wrong", None),
            "e404": (404, "not_found", "no job 'e404'", None),
            "e409": (409, "no_solution", "no validated layout exists yet", None),
            "e413": (413, "too_large", "body larger than 1024 bytes", None),
            "e422": (422, "limit_exceeded", "99999 s exceeds the limit", "budget_s"),
            "e429": (429, "queue_full", "the queue is full", None),
            "e500": (500, "internal", "a bug", None),
            "e503": (503, "shutting_down", "the daemon is stopping", None),
        }
        if job == "r503":  # not ready, come back in a second
            return self.error(503, "not_ready", "the job store is unhealthy",
                              headers=[("Retry-After", "1")])
        if job == SLOW:
            if len(parts) == 2:
                return self.send(200, status(SLOW, "running", budget_s=60.0, target_k=None,
                                             progress_seq=1))
            return self.hold_stream() if sse else self.send(
                200, {"events": [], "next": 1, "state": "running", "done": False})
        if job in answers:
            code, ecode, msg, field = answers[job]
            hdr = [("Retry-After", "7")] if code == 429 else []
            return self.error(code, ecode, msg, field, headers=hdr)
        if job == "html":
            return self.send(502, "<html><body>Bad Gateway</body></html>", ctype="text/html")
        if job == "notjson":
            return self.send(200, "this is not json", ctype="text/plain")
        if job == "secret":
            if self.headers.get("Authorization") != "Bearer s3cret":
                return self.error(401, "unauthorized", "token missing or wrong")
            return self.send(200, status("secret", "queued"))
        if job in BENCH:
            best, sol = BENCH[job]
            if len(parts) == 2:
                return self.send(200, status(job, "succeeded", best=best, elapsed_s=1.0,
                                             stop_reason="deadline", progress_seq=2,
                                             target_k=None))
            if parts[2] == "solution":
                return self.send(200, sol)
            evs = [ev(1, "state", 0.0, state="running"), ev(2, "state", 1.0, state="succeeded")]
            return self.stream([sse_bytes(evs)]) if sse else self.send(
                200, {"events": evs, "next": 2, "state": "succeeded", "done": True})
        if len(parts) == 2:
            if job in ("j1", "nosse", "broken", "ignores", LONG):
                return self.send(200, FINAL if self.seen_progress(job) else
                                 status(job, "running", progress_seq=1))
            if job == "failed":
                return self.send(200, status("failed", "failed", stop_reason="error",
                                             error={"code": "gpu_fatal",
                                                    "message": "unrecoverable GPU error"}))
            return self.error(404, "not_found", "no job '%s'" % job)
        if parts[2] == "solution":
            if job == "j1":
                return self.send(200, SOLUTION)
            if job == "garbage":
                return self.send(200, {"not": "a graph"})
            return self.error(404, "not_found", "no job '%s'" % job)
        if parts[2] != "progress":
            return self.error(404, "not_found", "no route")
        after = int(q.get("after", ["0"])[0])
        with Fake.lock:
            Fake.connections[job] = Fake.connections.get(job, 0) + 1
            nconn = Fake.connections[job]
        events = [e for e in EVENTS if e["seq"] > after]
        if job == LONG and sse:  # slowly, so that the bar is drawn a few times
            return self.stream([sse_bytes([e]) + b": keepalive\n\n" * 8 for e in events])
        if job == "j1" and sse:
            data = sse_bytes(events, crlf=True)
            # split inside lines, inside CRLFs and inside the JSON
            cuts = [0, 3, 40, 41, 77, 150, 151, 152, 300, len(data)]
            cuts = sorted({min(c, len(data)) for c in cuts})
            return self.stream([data[a:b] for a, b in zip(cuts, cuts[1:])])
        if job == "broken" and sse:
            if nconn == 1:  # two events, then the connection drops mid-event
                data = sse_bytes(events[:2]) + b"id: 3\nevent: impr"
                return self.stream([data])
            return self.stream([sse_bytes(events)])
        if job == "nosse" and sse:
            return self.error(503, "too_many_streams", "128 progress streams are open")
        if job == "failed":
            evs = [ev(1, "state", 0.0, state="running"),
                   ev(2, "state", 0.3, state="failed",
                      error={"code": "gpu_fatal", "message": "unrecoverable GPU error"})]
            evs = [e for e in evs if e["seq"] > after]
            if sse:
                return self.stream([sse_bytes(evs)])
            return self.send(200, {"events": evs, "next": 2, "state": "failed", "done": True})
        # polling (also for "ignores", which answers JSON to an SSE request): two pages
        page = events[:3]
        nxt = page[-1]["seq"] if page else after
        done = not events[3:]
        return self.send(200, {"events": page, "next": nxt,
                               "state": "succeeded" if done else "running", "done": done})

    def hold_stream(self):
        """A running job's stream that goes on (keepalives) until the client
        leaves or 20 s pass."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            self.wfile.write(sse_bytes([ev(1, "state", 0.0, state="running")]))
            for _ in range(100):
                self.wfile.flush()
                time.sleep(0.2)
                self.wfile.write(b": keepalive\n\n")
        except OSError:
            pass

    def seen_progress(self, job):
        with Fake.lock:
            return Fake.connections.get(job, 0) > 0


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Cli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not LCNCTL:
            raise unittest.SkipTest("LCNCTL not set")
        cls.srv = ThreadingHTTPServer(("127.0.0.1", 0), Fake)
        cls.srv.daemon_threads = True
        cls.url = "http://127.0.0.1:%d" % cls.srv.server_address[1]
        cls.thread = threading.Thread(target=cls.srv.serve_forever, daemon=True)
        cls.thread.start()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.graph = os.path.join(cls.tmp.name, "g.json")
        with open(cls.graph, "w") as f:
            json.dump(GRAPH, f)

    @classmethod
    def tearDownClass(cls):
        cls.srv.shutdown()
        cls.srv.server_close()
        cls.tmp.cleanup()

    def setUp(self):
        with Fake.lock:
            Fake.log.clear()
            Fake.connections.clear()
            Fake.busy_seen = 0

    def lcnctl(self, *args, env=None, server=True):
        e = dict(os.environ)
        e.pop("LCN_TOKEN", None)
        e.pop("LCN_TOKEN_FILE", None)
        e["LCN_SERVER"] = self.url if server else ""
        if env:
            e.update(env)
        return subprocess.run([LCNCTL, *args], capture_output=True, text=True, env=e,
                              timeout=WAIT)

    def requests(self, method=None):
        with Fake.lock:
            return [r for r in Fake.log if method is None or r[0] == method]

    # ---- usage ----
    def test_usage_errors(self):
        g = self.graph
        cases = [("submit",), ("submit", g, g), ("submit", g, "--backend", "tpu"),
                 ("submit", g, "--stop-at-target"), ("submit", g, "--budget-s", "0"),
                 ("submit", g, "--budget-s", "abc"), ("submit", g, "--budget-s", "inf"),
                 ("submit", g, "--seed", "-1"), ("submit", g, "--render", "x.svg"),
                 ("get",), ("get", "a", "b"), ("get", "bad id"), ("watch", "a/b"),
                 ("list", "--state", "bogus"), ("list", "--limit", "0"), ("list", "extra"),
                 ("solution",), ("cancel", "--bogus", "j1"), ("wait",),
                 ("bench",), ("bench", self.tmp.name, "--budget-s", "-1"),
                 ("bench", self.tmp.name, "--stop-at-target"),
                 ("bench", self.tmp.name, "--backend", "GPU"), ("frobnicate",),
                 ("--server",), ("--server", "ftp://x", "list"),
                 ("--server", "http://127.0.0.1:", "list"), ("--server", "127.0.0.1:0", "list"),
                 ("--server", "127.0.0.1:65536", "list"), ("--server", "127.0.0.1:8x", "list"),
                 ("--server", "http://[::1]:", "list"), ("--server", "[::1", "list"),
                 # a URL without a host: lcnctl dereferenced NULL (SIGSEGV, the fifth probe)
                 ("--server", "http://", "list"), ("--server", "https:///", "list"),
                 ("--server", "http:////", "get", "j1"),
                 # text that is not UTF-8 cannot go into the JSON request: it was dropped,
                 # and the job submitted without it (--from: a cold start; the fifth probe)
                 ("submit", g, "--name", "a\udcff"), ("submit", g, "--from", "j\udcff"),
                 ("submit", g, "--tuning", "x=\udcff"),
                 ("submit", g, "--threads", "-1"), ("submit", g, "--threads", "1025"),
                 ("submit", g, "--replicas", "4097"), ("submit", g, "--proposal-workers", "257"),
                 ("submit", g, "--gpus", "0"), ("submit", g, "--gpus", "17"),
                 ("submit", g, "--gpus", "two"), ("get", "j1", "--retry", "-1"),
                 ("get", "j1", "--retry", "101"),
                 # a picture redrawn between the progress lines on stdout (the fifth
                 # probe's leftover: the SVGs were interleaved with them)
                 ("submit", g, "--wait", "--render", "/dev/stdout"),
                 ("submit", g, "--wait", "--render", "-"), ("watch", "j1", "--render", "-")]
        for c in cases:
            with self.subTest(args=c):
                r = self.lcnctl(*c)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertTrue(r.stderr.strip())
        self.assertEqual(self.requests(), [], "usage errors must not reach the server")

    def test_help_lists_every_command(self):
        r = self.lcnctl("--help")
        self.assertEqual(r.returncode, 0)
        for c in ("submit", "watch", "wait", "get", "solution", "cancel", "list", "ready",
                  "check", "gen", "render", "bench"):
            self.assertIn(c, r.stdout)
            h = self.lcnctl(c, "--help")
            self.assertEqual(h.returncode, 0, c)
            self.assertIn("usage: lcnctl " + c, h.stdout)
            self.assertIn("exit status", h.stdout)
        self.assertIn("8480", r.stdout)  # the default server: lcnd's default listen port

    def test_invalid_graph_file_names_the_field(self):
        p = os.path.join(self.tmp.name, "bad.json")
        with open(p, "w") as f:
            json.dump({"nodes": [{"id": 0, "x": 0, "y": 0}], "edges": [
                {"source": 0, "target": 9}], "width": 1, "height": 1}, f)
        r = self.lcnctl("submit", p)
        self.assertEqual(r.returncode, 2)
        self.assertIn("edges[0].target: unknown node 9", r.stderr)
        r = self.lcnctl("submit", os.path.join(self.tmp.name, "missing.json"))
        self.assertEqual(r.returncode, 2)
        self.assertEqual(self.requests(), [])

    # ---- error answers ----
    def test_error_statuses(self):
        want = {"e400": 2, "e413": 2, "e422": 2, "e404": 3, "e401": 5, "e409": 6, "e429": 5,
                "e500": 5, "e503": 5, "html": 5, "notjson": 5}
        for job, code in want.items():
            with self.subTest(job=job):
                r = self.lcnctl("get", job)
                self.assertEqual(r.returncode, code, r.stderr)
                self.assertIn("lcnctl get:", r.stderr)
        r = self.lcnctl("get", "e400")
        self.assertIn("invalid input (HTTP 400 invalid_field) at graph.edges[12].source: "
                      "unknown node 99", r.stderr)
        r = self.lcnctl("get", "e429")
        self.assertIn("queue_full", r.stderr)
        self.assertIn("retry after 7 s", r.stderr)
        r = self.lcnctl("get", "html")
        self.assertIn("Bad Gateway", r.stderr)
        r = self.lcnctl("--json", "get", "e422")
        self.assertEqual(r.returncode, 2)
        j = json.loads(r.stdout)
        self.assertEqual(j["error"], {"code": "limit_exceeded", "field": "budget_s",
                                      "message": "99999 s exceeds the limit"})
        self.assertEqual(j["http_status"], 422)
        # no solution yet has a status of its own, apart from refusals (5)
        r = self.lcnctl("solution", "e409")
        self.assertEqual(r.returncode, 6)
        self.assertIn("no solution yet (HTTP 409 no_solution)", r.stderr)
        r = self.lcnctl("solution", "e409", "-o", os.path.join(self.tmp.name, "none.json"))
        self.assertEqual(r.returncode, 6)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "none.json")))
        r = self.lcnctl("--json", "solution", "e409")
        self.assertEqual(r.returncode, 6)
        self.assertEqual(json.loads(r.stdout)["error"]["code"], "no_solution")

    def test_unreachable_every_command(self):
        dead = "http://127.0.0.1:%d" % free_port()
        os.makedirs(os.path.join(self.tmp.name, "bdir"), exist_ok=True)
        with open(os.path.join(self.tmp.name, "bdir", "g.json"), "w") as f:
            json.dump(GRAPH, f)
        out = os.path.join(self.tmp.name, "bout")
        for args in (("submit", self.graph), ("submit", self.graph, "--wait"), ("get", "j1"),
                     ("solution", "j1"), ("cancel", "j1"), ("list",), ("wait", "j1"),
                     ("ready",), ("ready", "--wait", "0.5"),
                     ("watch", "j1"), ("bench", os.path.join(self.tmp.name, "bdir"), "-o", out)):
            with self.subTest(args=args):
                r = self.lcnctl(*args, env={"LCN_SERVER": dead})
                self.assertEqual(r.returncode, 4, r.stderr)
                self.assertIn("cannot reach " + dead, r.stderr)
        # --server wins over LCN_SERVER, before or after the command
        r = self.lcnctl("--server", dead, "list")
        self.assertEqual(r.returncode, 4)
        r = self.lcnctl("list", "--server", dead.replace("http://", ""))
        self.assertEqual(r.returncode, 4)
        self.assertIn("cannot reach " + dead, r.stderr)
        r = self.lcnctl("list", "--json", env={"LCN_SERVER": dead})
        self.assertEqual(json.loads(r.stdout)["error"]["code"], "unreachable")

    # ---- requests ----
    def test_submit_request(self):
        r = self.lcnctl("submit", self.graph, "--budget-s", "1.5", "--seed", "42",
                        "--target-k", "3", "--stop-at-target", "--backend", "cpu", "--name",
                        "my run")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "j1\n")
        posts = self.requests("POST")
        self.assertEqual(len(posts), 1)
        _, path, headers, body = posts[0]
        self.assertEqual(path, "/jobs")
        self.assertEqual(headers.get("Content-Type"), "application/json")
        req = json.loads(body)
        self.assertEqual(req, {"graph": GRAPH, "budget_s": 1.5, "seed": 42, "target_k": 3,
                               "stop_at_target": True, "backend": "cpu", "name": "my run"})
        r = self.lcnctl("submit", self.graph, "--json")
        self.assertEqual(json.loads(r.stdout)["id"], "j1")
        req = json.loads(self.requests("POST")[-1][3])
        self.assertEqual(req, {"graph": GRAPH})  # defaults are the daemon's

    def test_submit_solver_options(self):
        r = self.lcnctl("submit", self.graph, "--threads", "2", "--replicas", "8",
                        "--proposal-workers", "4", "--tuning", "t_lo=0.5,t_hi=2", "--backend",
                        "gpu", "--name", "solver run")
        self.assertEqual(r.returncode, 0, r.stderr)
        req = json.loads(self.requests("POST")[-1][3])
        self.assertEqual(req, {"graph": GRAPH, "backend": "gpu", "name": "solver run",
                               "solver": {"threads": 2, "replicas": 8, "proposal_workers": 4,
                                          "tuning": "t_lo=0.5,t_hi=2"}})
        r = self.lcnctl("submit", self.graph, "--threads", "0")
        req = json.loads(self.requests("POST")[-1][3])
        self.assertEqual(req["solver"], {"threads": 0})  # 0 is sent: the engine's default
        # --gpus (issue 18): a count or "all", as solver.gpus
        r = self.lcnctl("submit", self.graph, "--gpus", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(self.requests("POST")[-1][3])["solver"], {"gpus": 2})
        r = self.lcnctl("submit", self.graph, "--gpus", "all")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(self.requests("POST")[-1][3])["solver"], {"gpus": "all"})

    # ---- retries ----
    def test_retry_honours_retry_after(self):
        t0 = time.time()
        r = self.lcnctl("submit", self.graph, "--name", "busy 2", "--retry", "3")
        took = time.time() - t0
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "j1\n")
        self.assertEqual(len(self.requests("POST")), 3)
        notes = [l for l in r.stderr.splitlines() if "retry" in l]
        self.assertEqual(notes, ["lcnctl: HTTP 429 queue_full: retry 1 of 3 in 1 s",
                                 "lcnctl: HTTP 429 queue_full: retry 2 of 3 in 1 s"])
        self.assertGreaterEqual(took, 2.0)  # Retry-After: 1, twice
        # every attempt is the same request
        bodies = {x[3] for x in self.requests("POST")}
        self.assertEqual(len(bodies), 1)

    def test_retry_is_bounded(self):
        r = self.lcnctl("submit", self.graph, "--name", "busy 5", "--retry", "1")
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertEqual(len(self.requests("POST")), 2)
        self.assertIn("queue_full", r.stderr)
        with Fake.lock:
            Fake.log.clear()
            Fake.busy_seen = 0
        r = self.lcnctl("submit", self.graph, "--name", "busy 1")  # no --retry: none
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertEqual(len(self.requests("POST")), 1)
        self.assertNotIn("retry 1", r.stderr)

    def test_retry_other_commands(self):
        # --retry before or after the command; 503 as well as 429
        for args in (("--retry", "2", "get", "r503"), ("get", "r503", "--retry", "2"),
                     ("cancel", "r503", "--retry", "2"), ("solution", "r503", "--retry", "2")):
            with self.subTest(args=args):
                with Fake.lock:
                    Fake.log.clear()
                r = self.lcnctl(*args)
                self.assertEqual(r.returncode, 5, r.stderr)
                self.assertEqual(len(self.requests()), 3, self.requests())
                self.assertIn("lcnctl: HTTP 503 not_ready: retry 2 of 2 in 1 s", r.stderr)
        # other errors are never retried
        r = self.lcnctl("get", "e404", "--retry", "3")
        self.assertEqual(r.returncode, 3)
        self.assertEqual(len([x for x in self.requests() if "e404" in x[1]]), 1)

    def test_ready(self):
        r = self.lcnctl("ready")
        self.assertEqual(r.returncode, 5, r.stderr)  # the fake answers 503 ready:false
        self.assertIn("NOT ready", r.stdout)
        r = self.lcnctl("ready", "--json")
        j = json.loads(r.stdout)
        self.assertFalse(j["readyz"]["ready"])
        self.assertEqual(j["version"]["version"], "fake")

    def test_token(self):
        r = self.lcnctl("get", "secret")
        self.assertEqual(r.returncode, 5)
        self.assertIn("unauthorized", r.stderr)
        self.assertNotIn("Authorization", self.requests()[-1][2])
        r = self.lcnctl("get", "secret", env={"LCN_TOKEN": "s3cret"})
        self.assertEqual(r.returncode, 0, r.stderr)
        tf = os.path.join(self.tmp.name, "token")
        with open(tf, "w") as f:
            f.write("s3cret\n")
        r = self.lcnctl("get", "secret", env={"LCN_TOKEN_FILE": tf})
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.lcnctl("get", "secret", env={"LCN_TOKEN_FILE": tf + ".missing"})
        self.assertEqual(r.returncode, 2)
        # a directory is said to be one, not "empty"
        r = self.lcnctl("get", "secret", env={"LCN_TOKEN_FILE": self.tmp.name})
        self.assertEqual(r.returncode, 2)
        self.assertIn("Is a directory", r.stderr)

    def test_list_get_cancel_solution(self):
        r = self.lcnctl("list", "--state", "succeeded", "--limit", "7", "--before", "j9")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.requests("GET")[-1][1], "/jobs?limit=7&state=succeeded&before=j9")
        self.assertIn("j1", r.stdout)
        self.assertIn("K=2 nK=1 Phi=10 C=7", r.stdout)
        self.assertIn("lcnctl list --before j0", r.stdout)
        r = self.lcnctl("list", "--json")
        self.assertEqual(json.loads(r.stdout)["next_before"], "j0")
        r = self.lcnctl("get", "j1")
        self.assertIn("running", r.stdout)
        r = self.lcnctl("cancel", "j1")
        self.assertEqual(r.returncode, 0)
        self.assertIn("cancelling", r.stdout)
        self.assertEqual(self.requests("DELETE")[-1][1], "/jobs/j1")
        r = self.lcnctl("cancel", "done")
        self.assertIn("already succeeded", r.stdout)
        self.assertEqual(self.lcnctl("cancel", "nope").returncode, 3)
        out = os.path.join(self.tmp.name, "sol.json")
        r = self.lcnctl("solution", "j1", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            self.assertEqual(json.load(f), SOLUTION)
        self.assertIn("saved the final layout", r.stdout)
        r = self.lcnctl("solution", "j1", "-o", out, "--json")
        j = json.loads(r.stdout)
        self.assertEqual((j["K"], j["nK"], j["final"], j["file"]), (0, 2, True, out))
        r = self.lcnctl("solution", "j1")
        self.assertEqual(json.loads(r.stdout), SOLUTION)
        r = self.lcnctl("solution", "garbage")
        self.assertEqual(r.returncode, 5)
        r = self.lcnctl("solution", "j1", "-o", os.path.join(self.tmp.name, "no/dir/x.json"))
        self.assertEqual(r.returncode, 2)

    # ---- following a job ----
    def event_lines(self, out):
        return [l for l in out.splitlines() if l.strip() and l.strip()[0].isdigit()]

    def assert_followed(self, r, n_events=6):
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = self.event_lines(r.stdout)
        self.assertEqual(len(lines), n_events, r.stdout)
        self.assertIn("state      running", lines[0])
        self.assertIn("K=3 nK=2 Phi=20 C=8", lines[2])
        self.assertIn("target K<=3 reached", lines[2])
        self.assertIn("state      succeeded", lines[-1])
        self.assertIn("j1: succeeded (deadline) after 2.00 s on cpu: K=2 nK=1 Phi=10 C=7, "
                      "target K<=3 reached at 0.250 s", r.stdout)

    def test_watch_sse_split_chunks(self):
        r = self.lcnctl("watch", "j1")
        self.assert_followed(r)
        prog = [x for x in self.requests("GET") if "/progress" in x[1]]
        self.assertEqual(len(prog), 1)
        self.assertEqual(prog[0][2].get("Accept"), "text/event-stream")

    def test_watch_json(self):
        r = self.lcnctl("watch", "j1", "--json")
        self.assertEqual(r.returncode, 0)
        objs = [json.loads(l) for l in r.stdout.splitlines()]
        self.assertEqual(objs[:-1], EVENTS)
        self.assertEqual(objs[-1], FINAL)

    def test_wait(self):
        r = self.lcnctl("wait", "j1")
        self.assertEqual(r.returncode, 0)
        self.assertEqual(self.event_lines(r.stdout), [])
        self.assertIn("j1: succeeded", r.stdout)
        r = self.lcnctl("wait", "j1", "--json")
        self.assertEqual(json.loads(r.stdout), FINAL)
        r = self.lcnctl("wait", "nope")
        self.assertEqual(r.returncode, 3)

    def test_reconnect_resumes_after_last_event(self):
        r = self.lcnctl("watch", "broken")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = self.event_lines(r.stdout)
        self.assertEqual(len(lines), 6, r.stdout)  # no event twice, none lost
        prog = [x for x in self.requests("GET") if "/progress" in x[1]]
        self.assertGreaterEqual(len(prog), 2)
        self.assertIn("after=2", prog[1][1])
        self.assertEqual(prog[1][2].get("Last-Event-ID"), "2")

    def test_polling_fallback(self):
        for job, extra in (("nosse", ()), ("ignores", ()), ("j1", ("--poll",))):
            with self.subTest(job=job):
                with Fake.lock:
                    Fake.log.clear()
                r = self.lcnctl("watch", job, *extra)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(len(self.event_lines(r.stdout)), 6, r.stdout)
                polls = [x[1] for x in self.requests("GET")
                         if "/progress" in x[1] and
                         "text/event-stream" not in x[2].get("Accept", "")]
                self.assertIn("/jobs/%s/progress?after=3" % job, polls)
        r = self.lcnctl("watch", "nosse")
        self.assertIn("polling instead", r.stderr)

    def test_failed_job(self):
        for args in (("watch", "failed"), ("wait", "failed"), ("watch", "failed", "--poll")):
            with self.subTest(args=args):
                r = self.lcnctl(*args)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn("failed", r.stdout)
                self.assertIn("gpu_fatal: unrecoverable GPU error", r.stdout)

    def test_submit_wait(self):
        # the id comes first, on stderr: stdout keeps the progress and the end
        r = self.lcnctl("submit", self.graph, "--wait")
        self.assert_followed(r)
        self.assertEqual(r.stderr.splitlines()[0], "j1")
        self.assertNotIn("\nj1\n", "\n" + r.stdout)
        r = self.lcnctl("submit", self.graph, "--wait", "--json")
        self.assertEqual(json.loads(r.stdout), FINAL)  # stdout: one JSON document
        self.assertEqual(r.stderr, "j1\n")

    def test_submit_wait_interrupted(self):
        """Ctrl-C while following leaves the job alone and says how to go on."""
        for server_flag in (False, True):
            with self.subTest(server_flag=server_flag):
                args = [LCNCTL, "submit", self.graph, "--name", "slow", "--wait"]
                if server_flag:
                    args += ["--server", self.url]
                e = dict(os.environ, LCN_SERVER=self.url if not server_flag else "")
                p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=e)
                first = p.stderr.readline()
                self.assertEqual(first, SLOW + "\n")
                time.sleep(0.5)  # following now
                p.send_signal(signal.SIGINT)
                out, err = p.communicate(timeout=WAIT)
                self.assertEqual(p.returncode, 130, err)
                self.assertIn("interrupted: job %s is still running on the server" % SLOW, err)
                srv = " --server " + self.url if server_flag else ""
                self.assertIn("lcnctl%s watch %s" % (srv, SLOW), err)
                self.assertIn("lcnctl%s cancel %s" % (srv, SLOW), err)
                self.assertEqual(self.requests("DELETE"), [])  # the job was not cancelled

    def test_bar_keeps_the_id_at_any_width(self):
        """On a terminal the progress line leads with the job id and is cut
        to the terminal's width, so a narrow terminal never hides the id."""
        for cols in (80, 40):
            with self.subTest(cols=cols):
                out = self.run_on_pty(["watch", LONG], cols)
                draws = [d.split("\x1b[K")[0] for d in out.split("\r") if "\x1b[K" in d]
                self.assertGreaterEqual(len(draws), 2, repr(out))
                for d in draws:
                    self.assertTrue(d.startswith(LONG + " "), repr(d))
                    self.assertLess(len(d), cols, repr(d))
                self.assertIn("succeeded", draws[-1])

    def run_on_pty(self, args, cols):
        import fcntl
        import pty
        import struct
        import termios
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
        e = dict(os.environ, LCN_SERVER=self.url)
        p = subprocess.Popen([LCNCTL, *args], stdout=slave, stderr=slave, stdin=slave, env=e)
        os.close(slave)
        chunks = []
        while True:
            try:
                b = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not b:
                break
            chunks.append(b)
        p.wait(timeout=WAIT)
        os.close(master)
        self.assertEqual(p.returncode, 0)
        return b"".join(chunks).decode()

    def test_watch_render(self):
        svg = os.path.join(self.tmp.name, "w.svg")
        r = self.lcnctl("watch", "j1", "--render", svg)
        self.assertEqual(r.returncode, 0, r.stderr)
        import xml.etree.ElementTree as ET
        root = ET.parse(svg).getroot()
        self.assertIn("K = 0", "".join(root.itertext()))  # recounted from the layout
        self.assertTrue(any("/solution" in x[1] for x in self.requests("GET")))

    def test_bench_refuses_what_check_rejects(self):
        d = os.path.join(self.tmp.name, "benchdir")
        os.makedirs(d, exist_ok=True)
        for name in ("good", "bad", "mism"):
            with open(os.path.join(d, name + ".json"), "w") as f:
                json.dump(GRAPH, f)
        out = os.path.join(self.tmp.name, "benchout")
        r = self.lcnctl("bench", d, "--budget-s", "1", "--seeds", "1", "-o", out)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("bad seed 1 (runs/bad.s1, job jbad): REFUSED: layout fails lcnctl check "
                      "--instance: 1 violation(s) of V1-V4", r.stdout)
        self.assertIn("mism seed 1 (runs/mism.s1, job jmism): REFUSED: job status tuple "
                      "(2, 1, 10, 7) differs from the recount (0, 2, 0, 0)", r.stdout)
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        g = {x["graph"]: x for x in s["graphs"]}
        self.assertEqual((g["good"]["valid"], g["good"]["refused"]), (1, 0))
        self.assertEqual(g["good"]["best_tuple"], OK_BEST)
        for name in ("bad", "mism"):
            self.assertEqual((g[name]["runs"], g[name]["valid"], g[name]["refused"]), (1, 0, 1))
            self.assertIsNone(g[name]["median_tuple"])
        with open(os.path.join(out, "runs", "bad.s1.check.json")) as f:
            self.assertFalse(json.load(f)["valid"])
        # the raw solution is kept byte for byte as the server sent it
        with open(os.path.join(out, "runs", "bad.s1.solution.json")) as f:
            self.assertEqual(json.load(f), BAD_SOLUTION)


if __name__ == "__main__":
    unittest.main(verbosity=2)
