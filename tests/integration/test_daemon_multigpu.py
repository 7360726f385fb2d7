#!/usr/bin/env python3
"""lcnd with several GPU devices (issue 18; CTest label "gpu"). On one GPU,
`gpus = 0,0` opens two contexts on device 0 that stand in for two devices,
each with one workspace slot (`gpu_slots = 1`), so every scheduling case of
a multi-GPU box is exercised:

  * two jobs run at once, one on each device; /version, /readyz and
    /metrics show both devices (ordinal, name, UUID, state, per-device
    series);
  * a job across both devices (solver.gpus = 2): islands exchanging the
    elite, one valid solution, telemetry per device that sums to the
    job's; more devices than exist is refused with 422;
  * test_gpu_fault = 1 makes device 1's first launch fail as a sticky
    error would: device 1 is retired alone, its job is queued again from
    its last checkpoint and finishes on device 0 with a valid layout,
    /readyz stays ready ("degraded", lost_devices [1]), nothing is lost,
    the daemon keeps serving and exits 0 on SIGTERM.

Exits 77 (skipped) when the daemon finds no usable GPU. Every failure
message carries the daemon's log.

With LCN_FAKE_GPUS=1 the same tests run without a GPU (CTest
daemon_devices_fake, label integration): `test_fake_gpu = cpu` makes the two
stand-ins fake devices whose runs are the CPU engine, so the daemon's side
(scheduling over devices, the fault's re-queue, /readyz, /metrics,
/version, admission of solver.gpus) is checked everywhere; what only a real
device has (name, UUID, memory, the islands' telemetry) is checked on a
GPU only."""

import os
import sys
import time
import unittest

from lcnd_harness import LCND, WAIT, Daemon, check_solution, gen_graph, need_binaries

FAKE = os.environ.get("LCN_FAKE_GPUS") == "1"
STAND_INS = ["--backend", "auto", "--gpus", "0,0", "--gpu-slots", "1"] + \
    (["--test-fake-gpu", "cpu"] if FAKE else [])
BACKEND = "cpu" if FAKE else "gpu"  # what a fake device's run reports: the CPU engine


def start_daemon(*args, extra=()):
    d = Daemon("--cpu-workers", "1", "--checkpoint-interval-s", "0.5", *args)
    return d.start(extra=STAND_INS + list(extra))


def gpu_or_skip():
    """Exits 77 (skipped) unless lcnd serve finds a usable GPU here."""
    if not LCND:
        print("SKIP: LCND is not set to an lcnd binary")
        sys.exit(77)
    d = start_daemon()
    v = d.get("/version").json()
    log = d.log()
    d.stop()
    d.cleanup()
    if "gpu" not in v["backends"]:
        print("SKIP: no GPU worker (no usable CUDA device, or a build without CUDA): " +
              log[-500:])
        sys.exit(77)


def metric(text, name, device):
    """The value of series name{device="N"...} in a /metrics text."""
    pre = '%s{device="%d"' % (name, device)
    for line in text.splitlines():
        if line.startswith(pre):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError("no %s for device %d in /metrics" % (name, device))


class StandIns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.g = gen_graph("random", 80, seed=11)
        cls.d = start_daemon()

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        log = cls.d.log()
        cls.d.cleanup()
        assert rc == 0, "lcnd exit status %s; log:\n%s" % (rc, log[-3000:])

    def msg(self, what):
        return "%s\n--- lcnd log (tail):\n%s" % (what, self.d.log()[-3000:])

    def test_devices_listed(self):
        v = self.d.get("/version").json()
        devs = v["devices"]
        self.assertEqual(len(devs), 2, self.msg(v))
        self.assertEqual([x["index"] for x in devs], [0, 1])
        if FAKE:
            self.assertIsNone(devs[0]["ordinal"], devs)
        else:
            self.assertEqual(devs[0]["ordinal"], 0)
            self.assertEqual(devs[1]["ordinal"], 0)  # two contexts on one device
            self.assertEqual(devs[0]["uuid"], devs[1]["uuid"])
            self.assertTrue(devs[0]["uuid"].startswith("GPU-"), devs[0])
        r = self.d.get("/readyz")
        self.assertEqual(r.status, 200, self.msg(r.body))
        rz = r.json()
        self.assertEqual(rz["gpu"], "ok", self.msg(rz))
        self.assertEqual([x["state"] for x in rz["devices"]], ["ok", "ok"], self.msg(rz))
        self.assertEqual(rz["lost_devices"], [])
        text = self.d.get("/metrics").body.decode()
        for dev in (0, 1):
            self.assertEqual(metric(text, "lcn_gpu_device_up", dev), 1)
            if not FAKE:
                self.assertGreater(metric(text, "lcn_gpu_device_memory_bytes", dev), 0)
        print("devices:", devs)

    def test_two_jobs_at_once(self):
        d = self.d
        text0 = d.get("/metrics").body.decode()
        jobs0 = [metric(text0, "lcn_gpu_device_jobs_total", i) for i in (0, 1)]
        a = d.submit(self.g, budget_s=4.0, backend="gpu", seed=1)
        b = d.submit(self.g, budget_s=4.0, backend="gpu", seed=2)
        both = False
        deadline = time.time() + WAIT
        while time.time() < deadline and not both:
            sa, sb = d.status(a)["state"], d.status(b)["state"]
            if sa == "running" and sb == "running":
                rz = d.get("/readyz").json()
                both = [x["busy"] for x in rz["devices"]] == [1, 1]
                self.assertTrue(both, self.msg("both running but devices busy %s" % rz))
            elif sa not in ("queued", "running") or sb not in ("queued", "running"):
                break
            time.sleep(0.05)
        self.assertTrue(both, self.msg("the two jobs never ran at once: %s %s" %
                                       (d.status(a), d.status(b))))
        for job in (a, b):
            s = d.wait(job)
            self.assertEqual(s["state"], "succeeded", self.msg(s))
            self.assertEqual(s["backend"], BACKEND, self.msg(s))
            check_solution(self, d, job, self.g)
        text = d.get("/metrics").body.decode()
        for i in (0, 1):
            self.assertEqual(metric(text, "lcn_gpu_device_jobs_total", i), jobs0[i] + 1,
                             self.msg(text))
            self.assertGreater(metric(text, "lcn_gpu_device_evaluations_total", i), 0)
            self.assertEqual(metric(text, "lcn_gpu_device_busy", i), 0)

    def test_island_job(self):
        d = self.d
        r = d.request("POST", "/jobs", body={"graph": self.g, "backend": "gpu",
                                             "solver": {"gpus": 3}})
        self.assertEqual(r.status, 422, self.msg(r.body))
        self.assertEqual(r.json()["error"]["field"], "solver.gpus", r.body)
        text0 = d.get("/metrics").body.decode()
        jobs0 = [metric(text0, "lcn_gpu_device_jobs_total", i) for i in (0, 1)]
        job = d.submit(self.g, budget_s=5.0, backend="gpu", seed=4,
                       solver={"gpus": 2, "replicas": 32,
                               "tuning": "" if FAKE else "island_every=5,island_take=4"})
        s = d.wait(job, ("running",))
        rz = d.get("/readyz").json()
        self.assertEqual([x["busy"] for x in rz["devices"]], [1, 1], self.msg(rz))
        s = d.wait(job)
        self.assertEqual(s["state"], "succeeded", self.msg(s))
        text = d.get("/metrics").body.decode()
        for i in (0, 1):  # one run, on both devices
            self.assertEqual(metric(text, "lcn_gpu_device_jobs_total", i), jobs0[i] + 1,
                             self.msg(text))
        check_solution(self, d, job, self.g)
        if FAKE:
            return  # the CPU engine has no islands
        tel = s["telemetry"]
        devs = tel.get("devices")
        self.assertIsNotNone(devs, self.msg(s))
        self.assertEqual(sorted(x["device"] for x in devs), [0, 1], self.msg(s))
        for x in devs:
            self.assertGreater(x["evaluated"], 0, self.msg(s))
        self.assertEqual(sum(x["evaluated"] for x in devs), tel["evaluated"], self.msg(s))
        check_solution(self, d, job, self.g)
        print("island job:", s["best"], "devices", devs)


class FaultIsolation(unittest.TestCase):
    def test_fault_requeues_onto_the_other_device(self):
        need_binaries(self)
        g = gen_graph("random", 80, seed=12)
        d = start_daemon("--test-gpu-fault", "1", "--test-gpu-fault-ms", "1500")
        self.d = d
        try:
            self.check(d, g)
        finally:
            rc = d.stop()
            log = d.log()
            d.cleanup()
        self.assertEqual(rc, 0, "lcnd exit status %s; log:\n%s" % (rc, log[-3000:]))

    def msg(self, what):
        return "%s\n--- lcnd log (tail):\n%s" % (what, self.d.log()[-3000:])

    def check(self, d, g):
        jobs = [d.submit(g, budget_s=6.0, backend="gpu", seed=s) for s in (1, 2)]
        done = [d.wait(j, timeout=WAIT * 2) for j in jobs]
        for s in done:
            self.assertEqual(s["state"], "succeeded", self.msg(s))
            self.assertEqual(s["backend"], BACKEND, self.msg(s))
        moved = [s for s in done if s["resumes"] == 1]
        self.assertEqual(len(moved), 1, self.msg("one job should have been re-queued: %s" % done))
        m = moved[0]
        # the resumed run had what was left of the budget, not a new one
        self.assertLessEqual(m["elapsed_s"], 6.0 + 2.0, self.msg(m))
        evs, _ = d.events(m["id"])
        states = [e.get("state") for e in evs if e.get("type") == "state"]
        self.assertIn("interrupted", states, self.msg(evs))
        i = states.index("interrupted")
        self.assertEqual(states[i + 1:i + 3], ["queued", "running"], self.msg(states))
        self.assertTrue(any(e.get("type") == "checkpoint" for e in evs), self.msg(evs))
        for j in jobs:
            check_solution(self, d, j, g)
        self.assertIsNone(d.proc.poll(), self.msg("the daemon exited"))
        r = d.get("/readyz")
        self.assertEqual(r.status, 200, self.msg(r.body))
        rz = r.json()
        self.assertTrue(rz["ready"], self.msg(rz))
        self.assertEqual(rz["gpu"], "degraded", self.msg(rz))
        self.assertEqual(rz["lost_devices"], [1], self.msg(rz))
        self.assertEqual([x["state"] for x in rz["devices"]], ["ok", "lost"], self.msg(rz))
        text = d.get("/metrics").body.decode()
        self.assertEqual(metric(text, "lcn_gpu_device_up", 0), 1)
        self.assertEqual(metric(text, "lcn_gpu_device_up", 1), 0)
        self.assertEqual(metric(text, "lcn_gpu_device_requeued_total", 1), 1, self.msg(text))
        self.assertIn("lost under this job", d.log())
        # the healthy device still takes work; a job across both no longer fits
        k = d.submit(g, budget_s=1.0, backend="gpu", seed=3)
        self.assertEqual(d.wait(k)["state"], "succeeded", self.msg(d.status(k)))
        r = d.request("POST", "/jobs", body={"graph": g, "backend": "gpu", "solver": {"gpus": 2}})
        self.assertEqual(r.status, 422, self.msg(r.body))
        print("re-queued job:", m["id"], "best", m["best"], "elapsed", m["elapsed_s"])


class WorkspaceSize(unittest.TestCase):
    """gpu_max_nodes and gpu_max_edges size every device's workspace slots
    (issue 17): a graph past them is refused at admission under backend=gpu
    (422 backend_unavailable, the slot's size in the message) and runs on
    the CPU pool under backend=auto, no device taking it."""

    def test_graph_past_the_slot(self):
        need_binaries(self)
        d = start_daemon(extra=["--gpu-max-nodes", "50", "--gpu-max-edges", "100000"])
        self.addCleanup(d.cleanup)
        g = gen_graph("random", 80, seed=11)
        r = d.request("POST", "/jobs", body={"graph": g, "backend": "gpu", "budget_s": 1.0})
        self.assertEqual(r.status, 422, r.body)
        err = r.json()["error"]
        self.assertEqual((err["code"], err["field"]), ("backend_unavailable", "backend"), err)
        self.assertIn("exceeds the gpu slot (50 nodes", err["message"])
        job = d.submit(g, budget_s=1.0, backend="auto", seed=1)
        s = d.wait(job)
        self.assertEqual((s["state"], s["backend"]), ("succeeded", "cpu"), s)
        check_solution(self, d, job, g)
        text = d.get("/metrics").body.decode()
        for i in (0, 1):
            self.assertEqual(metric(text, "lcn_gpu_device_jobs_total", i), 0, text)
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    if not FAKE:
        gpu_or_skip()
    unittest.main(verbosity=2)
