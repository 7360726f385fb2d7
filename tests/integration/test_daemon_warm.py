#!/usr/bin/env python3
"""Warm starts (issue 21 item 4): POST /jobs with init_from starts from the
named job's best validated layout. A warm start from a finished job reports
a K no worse than that job's final K as its first improvement, early in its
budget; the graph may come in another order with other unknown fields but
must be the same problem; an unknown job, another graph, or a job without a
validated layout is 422 init_from_unusable at init_from; a running job's
checkpoint serves too; and the stored request is self-contained, so a warm
job recovered by a restarted daemon still starts from that layout."""

import copy
import random
import time
import unittest

from lcnd_harness import WAIT, Daemon, DaemonCase, check_solution, gen_graph, need_binaries

BLOCKER_S = 30  # a job that keeps a worker busy until it is cancelled


def reordered(g, seed):
    """The same problem written differently: nodes and edges shuffled, each
    edge's ends swapped, no coordinates, an unknown field."""
    rnd = random.Random(seed)
    h = copy.deepcopy(g)
    h["nodes"] = [{"id": n["id"], "label": "v%d" % n["id"]} for n in h["nodes"]]
    rnd.shuffle(h["nodes"])
    h["edges"] = [{"source": e["target"], "target": e["source"]} for e in h["edges"]]
    rnd.shuffle(h["edges"])
    h["note"] = "same graph, other order"
    return h


def first_event(d, job, kind):
    """The job's first event of this type, once there is one."""
    deadline = time.time() + WAIT
    while time.time() < deadline:
        events, _ = d.events(job)
        ev = [e for e in events if e["type"] == kind]
        if ev:
            return ev[0]
        time.sleep(0.02)
    raise AssertionError("job %s reported no %s event" % (job, kind))


def first_improve(d, job):
    return first_event(d, job, "improve")


def first_checkpoint(d, job):
    return first_event(d, job, "checkpoint")


class Warm(DaemonCase):
    ARGS = ("--cpu-workers", "2", "--checkpoint-interval-s", "0.2", "--max-budget-s", "60")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.g = gen_graph("random", 80, seed=11)
        cls.first = cls.d.submit(cls.g, budget_s=3.0, seed=1)
        cls.first_status = cls.d.wait(cls.first)

    def refused(self, body, status, code, msg):
        r = self.d.request("POST", "/jobs", body=body)
        self.assertEqual(r.status, status, r.body)
        err = r.json()["error"]
        self.assertEqual(err["code"], code)
        self.assertEqual(err["field"], "init_from")
        self.assertIn(msg, err["message"])

    def test_warm_start_begins_at_the_first_jobs_k(self):
        d, s = self.d, self.first_status
        self.assertEqual(s["state"], "succeeded")
        k = s["best"]["K"]
        # the graph is hard enough that a cold start begins above k, so the
        # warm job's first K below tells the two apart
        self.assertGreater(first_improve(d, self.first)["best"]["K"], k)
        g = reordered(self.g, 5)
        # a budget whose start phase (start_share, 15 %: 3 s) outlasts 2 s:
        # the input start is reported as soon as it is counted, not after it
        warm = d.submit(g, budget_s=20.0, seed=2, init_from=self.first, name="warm")
        ev = first_improve(d, warm)
        # the start is the first job's layout: its K at once, not a cold start's
        self.assertLessEqual(ev["best"]["K"], k, ev)
        self.assertLess(ev["elapsed_s"], 2.0, ev)
        first_checkpoint(d, warm)  # the search has begun: stop it there
        self.assertEqual(d.request("DELETE", "/jobs/" + warm).status, 200)
        ws = d.wait(warm)
        self.assertEqual(ws["state"], "cancelled")
        self.assertLessEqual(ws["best"]["K"], k)
        # the warm job's document is its own (order, unknown fields), checked by the oracle
        sol, rep = check_solution(self, d, warm, g)
        self.assertEqual([n["id"] for n in sol["nodes"]], [n["id"] for n in g["nodes"]])
        self.assertEqual(sol["edges"], g["edges"])
        self.assertEqual(sol["note"], g["note"])
        self.assertLessEqual(rep["K"], k)

    def test_refusals(self):
        d = self.d
        other = gen_graph("random", 81, seed=11)
        self.refused({"graph": other, "init_from": self.first}, 422, "init_from_unusable",
                     "not the graph of job %s: 81 nodes" % self.first)
        g = copy.deepcopy(self.g)
        g["width"] += 1
        self.refused({"graph": g, "init_from": self.first}, 422, "init_from_unusable", "bounds")
        g = copy.deepcopy(self.g)
        present = {frozenset((e["source"], e["target"])) for e in g["edges"]}
        u, v = next((u, v) for u in range(80) for v in range(u + 1, 80)
                    if frozenset((u, v)) not in present)
        g["edges"][-1] = {"source": u, "target": v}
        self.refused({"graph": g, "init_from": self.first}, 422, "init_from_unusable",
                     "edge %d (%d-%d) is not in job %s's graph"
                     % (len(g["edges"]) - 1, u, v, self.first))
        self.refused({"graph": self.g, "init_from": "j0000000000009999"}, 422,
                     "init_from_unusable", "no job j0000000000009999")
        self.refused({"graph": self.g, "init_from": "first"}, 400, "invalid_field",
                     "is not a job id")
        self.refused({"graph": self.g, "init_from": 1}, 400, "invalid_field", "expected a string")

    def test_sources_without_layout_and_running_source(self):
        d = self.d
        # both workers busy: a third job stays queued, without a layout
        busy = [d.submit(self.g, budget_s=BLOCKER_S, seed=10 + i) for i in range(2)]
        for b in busy:
            d.wait(b, states=("running",))
        queued = d.submit(self.g, budget_s=1.0)
        self.assertEqual(d.status(queued)["state"], "queued")
        self.refused({"graph": self.g, "init_from": queued}, 422, "init_from_unusable",
                     "job %s has no validated layout yet (queued)" % queued)
        # cancelled before it ran: terminal, and still no layout (read from the store)
        self.assertEqual(d.request("DELETE", "/jobs/" + queued).status, 200)
        self.refused({"graph": self.g, "init_from": queued}, 422, "init_from_unusable",
                     "job %s has no validated layout" % queued)
        # a running job serves its latest checkpoint
        ck = first_checkpoint(d, busy[0])["best"]["K"]
        warm = d.submit(self.g, budget_s=0.5, init_from=busy[0])
        for b in busy:
            self.assertEqual(d.request("DELETE", "/jobs/" + b).status, 200)
        ws = d.wait(warm)
        self.assertEqual(ws["state"], "succeeded")
        self.assertLessEqual(first_improve(d, warm)["best"]["K"], ck)


class WarmRecovery(unittest.TestCase):
    """A queued warm job survives kill -9: the restarted daemon re-parses
    its stored request, which holds the layout itself."""

    def setUp(self):
        need_binaries(self)
        self.d = Daemon("--cpu-workers", "1", "--checkpoint-interval-s", "0.2",
                        "--max-budget-s", "60").start()

    def tearDown(self):
        self.d.cleanup()

    def test_recovered_warm_job_starts_from_the_layout(self):
        d = self.d
        g = gen_graph("random", 80, seed=12)
        first = d.submit(g, budget_s=2.0, seed=1)
        k = d.wait(first)["best"]["K"]
        self.assertGreater(first_improve(d, first)["best"]["K"], k)  # cold starts above k
        blocker = d.submit(g, budget_s=BLOCKER_S, seed=3)
        d.wait(blocker, states=("running",))
        warm = d.submit(reordered(g, 9), budget_s=1.0, seed=4, init_from=first)
        self.assertEqual(d.status(warm)["state"], "queued")
        d.kill9()
        d.start()
        self.assertEqual(d.request("DELETE", "/jobs/" + blocker).status, 200)
        ws = d.wait(warm)
        self.assertEqual(ws["state"], "succeeded")
        self.assertLessEqual(first_improve(d, warm)["best"]["K"], k)
        self.assertLessEqual(ws["best"]["K"], k)
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
