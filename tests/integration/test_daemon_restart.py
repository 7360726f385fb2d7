#!/usr/bin/env python3
"""lcnd durability: kill -9 during a job and restart (finished results
intact, nothing lost, the running job resumes from its checkpoint with the
rest of its budget, or is marked interrupted when resuming is off), and a
clean SIGTERM (exit 0, running job checkpointed and resumed)."""

import signal
import time
import unittest

from lcnd_harness import Daemon, check_solution, gen_graph, need_binaries, tiny_graph


def wait_checkpoint(d, job, min_elapsed, timeout=60):
    """Waits until the job has a durable checkpoint taken after min_elapsed s."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        events, _ = d.events(job)
        cks = [e for e in events if e["type"] == "checkpoint" and e["elapsed_s"] >= min_elapsed]
        if cks:
            return events
        time.sleep(0.05)
    raise AssertionError("no checkpoint after %.1f s" % min_elapsed)


class Restart(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.g = gen_graph("random", 40, seed=11)

    def test_kill9_resume(self):
        d = Daemon("--cpu-workers", "1", "--checkpoint-interval-s", "0.2")
        try:
            d.start()
            done = d.submit(self.g, budget_s=0.5, name="done")
            sd = d.wait(done)
            self.assertEqual(sd["state"], "succeeded")
            sol_before = d.get("/jobs/%s/solution" % done).body
            ev_before, _ = d.events(done)
            cancelled = d.submit(self.g, budget_s=30)
            d.wait(cancelled, ("running",))
            d.request("DELETE", "/jobs/" + cancelled)
            job = d.submit(self.g, budget_s=3.0, name="victim")
            queued = d.submit(tiny_graph(), budget_s=0.2, name="behind")
            d.wait(job, ("running",))
            seen = wait_checkpoint(d, job, 0.6)
            ids_before = [j["id"] for j in d.get("/jobs?limit=500").json()["jobs"]]
            d.kill9()

            d.start()
            # nothing disappeared
            self.assertEqual([j["id"] for j in d.get("/jobs?limit=500").json()["jobs"]],
                             ids_before)
            # finished results are intact and served byte for byte
            self.assertEqual(d.status(done), sd)
            self.assertEqual(d.get("/jobs/%s/solution" % done).body, sol_before)
            self.assertEqual(d.events(done)[0], ev_before)
            self.assertEqual(d.status(cancelled)["state"], "cancelled")
            # the running job resumes from its checkpoint with the rest of its budget
            s = d.wait(job)
            self.assertEqual(s["state"], "succeeded", s)
            self.assertEqual(s["resumes"], 1)
            self.assertEqual(s["stop_reason"], "deadline")
            self.assertGreater(s["elapsed_s"], 2.0)
            self.assertLess(s["elapsed_s"], 3.0 + 3.0)
            events, _ = d.events(job)
            self.assertEqual(events[:len(seen)], seen)  # what was reported is still there
            states = [e["state"] for e in events if e["type"] == "state"]
            self.assertEqual(states, ["queued", "running", "interrupted", "queued", "running",
                                      "succeeded"])
            # the resumed run starts from the checkpoint: its first improvement is
            # no worse than the last checkpoint before the kill
            ck = [e for e in seen if e["type"] == "checkpoint"][-1]
            i = [k for k, e in enumerate(events) if e.get("state") == "interrupted"][0]
            resumed_improves = [e for e in events[i:] if e["type"] == "improve"]
            if resumed_improves:
                t = lambda e: (e["best"]["K"], e["best"]["nK"], e["best"]["Phi"], e["best"]["C"])
                self.assertLessEqual(t(resumed_improves[0]), t(ck))
            check_solution(self, d, job, self.g)
            self.assertEqual(d.wait(queued)["state"], "succeeded")
            self.assertEqual(d.stop(), 0)
        finally:
            d.cleanup()

    def test_kill9_no_resume(self):
        d = Daemon("--cpu-workers", "1", "--checkpoint-interval-s", "0.2")
        try:
            d.start()
            job = d.submit(self.g, budget_s=30)
            d.wait(job, ("running",))
            wait_checkpoint(d, job, 0.3)
            d.kill9()
            d.start(extra=["--resume-interrupted", "false"])
            s = d.status(job)
            self.assertEqual(s["state"], "interrupted")
            self.assertEqual(s["stop_reason"], "interrupted")
            self.assertEqual(s["resumes"], 0)
            self.assertIsNotNone(s["finished_at"])
            sol, _ = check_solution(self, d, job, self.g)  # the checkpoint is served
            self.assertTrue(sol["lcn"]["final"])
            self.assertEqual(d.stop(), 0)
        finally:
            d.cleanup()

    def test_kill9_resume_limit(self):
        """A job found running after max_resumes resumes stays interrupted
        (the fourth probe: one killed before its first checkpoint, again and
        again, was resumed at every restart with its whole budget)."""
        d = Daemon("--cpu-workers", "1", "--checkpoint-interval-s", "0.2", "--max-resumes", "1")
        try:
            d.start()
            job = d.submit(self.g, budget_s=60)
            d.wait(job, ("running",))
            d.kill9()
            d.start()
            s = d.wait(job, ("running",))
            self.assertEqual(s["resumes"], 1)
            d.kill9()
            d.start()
            s = d.status(job)
            self.assertEqual(s["state"], "interrupted", s)
            self.assertEqual(s["stop_reason"], "interrupted")
            self.assertEqual(s["resumes"], 1)
            self.assertEqual(d.stop(), 0)
        finally:
            d.cleanup()

    def test_sigterm_checkpoints_and_resumes(self):
        d = Daemon("--cpu-workers", "1", "--checkpoint-interval-s", "5")
        try:
            d.start()
            job = d.submit(self.g, budget_s=4.0)
            waiting = d.submit(tiny_graph(), budget_s=0.1)
            d.wait(job, ("running",))
            # the engine's start phase first (its validated start is the first
            # checkpoint; on a loaded 2-core machine it can outlast a fixed
            # 0.5 s, and a stop during it leaves nothing to store), then 0.5 s
            # of annealing
            first = None
            deadline = time.time() + 10
            while first is None and time.time() < deadline:
                events, _ = d.events(job)
                first = next((e["elapsed_s"] for e in events if e["type"] == "checkpoint"), None)
                time.sleep(0.02)
            self.assertIsNotNone(first, "no checkpoint within 10 s")
            time.sleep(0.5)
            t0 = time.time()
            rc = d.stop(signal.SIGTERM)
            self.assertEqual(rc, 0, d.read_stderr())
            self.assertLess(time.time() - t0, 20)
            self.assertIn("stopping: SIGTERM", d.log())
            d.start()
            s0 = d.status(job)
            self.assertIn(s0["state"], ("queued", "running", "succeeded"))
            # the shutdown stored the engine's final best as a checkpoint
            events, _ = d.events(job)
            self.assertTrue(any(e["type"] == "checkpoint" and e["elapsed_s"] > first + 0.3
                                for e in events), (first, events))
            s = d.wait(job)
            self.assertEqual(s["state"], "succeeded")
            self.assertEqual(s["resumes"], 1)
            self.assertLess(s["elapsed_s"], 4.0 + 3.0)
            check_solution(self, d, job, self.g)
            self.assertEqual(d.wait(waiting)["state"], "succeeded")
            self.assertEqual(d.stop(), 0)
        finally:
            d.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
