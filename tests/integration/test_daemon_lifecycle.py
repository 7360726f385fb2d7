#!/usr/bin/env python3
"""lcnd lifecycle and configuration: systemd notifications (READY, STATUS,
WATCHDOG, STOPPING), SIGHUP log reopening, bearer-token auth, the refusal to
listen on a non-loopback address without a token, the state-directory lock,
a sticky GPU error (fake GPU test hook), retention, and config files."""

import os
import signal
import socket
import tempfile
import threading
import time
import unittest

from lcnd_harness import Daemon, check_solution, gen_graph, need_binaries, tiny_graph, LCND


class NotifySocket:
    def __init__(self, abstract=False):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract:
            name = "lcnd-test-%d-%d" % (os.getpid(), int(time.time() * 1e6))
            self.s.bind("\0" + name)
            self.env = "@" + name
            self.dir = None
        else:
            self.dir = tempfile.mkdtemp(prefix="lcnd-notify-")
            path = os.path.join(self.dir, "notify")
            self.s.bind(path)
            self.env = path
        self.s.settimeout(0.2)
        self.msgs = []

    def collect(self, until, timeout=60):
        """Reads datagrams until one equals `until`."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                m = self.s.recv(4096).decode()
            except socket.timeout:
                continue
            self.msgs.append(m)
            if m == until:
                return
        raise AssertionError("no %s among %s" % (until, self.msgs))

    def close(self):
        self.s.close()
        if self.dir:
            for f in os.listdir(self.dir):
                os.unlink(os.path.join(self.dir, f))
            os.rmdir(self.dir)


class Lifecycle(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.g = gen_graph("random", 40, seed=5)

    def test_sd_notify_and_watchdog(self):
        for abstract in (False, True):
            ns = NotifySocket(abstract)
            d = Daemon(env={"NOTIFY_SOCKET": ns.env, "WATCHDOG_USEC": "200000"})
            try:
                d.start()
                ns.collect("READY=1")
                # READY comes only once the socket serves
                self.assertEqual(d.get("/healthz").status, 200)
                job = d.submit(tiny_graph(), budget_s=0.1)
                d.wait(job)
                n0 = len([m for m in ns.msgs if m == "WATCHDOG=1"])
                ns.collect("WATCHDOG=1")
                ns.collect("WATCHDOG=1")
                self.assertGreaterEqual(len([m for m in ns.msgs if m == "WATCHDOG=1"]), n0 + 2)
                self.assertTrue(any(m.startswith("STATUS=serving: ") for m in ns.msgs), ns.msgs)
                d.send(signal.SIGTERM)
                ns.collect("STOPPING=1")
                self.assertEqual(d.proc.wait(timeout=60), 0)
                self.assertLess(ns.msgs.index("READY=1"), ns.msgs.index("STOPPING=1"))
            finally:
                d.cleanup()
                ns.close()

    def test_no_notify_socket_is_quiet(self):
        env = {"NOTIFY_SOCKET": "", "WATCHDOG_USEC": "100000"}
        d = Daemon(env=env)
        try:
            d.start()
            self.assertEqual(d.get("/healthz").status, 200)
            self.assertEqual(d.stop(), 0)
        finally:
            d.cleanup()

    def test_sighup_reopens_log(self):
        d = Daemon()
        try:
            d.start()
            os.rename(d.log_file, d.log_file + ".1")
            d.send(signal.SIGHUP)
            deadline = time.time() + 60
            while time.time() < deadline and not os.path.exists(d.log_file):
                time.sleep(0.02)
            self.assertTrue(os.path.exists(d.log_file))
            job = d.submit(tiny_graph(), budget_s=0.1)
            d.wait(job)
            self.assertEqual(d.stop(), 0)
            with open(d.log_file) as f:
                new = f.read()
            with open(d.log_file + ".1") as f:
                old = f.read()
            self.assertIn("listening on", old)
            self.assertIn("log reopened", new)
            self.assertIn("job %s: succeeded" % job, new)
        finally:
            d.cleanup()

    def signal_during_start(self, d, sig, once=False):
        """Starts d while another thread sends sig every millisecond from the
        moment lcnd serve opened its log (configure: the signals are held
        by then) until the port file exists (start() is over). Returns how
        many were sent; d.start()'s error, if any, is the caller's."""
        done = threading.Event()
        sent = [0]

        def spam():
            while not done.is_set():
                if d.proc is not None and d.proc.poll() is None and \
                        os.path.exists(d.log_file) and not os.path.exists(d.port_file) and \
                        not (once and sent[0]):
                    d.proc.send_signal(sig)
                    sent[0] += 1
                time.sleep(0.001)
        t = threading.Thread(target=spam)
        t.start()
        try:
            try:
                d.start()
            except AssertionError:
                pass  # a SIGTERM may end it before the harness saw the port file
        finally:
            done.set()
            t.join()
        return sent[0]

    def test_signals_held_during_start(self):
        """SIGHUP and SIGTERM during the start are held until the daemon
        serves, not taken by their default action (the process killed):
        a SIGHUP reopens the log once it is up, a SIGTERM stops it
        gracefully (exit 0) right after."""
        d, e = Daemon(), Daemon()  # fresh state directories: no log file before configure
        try:
            n = self.signal_during_start(d, signal.SIGHUP)
            self.assertIsNone(d.proc.poll(), "killed during the start: %s" % d.read_stderr())
            if n:
                deadline = time.time() + 30
                while "log reopened" not in d.log() and time.time() < deadline:
                    time.sleep(0.02)
                self.assertIn("log reopened", d.log())
            self.assertEqual(d.stop(), 0)
            n2 = self.signal_during_start(e, signal.SIGTERM)
            self.assertEqual(e.proc.wait(timeout=60), 0, e.read_stderr())
            if n2:
                self.assertIn("stopping: SIGTERM", e.log())
            print("signals sent during the start: %d SIGHUP, %d SIGTERM" % (n, n2))
            self.assertGreater(n + n2, 0)  # the start was long enough to be hit
        finally:
            d.cleanup()
            e.cleanup()

    def test_signals_held_during_shutdown(self):
        """Once the shutdown has closed the signal watchers, a SIGHUP (log
        rotation) or another SIGTERM arriving before the process exits is
        held, not taken by its default action: the exit status stays 0."""
        for sig in (signal.SIGHUP, signal.SIGTERM):
            d = Daemon()
            try:
                d.start()
                d.send(signal.SIGTERM)
                sent = 0
                while d.proc.poll() is None:
                    try:
                        d.proc.send_signal(sig)
                        sent += 1
                    except ProcessLookupError:
                        break
                    time.sleep(0.0005)
                self.assertEqual(d.proc.wait(timeout=60), 0, "%s during the shutdown (%d sent): %s" %
                                 (sig.name, sent, d.read_stderr()))
            finally:
                d.cleanup()

    def test_signal_ignored_by_parent_still_held(self):
        """A parent that ignores SIGINT (a shell's background job): one sent
        during the start still stops the daemon once it serves. (Linux keeps
        a blocked signal pending even when it is ignored; lcnd serve also
        resets the three to their default action behind the mask, for
        systems that discard it.)"""
        d = Daemon()
        d.wrapper = ["python3", "-c",
                     "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                     "os.execv(sys.argv[1], sys.argv[1:])"]
        try:
            n = self.signal_during_start(d, signal.SIGINT, once=True)
            self.assertEqual(n, 1)
            self.assertEqual(d.proc.wait(timeout=30), 0, d.read_stderr())
            self.assertIn("stopping: SIGINT", d.log())
        finally:
            if d.proc and d.proc.poll() is None:
                d.proc.kill()
            d.cleanup()

    def test_token_auth(self):
        tok = "s3cret-token-0123456789"
        d = Daemon(token=tok)
        try:
            tf = os.path.join(d.dir, "token")
            with open(tf, "w") as f:
                f.write(tok + "\n")
            d.start(extra=["--token-file", tf])
            r = d.request("GET", "/jobs", headers={"Authorization": "Bearer nope"})
            self.assertEqual(r.status, 401)
            self.assertEqual(r.json()["error"]["code"], "unauthorized")
            r = d.request("GET", "/jobs", headers={"Authorization": ""})
            self.assertEqual(r.status, 401)
            r = d.request("POST", "/jobs", body={"graph": tiny_graph()},
                          headers={"Authorization": "Bearer " + tok[:-1]})
            self.assertEqual(r.status, 401)
            self.assertEqual(d.request("GET", "/healthz", headers={"Authorization": ""}).status,
                             200)
            job = d.submit(tiny_graph(), budget_s=0.1)  # the harness sends the token
            self.assertEqual(d.wait(job)["state"], "succeeded")
            self.assertEqual(d.get("/metrics").status, 200)
            self.assertEqual(d.stop(), 0)
            # a token too short to be one is refused at start
            with open(tf, "w") as f:
                f.write("short\n")
            self.assertEqual(d.start(extra=["--token-file", tf], expect_fail=True), 2)
            self.assertIn("at least 16 bytes", d.read_stderr())
        finally:
            d.cleanup()

    def test_non_loopback_needs_token(self):
        d = Daemon()
        try:
            rc = d.start(extra=["--listen", "0.0.0.0:0"], expect_fail=True)
            self.assertEqual(rc, 2)
            self.assertIn("refusing to listen on non-loopback", d.read_stderr())
            d.start(extra=["--listen", "0.0.0.0:0", "--allow-insecure-listen"])
            self.assertTrue(d.addr.startswith("0.0.0.0:"))
            port = d.addr.rsplit(":", 1)[1]
            d.addr = "127.0.0.1:" + port
            self.assertEqual(d.get("/healthz").status, 200)
            self.assertEqual(d.stop(), 0)
        finally:
            d.cleanup()

    def test_state_dir_lock_and_bad_config(self):
        a = Daemon()
        try:
            a.start()
            b = Daemon(state_dir=a.dir)
            b.port_file = os.path.join(a.dir, "b.port")
            self.assertEqual(b.start(expect_fail=True), 1)
            self.assertIn("in use by another lcnd", b.read_stderr())
            self.assertEqual(a.get("/healthz").status, 200)
            self.assertEqual(a.stop(), 0)
            cf = os.path.join(a.dir, "bad.conf")
            with open(cf, "w") as f:
                f.write("max_nodes = 10\nmax_nodez = 3\n")
            self.assertEqual(a.start(extra=["--config", cf], expect_fail=True), 2)
            self.assertIn("bad.conf:2: unknown option 'max_nodez'", a.read_stderr())
        finally:
            a.cleanup()

    def test_config_file_applies(self):
        d = Daemon()
        try:
            cf = os.path.join(d.dir, "lcnd.conf")
            with open(cf, "w") as f:
                f.write("# small daemon\nmax_nodes = 10\nmax_budget_s = 5\n")
            d.start(extra=["--config", cf])
            r = d.request("POST", "/jobs", body={"graph": self.g})
            self.assertEqual(r.status, 422)
            self.assertEqual(r.json()["error"]["field"], "graph.nodes")
            r = d.request("POST", "/jobs", body={"graph": tiny_graph(), "budget_s": 6})
            self.assertEqual(r.status, 422)
            self.assertEqual(r.json()["error"]["field"], "budget_s")
            self.assertEqual(d.stop(), 0)
        finally:
            d.cleanup()

    def test_sticky_gpu_error(self):
        d = Daemon("--cpu-workers", "1", "--checkpoint-interval-s", "0.2")
        try:
            # the test-only fault hook: a fake GPU worker whose jobs hit a sticky error
            d.start(extra=["--backend", "auto", "--test-fake-gpu", "sticky",
                           "--test-fake-gpu-ms", "2000"])
            self.assertEqual(d.get("/readyz").json()["gpu"], "ok")
            cpu_job = d.submit(self.g, budget_s=30, backend="cpu")
            d.wait(cpu_job, ("running",))
            gpu_job = d.submit(self.g, budget_s=30, backend="gpu")
            waiting = d.submit(self.g, budget_s=30, backend="gpu")  # behind it, one fake slot
            rc = d.proc.wait(timeout=60)
            self.assertEqual(rc, 3, d.read_stderr())
            self.assertIn("sticky GPU error", d.log())
            # restart without the fault: the GPU job stays failed with a clear
            # error, the CPU job that was running resumes
            d.start()
            s = d.status(gpu_job)
            self.assertEqual(s["state"], "failed")
            self.assertEqual(s["error"]["code"], "gpu_fatal")
            self.assertIn("unrecoverable", s["error"]["message"])
            # the queued GPU job finds no GPU worker after the restart: it fails
            w = d.status(waiting)
            self.assertEqual(w["state"], "failed")
            self.assertEqual(w["error"]["code"], "gpu_unavailable")
            c = d.status(cpu_job)
            self.assertEqual(c["resumes"], 1)
            self.assertIn(c["state"], ("queued", "running"))
            d.request("DELETE", "/jobs/" + cpu_job)
            self.assertEqual(d.stop(), 0)
        finally:
            d.cleanup()

    def test_gpu_backend_without_gpu(self):
        d = Daemon()
        try:
            d.start()
            r = d.request("POST", "/jobs", body={"graph": tiny_graph(), "backend": "gpu"})
            self.assertEqual(r.status, 422)
            self.assertEqual(r.json()["error"]["code"], "backend_unavailable")
            self.assertEqual(d.stop(), 0)
            self.assertEqual(d.start(extra=["--backend", "gpu"], expect_fail=True), 1)
            self.assertIn("no usable GPU", d.read_stderr())
        finally:
            d.cleanup()

    def test_retention(self):
        d = Daemon("--retain-jobs", "2")
        try:
            d.start()
            ids = []
            for _ in range(4):
                ids.append(d.submit(tiny_graph(), budget_s=0.05))
                d.wait(ids[-1])
            deadline = time.time() + 60
            while time.time() < deadline:
                listed = [j["id"] for j in d.get("/jobs?limit=500").json()["jobs"]]
                if len(listed) == 2:
                    break
                time.sleep(0.05)
            self.assertEqual(listed, ids[:1:-1])
            self.assertEqual(d.get("/jobs/" + ids[0]).status, 404)
            self.assertEqual(d.get("/jobs/%s/solution" % ids[0]).status, 404)
            check_solution(self, d, ids[3], tiny_graph())
            self.assertEqual(d.stop(), 0)
            d.start()
            self.assertEqual([j["id"] for j in d.get("/jobs?limit=500").json()["jobs"]],
                             ids[:1:-1])
            # ids are never reused after deletions
            self.assertGreater(d.submit(tiny_graph(), budget_s=0.05), ids[-1])
            self.assertEqual(d.stop(), 0)
        finally:
            d.cleanup()

    def test_help_and_print_config(self):
        import subprocess
        p = subprocess.run([LCND, "serve", "--help"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        self.assertIn("--max-queued", p.stdout)
        p = subprocess.run([LCND, "serve", "--print-config", "--max-nodes", "77"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        self.assertIn("\nmax_nodes = 77\n", p.stdout)
        p = subprocess.run([LCND, "serve", "--max-nodes", "0"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--max-nodes: expected an integer in [1, 1000000], got '0'", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
