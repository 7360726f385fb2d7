"""lcnd_harness.py - runs a real `lcnd serve` for the integration tests.

Standard library only. The daemon listens on 127.0.0.1 port 0 (the kernel
picks a free port; lcnd writes it to a port file), with a fresh temporary
state directory, the CPU backend and short budgets. Binaries come from the
environment: LCND (required), LCNCTL (for checking solutions).

Every wait has a generous timeout and no test asserts on how fast something
happened, only on what happened, so the suite passes on a loaded machine.
"""

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

LCND = os.environ.get("LCND", "")
LCNCTL = os.environ.get("LCNCTL", "")
WAIT = float(os.environ.get("LCN_TEST_WAIT", "60"))  # seconds any wait may take
TERMINAL = ("succeeded", "failed", "cancelled", "interrupted")


def need_binaries(tc):
    if not LCND or not os.access(LCND, os.X_OK):
        raise unittest.SkipTest("LCND is not set to an lcnd binary")


def gen_graph(family="random", nodes=40, seed=1, extra=()):
    """A generated instance (lcnctl gen), as a dict."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "g.json")
        subprocess.run([LCNCTL, "gen", family, "--nodes", str(nodes), "--seed", str(seed),
                        "-o", out, *extra], check=True, capture_output=True)
        with open(out) as f:
            return json.load(f)


def tiny_graph():
    """Four nodes, two crossing edges: a graph any engine lays out at once."""
    return {"nodes": [{"id": 0, "x": 0, "y": 0}, {"id": 1, "x": 4, "y": 4},
                      {"id": 2, "x": 0, "y": 4}, {"id": 3, "x": 4, "y": 0}],
            "edges": [{"source": 0, "target": 1}, {"source": 2, "target": 3}],
            "width": 8, "height": 8}


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None


class Daemon:
    """One lcnd serve process with its own state directory."""

    def __init__(self, *args, state_dir=None, env=None, token=None, wrapper=()):
        self.owns_dir = state_dir is None
        self.dir = state_dir or tempfile.mkdtemp(prefix="lcnd-test-")
        self.args = list(args)
        self.env = dict(os.environ)
        if env:
            self.env.update(env)
        self.token = token
        self.wrapper = list(wrapper)
        self.proc = None
        self.addr = None
        self.port_file = os.path.join(self.dir, "lcnd.port")
        self.log_file = os.path.join(self.dir, "lcnd.log")

    # ---- process control ----
    def start(self, extra=(), expect_fail=False):
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)
        cmd = self.wrapper + [LCND, "serve", "--listen", "127.0.0.1:0", "--state-dir", self.dir,
                              "--port-file", self.port_file, "--log-file", self.log_file,
                              "--backend", "cpu", "--cpu-threads", "1"] + self.args + list(extra)
        if getattr(self, "stderr", None) and not self.stderr.closed:
            self.stderr.close()
        self.stderr_path = os.path.join(self.dir, "stderr.%d" % int(time.time() * 1e6))
        self.stderr = open(self.stderr_path, "w")
        self.proc = subprocess.Popen(cmd, env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=self.stderr)
        if expect_fail:
            rc = self.proc.wait(timeout=WAIT)
            self.stderr.close()
            return rc
        deadline = time.time() + WAIT
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("lcnd exited with %s at start: %s" %
                                     (self.proc.returncode, self.read_stderr()))
            if os.path.exists(self.port_file):
                with open(self.port_file) as f:
                    self.addr = f.read().strip()
                if self.addr:
                    return self
            time.sleep(0.02)
        raise AssertionError("lcnd did not start")

    def read_stderr(self):
        if not self.stderr.closed:
            self.stderr.flush()
        with open(self.stderr_path) as f:
            return f.read()

    def log(self):
        try:
            with open(self.log_file) as f:
                return f.read()
        except OSError:
            return ""

    def send(self, sig):
        self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=None):
        """Sends sig and waits; returns the exit status."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout or WAIT)
        finally:
            self.stderr.close()

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self.stderr.close()

    def cleanup(self):
        if self.proc and self.proc.poll() is None:
            self.kill9()
        if getattr(self, "stderr", None) and not self.stderr.closed:
            self.stderr.close()
        if self.owns_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    # ---- HTTP ----
    def request(self, method, path, body=None, headers=None, ctype="application/json",
                timeout=None):
        host, port = self.addr.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=timeout or WAIT)
        h = dict(headers or {})
        if self.token and "Authorization" not in h:
            h["Authorization"] = "Bearer " + self.token
        if body is not None:
            if not isinstance(body, (bytes, str)):
                body = json.dumps(body)
            if isinstance(body, str):
                body = body.encode()
            if ctype:
                h.setdefault("Content-Type", ctype)
        try:
            conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            return Response(r.status, r.getheaders(), r.read())
        finally:
            conn.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def submit(self, graph, **fields):
        """POST /jobs; returns the job id (asserts 201)."""
        req = {"graph": graph}
        req.update(fields)
        r = self.request("POST", "/jobs", body=req)
        if r.status != 201:
            raise AssertionError("POST /jobs: %d %s" % (r.status, r.body[:300]))
        return r.json()["id"]

    def status(self, job):
        r = self.get("/jobs/" + job)
        assert r.status == 200, (r.status, r.body)
        return r.json()

    def wait(self, job, states=TERMINAL, timeout=None):
        deadline = time.time() + (timeout or WAIT)
        while time.time() < deadline:
            s = self.status(job)
            if s["state"] in states:
                return s
            time.sleep(0.05)
        raise AssertionError("job %s did not reach %s: %s" % (job, states, s))

    def events(self, job, after=0):
        out = []
        while True:
            r = self.get("/jobs/%s/progress?after=%d" % (job, after))
            assert r.status == 200, (r.status, r.body)
            p = r.json()
            out += p["events"]
            if not p["events"]:
                return out, p
            after = p["next"]


def assert_error(tc, r, status, code, field=None, msg=None):
    """r is the API's error answer: status, error code, and when given the
    field path and a part of the message. Returns the error object."""
    tc.assertEqual(r.status, status, r.body)
    e = r.json()["error"]
    tc.assertEqual(e["code"], code, e)
    if field is not None:
        tc.assertEqual(e.get("field"), field, e)
    if msg is not None:
        tc.assertIn(msg, e["message"])
    return e


def assert_start_fails(tc, args, message):
    """lcnd serve with args refuses to start, saying message (on stderr or
    in its log)."""
    d = Daemon(*args)
    try:
        tc.assertNotEqual(d.start(expect_fail=True), 0)
        tc.assertIn(message, d.read_stderr() + d.log())
    finally:
        d.cleanup()


class DaemonCase(unittest.TestCase):
    """Tests sharing one daemon (started with ARGS), which must stop with
    exit status 0 at the end."""
    ARGS = ()

    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.d = Daemon(*cls.ARGS).start()

    @classmethod
    def tearDownClass(cls):
        status = cls.d.stop()
        cls.d.cleanup()
        assert status == 0, status


def check_solution(testcase, daemon, job, graph):
    """Fetches the solution and checks it with lcnctl check --instance (the
    oracle); returns (solution dict, check report)."""
    r = daemon.get("/jobs/%s/solution" % job)
    testcase.assertEqual(r.status, 200, r.body[:300])
    sol = r.json()
    with tempfile.TemporaryDirectory() as d:
        sp, gp = os.path.join(d, "sol.json"), os.path.join(d, "g.json")
        with open(sp, "wb") as f:
            f.write(r.body)
        with open(gp, "w") as f:
            json.dump(graph, f)
        p = subprocess.run([LCNCTL, "check", sp, "--instance", gp], capture_output=True,
                           text=True)
    testcase.assertEqual(p.returncode, 0, p.stdout + p.stderr)
    rep = json.loads(p.stdout)
    for k in ("K", "nK", "Phi", "C"):
        testcase.assertEqual(rep[k], sol["lcn"][k], k)
    return sol, rep


def exchange(d, raw, answer):
    """Sends raw bytes on a new connection to daemon d and reads until the
    server closes it (or `answer` seconds pass); returns what came, with
    b"<not closed>" appended when the server kept the connection."""
    host, port = d.addr.rsplit(":", 1)
    s = socket.create_connection((host.strip("[]"), int(port)), timeout=answer)
    s.sendall(raw)
    data = b""
    deadline = time.time() + answer
    try:
        while time.time() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk
    except socket.timeout:
        pass
    except ConnectionResetError:
        return data
    finally:
        s.close()
    return data + b"<not closed>"


def daemon_with_finished_job(test, budget_s=0.1, **fields):
    """A daemon (cleaned up with test) and one job of tiny_graph() with the
    request's other fields, waited for to its end: (daemon, job id)."""
    need_binaries(test)
    d = Daemon()
    test.addCleanup(d.cleanup)
    d.start()
    job = d.submit(tiny_graph(), budget_s=budget_s, **fields)
    d.wait(job)
    return d, job


def listings_of_named_job(test, name):
    """A daemon holding one finished job called name (daemon_with_finished_job)
    and what `lcnctl list` and `lcnctl get JOB` print for it: (daemon,
    [(command, stdout bytes)]), both commands asserted to exit 0."""
    d, job = daemon_with_finished_job(test, name=name)
    out = []
    for cmd in (["list"], ["get", job]):
        p = subprocess.run([LCNCTL, "--server", d.addr] + cmd, capture_output=True, timeout=WAIT)
        test.assertEqual(p.returncode, 0, p.stderr)
        out.append((cmd, p.stdout))
    return d, out
