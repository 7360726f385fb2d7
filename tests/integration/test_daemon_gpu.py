#!/usr/bin/env python3
"""lcnd with its GPU workers (CTest label "gpu"; exits 77, skipped, when the
daemon finds no usable GPU): the device probe, /readyz and /metrics, jobs
with backend gpu and auto, a cancel on the GPU, the solution checked by the
oracle, a clean SIGTERM."""

import sys
import time
import unittest

from lcnd_harness import Daemon, check_solution, gen_graph, need_binaries


class Gpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.g = gen_graph("random", 60, seed=9)
        cls.d = Daemon("--cpu-workers", "1", "--checkpoint-interval-s", "0.5")
        cls.d.start(extra=["--backend", "auto"])
        if "gpu" not in cls.d.get("/version").json()["backends"]:
            log = cls.d.log()
            cls.d.stop()
            cls.d.cleanup()
            print("no GPU worker: " + log)
            sys.exit(77)

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        cls.d.cleanup()
        assert rc == 0, rc

    def test_probe_and_metrics(self):
        r = self.d.get("/readyz").json()
        self.assertEqual(r["gpu"], "ok")
        text = self.d.get("/metrics").body.decode()
        mem = [l for l in text.splitlines() if l.startswith("lcn_gpu_memory_bytes ")]
        self.assertGreater(int(mem[0].split()[1]), 0)
        self.assertIn('lcn_workers{kind="gpu",state="idle"}', text)
        print(self.d.log())

    def test_gpu_and_auto_jobs(self):
        d = self.d
        for backend in ("gpu", "auto"):
            job = d.submit(self.g, budget_s=2.0, backend=backend, seed=3)
            s = d.wait(job)
            self.assertEqual(s["state"], "succeeded", s)
            self.assertEqual(s["backend"], "gpu", s)
            self.assertGreater(s["telemetry"]["evaluated"], 0)
            sol, rep = check_solution(self, d, job, self.g)
            print(backend, s["best"], s["evaluator"], s["telemetry"]["evaluated"],
                  "evaluated in", s["elapsed_s"], "s")
        cpu = d.submit(self.g, budget_s=1.0, backend="cpu")
        self.assertEqual(d.wait(cpu)["backend"], "cpu")

    def test_cancel_on_gpu(self):
        d = self.d
        job = d.submit(self.g, budget_s=60, backend="gpu")
        d.wait(job, ("running",))
        time.sleep(1.0)
        t0 = time.time()
        r = d.request("DELETE", "/jobs/" + job)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json()["state"], "cancelled")
        print("cancel answered after %.3f s" % (time.time() - t0))
        check_solution(self, d, job, self.g)


if __name__ == "__main__":
    unittest.main(verbosity=2)
