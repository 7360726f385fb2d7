"""lcnctl against a real lcnd (CPU backend, loopback, random port, temporary
state directory, budgets of 1-2 s): submit --wait, watch over SSE and by
polling (also when the daemon refuses streams), solution -o then check and
render, cancel, list, watch --render, bench with its manifest and raw runs
checked against `lcnctl check`, and the exit statuses for invalid input,
not found, a failed job and an unreachable server.

Uses tests/integration/lcnd_harness.py (the daemon's own harness); exits 77
(skipped) when lcnd has no `serve` or the harness is absent. Assertions are
about what happened, never about how fast."""

import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
LCND = os.environ.get("LCND", "")
LCNCTL = os.environ.get("LCNCTL", "")


def skip(why):
    print("skipped: " + why)
    sys.exit(77)


if not LCND or not LCNCTL:
    skip("LCND and LCNCTL must name the binaries")
if subprocess.run([LCND, "serve", "--help"], capture_output=True).returncode != 0:
    skip("this lcnd has no `serve` command yet")
sys.path.insert(0, HERE)
import bench_check  # noqa: E402

try:
    from lcnd_harness import Daemon, WAIT  # noqa: E402
except ImportError:
    skip("tests/integration/lcnd_harness.py is not here yet")


def load(path):
    with open(path) as f:
        return json.load(f)


def tuple_of(d):
    return (d["K"], d["nK"], d["Phi"], d["C"])


class WithDaemon(unittest.TestCase):
    daemon_args = ("--cpu-workers", "1", "--checkpoint-interval-s", "0.3",
                   "--sse-heartbeat-s", "0.5")

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.d = Daemon(*cls.daemon_args).start()
        cls.url = "http://" + cls.d.addr

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        cls.d.cleanup()
        cls.tmp.cleanup()
        assert rc == 0, rc

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def lcnctl(self, *args, env=None, check_rc=None):
        e = dict(os.environ)
        e["LCN_SERVER"] = self.url
        e.pop("LCN_TOKEN", None)
        if env:
            e.update(env)
        r = subprocess.run([LCNCTL, *args], capture_output=True, text=True, env=e,
                           timeout=WAIT * 3)
        if check_rc is not None:
            self.assertEqual(r.returncode, check_rc, "lcnctl %s\n%s%s" % (
                " ".join(args), r.stdout, r.stderr))
        return r

    def gen(self, name, family="random", nodes=40, seed=1):
        p = self.path(name)
        if not os.path.exists(p):
            self.lcnctl("gen", family, "--nodes", str(nodes), "--seed", str(seed), "-o", p,
                        check_rc=0)
        return p

    def check(self, sol, inst):
        r = self.lcnctl("check", sol, "--instance", inst)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return json.loads(r.stdout)


class Flows(WithDaemon):
    def test_ready(self):
        r = self.lcnctl("ready", "--wait", "10", check_rc=0)
        self.assertIn("ready", r.stdout)
        j = json.loads(self.lcnctl("ready", "--json", check_rc=0).stdout)
        self.assertTrue(j["readyz"]["ready"])
        self.assertEqual(j["version"], self.d.get("/version").json())

    def test_submit_wait_solution_check_render(self):
        g = self.gen("g40.json")
        r = self.lcnctl("submit", g, "--budget-s", "1", "--seed", "3", "--target-k", "1000",
                        "--wait", check_rc=0)
        self.assertIn("state      running", r.stdout)
        self.assertIn("state      succeeded", r.stdout)
        self.assertIn("target K<=1000 reached", r.stdout)
        job = r.stdout.split()[1].rstrip(":")
        summary = r.stdout.strip().splitlines()[-1]
        self.assertTrue(summary.startswith(job + ": succeeded"), summary)
        st = json.loads(self.lcnctl("get", job, "--json", check_rc=0).stdout)
        self.assertEqual(st["state"], "succeeded")
        sol = self.path("sol.json")
        r = self.lcnctl("solution", job, "-o", sol, check_rc=0)
        self.assertIn("saved the final layout", r.stdout)
        rep = self.check(sol, g)
        self.assertEqual(tuple_of(rep), tuple_of(st["best"]))
        self.assertIn("K=%d nK=%d Phi=%d C=%d" % tuple_of(rep), summary)
        svg = self.path("sol.svg")
        r = self.lcnctl("render", sol, "--instance", g, "-o", svg, "--json", check_rc=0)
        self.assertEqual(tuple_of(json.loads(r.stdout)), tuple_of(rep))
        ET.parse(svg)
        # machine output of submit --wait: the final status only
        r = self.lcnctl("submit", g, "--budget-s", "1", "--wait", "--json", check_rc=0)
        fin = json.loads(r.stdout)
        self.assertEqual(fin["state"], "succeeded")
        self.assertEqual(fin["budget_s"], 1.0)

    def test_watch_sse_and_poll_replay_agree(self):
        g = self.gen("g40.json")
        job = self.lcnctl("submit", g, "--budget-s", "1.5", "--seed", "5",
                          check_rc=0).stdout.strip()
        live = self.lcnctl("watch", job, check_rc=0).stdout
        self.assertIn("state      succeeded", live)
        # once finished, the stream and the polling fallback replay the same events
        sse = self.lcnctl("watch", job, check_rc=0).stdout
        poll = self.lcnctl("watch", job, "--poll", check_rc=0).stdout
        self.assertEqual(sse, poll)
        self.assertEqual(live.splitlines()[1:], sse.splitlines()[1:])  # header shows the state
        js = [json.loads(l) for l in self.lcnctl("watch", job, "--json",
                                                  check_rc=0).stdout.splitlines()]
        events, final = js[:-1], js[-1]
        self.assertEqual([e["seq"] for e in events], list(range(1, len(events) + 1)))
        self.assertEqual(final["progress_seq"], events[-1]["seq"])
        self.assertEqual(events[-1], {"seq": events[-1]["seq"], "type": "state",
                                      "elapsed_s": events[-1]["elapsed_s"],
                                      "state": "succeeded"})

    def test_watch_render_follows_checkpoints(self):
        g = self.gen("grid60.json", "grid", 60, 2)
        job = self.lcnctl("submit", g, "--budget-s", "2", check_rc=0).stdout.strip()
        svg = self.path("live.svg")
        r = self.lcnctl("watch", job, "--render", svg, check_rc=0)
        self.assertIn("picture", r.stdout)
        root = ET.parse(svg).getroot()
        text = " ".join(root.itertext())
        sol = self.path("live.json")
        self.lcnctl("solution", job, "-o", sol, check_rc=0)
        rep = self.check(sol, g)
        self.assertIn("K = %d, nK = %d, C = %d" % (rep["K"], rep["nK"], rep["C"]), text)
        self.assertIn("(final)", text)

    def test_cancel_and_wait(self):
        g = self.gen("g40.json")
        job = self.lcnctl("submit", g, "--budget-s", "60", check_rc=0).stdout.strip()
        self.d.wait(job, ("running",))
        r = self.lcnctl("cancel", job, check_rc=0)
        self.assertIn(job, r.stdout)
        r = self.lcnctl("wait", job, check_rc=1)  # a cancelled job did not succeed
        self.assertIn("cancelled", r.stdout)
        r = self.lcnctl("cancel", job, check_rc=0)  # idempotent
        self.assertIn("cancelled", r.stdout)
        r = self.lcnctl("list", "--state", "cancelled", "--json", check_rc=0)
        self.assertIn(job, [j["id"] for j in json.loads(r.stdout)["jobs"]])
        r = self.lcnctl("list", check_rc=0)
        self.assertIn(job, r.stdout)

    def test_submit_from_a_finished_job(self):
        """--from ID is init_from: a warm start, refused for another graph."""
        g = self.gen("g40.json")
        first = self.lcnctl("submit", g, "--budget-s", "1", "--wait", "--json", check_rc=0)
        first = json.loads(first.stdout)
        r = self.lcnctl("submit", g, "--budget-s", "0.5", "--from", first["id"], "--wait",
                        "--json", check_rc=0)
        warm = json.loads(r.stdout)
        self.assertEqual(warm["state"], "succeeded")
        events = self.d.events(warm["id"])[0]
        start = next(e for e in events if e["type"] == "improve")
        self.assertLessEqual(start["best"]["K"], first["best"]["K"])
        other = self.gen("g41.json", nodes=41)
        r = self.lcnctl("submit", other, "--from", first["id"], check_rc=2)
        self.assertIn("init_from_unusable", r.stderr)
        self.assertIn("at init_from", r.stderr)
        r = self.lcnctl("submit", g, "--from", "latest", check_rc=2)
        self.assertIn("at init_from", r.stderr)

    def test_error_exits(self):
        g = self.gen("g40.json")
        r = self.lcnctl("submit", g, "--budget-s", "99999", check_rc=2)
        self.assertIn("limit_exceeded", r.stderr)
        self.assertIn("at budget_s", r.stderr)
        r = self.lcnctl("submit", g, "--name", "x" * 300, check_rc=2)
        self.assertIn("invalid_field", r.stderr)
        self.assertIn("at name", r.stderr)
        for args in (("get", "j9999999999999999"), ("solution", "j9999999999999999"),
                     ("watch", "j9999999999999999"), ("wait", "j9999999999999999"),
                     ("cancel", "j9999999999999999")):
            r = self.lcnctl(*args, check_rc=3)
            self.assertIn("not_found", r.stderr)
        r = self.lcnctl("submit", g, "--backend", "gpu", check_rc=2)  # this daemon has no GPU
        self.assertIn("HTTP 422", r.stderr)

    def test_bench(self):
        bdir = self.path("bench-in")
        os.makedirs(bdir)
        self.lcnctl("gen", "random", "--nodes", "25", "--seed", "1", "-o",
                    os.path.join(bdir, "r25.json"), check_rc=0)
        self.lcnctl("gen", "planted", "--nodes", "30", "--seed", "2", "-o",
                    os.path.join(bdir, "p30.json"), "--planted",
                    os.path.join(bdir, "sol-p30.json"), check_rc=0)
        targets = os.path.join(bdir, "targets.txt")
        with open(targets, "w") as f:
            f.write("# name K\nr25 1000\np30 0\nabsent 3\n")
        out = self.path("bench-out")
        r = self.lcnctl("bench", bdir, "--budget-s", "1", "--seeds", "2", "--target", targets,
                        "-o", out, check_rc=0)
        self.assertIn("p30", r.stdout)
        man = load(os.path.join(out, "manifest.json"))
        self.assertTrue(man["complete"])
        self.assertEqual(man["seeds"], [1, 2])
        self.assertEqual(man["budget_s"], 1.0)
        self.assertEqual(man["daemon"]["version"]["version"],
                         self.d.get("/version").json()["version"])
        self.assertEqual(man["command_line"][:2], ["lcnctl", "bench"])
        # (bench_check recomputes the input hashes with hashlib)
        self.assertEqual([i["name"] for i in man["inputs"]], ["p30", "r25"])  # sol-* skipped
        order = [(x["graph"], x["seed"]) for x in man["runs"]]
        self.assertEqual(order, [("p30", 1), ("r25", 1), ("p30", 2), ("r25", 2)])
        for run in man["runs"]:
            st = load(os.path.join(out, run["files"]) + ".status.json")
            self.assertEqual((st["id"], st["seed"]), (run["job"], run["seed"]))
            self.assertEqual(run["outcome"], "ok")
        # the summary against lcnctl check on every raw solution, recomputed
        bad, lines = bench_check.verify(LCNCTL, out)
        self.assertEqual(bad, [])
        self.assertEqual(len(lines), 4)
        summary = load(os.path.join(out, "summary.json"))
        self.assertEqual({g["graph"]: g["censored"] + g["successes"] for g in summary["graphs"]},
                         {"p30": 2, "r25": 2})
        self.assertEqual([g["successes"] for g in summary["graphs"] if g["graph"] == "r25"], [2])
        # ... and the re-derivation notices a summary that lies
        import shutil
        forged = self.path("bench-forged")
        shutil.copytree(out, forged)
        summary["graphs"][0]["best_tuple"]["K"] += 1
        with open(os.path.join(forged, "summary.json"), "w") as f:
            json.dump(summary, f)
        man["runs"][1]["tuple"]["C"] += 2
        with open(os.path.join(forged, "manifest.json"), "w") as f:
            json.dump(man, f)
        bad, _ = bench_check.verify(LCNCTL, forged)
        self.assertEqual(len(bad), 2, bad)
        with open(os.path.join(out, "summary.txt")) as f:
            self.assertIn("median", f.read())
        # an existing, non-empty output directory is refused
        self.lcnctl("bench", bdir, "--budget-s", "1", "--seeds", "1", "-o", out, check_rc=2)


class NoStreams(WithDaemon):
    daemon_args = ("--cpu-workers", "1", "--max-streams", "0")

    def test_watch_falls_back_to_polling(self):
        g = self.gen("g20.json", nodes=20)
        r = self.lcnctl("submit", g, "--budget-s", "1", "--wait", check_rc=0)
        self.assertIn("polling instead", r.stderr)
        self.assertIn("state      succeeded", r.stdout)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Lifecycle(unittest.TestCase):
    def test_watch_follows_a_job_across_a_restart(self):
        """SIGTERM checkpoints the running job and ends the stream without a
        terminal event; the daemon comes back on the same port and resumes
        the job (interrupted, queued, running); watch reconnects from its
        cursor and follows the job to its end."""
        with tempfile.TemporaryDirectory() as tmp:
            g = os.path.join(tmp, "g.json")
            subprocess.run([LCNCTL, "gen", "random", "--nodes", "40", "-o", g], check=True)
            port = free_port()
            listen = ["--listen", "127.0.0.1:%d" % port]
            d = Daemon("--cpu-workers", "1", "--checkpoint-interval-s", "0.2")
            try:
                d.start(extra=listen)
                url = "http://127.0.0.1:%d" % port
                r = self.run_lcnctl(url, "submit", g, "--budget-s", "4")
                self.assertEqual(r.returncode, 0, r.stderr)
                job = r.stdout.strip()
                w = subprocess.Popen([LCNCTL, "watch", job], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, LCN_SERVER=url))
                seen = []
                for line in w.stdout:  # until the watch has seen the run start
                    seen.append(line)
                    if "state      running" in line:
                        break
                self.assertEqual(d.stop(), 0)
                d.start(extra=listen)
                out, err = w.communicate(timeout=WAIT)
                out = "".join(seen) + out
                self.assertEqual(w.returncode, 0, out + err)
                states = [l.split()[-1] for l in out.splitlines() if "  state  " in l]
                self.assertEqual(states[:2], ["queued", "running"])
                self.assertIn("interrupted", states)
                self.assertEqual(states[-1], "succeeded")
                self.assertEqual(states.count("succeeded"), 1)
                self.assertIn(job + ": succeeded", out)
                self.assertEqual(d.stop(), 0)
            finally:
                d.cleanup()

    def run_lcnctl(self, url, *args):
        e = dict(os.environ, LCN_SERVER=url)
        return subprocess.run([LCNCTL, *args], capture_output=True, text=True, env=e,
                              timeout=WAIT * 3)

    def test_failed_job_and_unreachable(self):
        with tempfile.TemporaryDirectory() as tmp:
            g = os.path.join(tmp, "g.json")
            subprocess.run([LCNCTL, "gen", "random", "--nodes", "20", "-o", g], check=True)
            # the daemon's test hook: a fake GPU worker whose jobs hit a sticky error
            d = Daemon("--cpu-workers", "1")
            try:
                d.start(extra=["--backend", "auto", "--test-fake-gpu", "sticky"])
                url = "http://" + d.addr
                r = self.run_lcnctl(url, "submit", g, "--budget-s", "30", "--backend", "gpu")
                self.assertEqual(r.returncode, 0, r.stderr)
                job = r.stdout.strip()
                d.proc.wait(timeout=WAIT)  # the daemon exits so a supervisor restarts it
                r = self.run_lcnctl(url, "get", job)
                self.assertEqual(r.returncode, 4, r.stderr)
                self.assertIn("cannot reach " + url, r.stderr)
                d.start()
                url = "http://" + d.addr
                r = self.run_lcnctl(url, "wait", job)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertIn("failed", r.stdout)
                self.assertIn("gpu_fatal", r.stdout)
                r = self.run_lcnctl(url, "watch", job)
                self.assertEqual(r.returncode, 1)
                self.assertEqual(d.stop(), 0)
                r = self.run_lcnctl(url, "list")
                self.assertEqual(r.returncode, 4)
            finally:
                d.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
