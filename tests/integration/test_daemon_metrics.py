#!/usr/bin/env python3
"""GET /metrics against a real daemon: the job timings (queue wait, run
time, time to target), the finished-jobs counters by outcome and the HTTP
latency by route and method (docs/API.md, /metrics).

Every request the test makes is tallied by (route, method) on the client
side; the daemon's histograms must count exactly those. Nothing asserts
how fast anything was, only what was counted and that the series are
well-formed Prometheus histograms (cumulative, monotone buckets ending in
+Inf, _count equal to the +Inf bucket).
"""

import collections
import math
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lcnd_harness import Daemon, gen_graph, need_binaries, tiny_graph  # noqa: E402

JOB_BOUNDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
              120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400]
HTTP_BOUNDS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
               1, 2.5, 5, 10]
# The route table (server/api.c api_routes[]), most specific first.
ROUTES = [("/jobs/{id}/progress", r"^/jobs/[^/]+/progress$"),
          ("/jobs/{id}/solution", r"^/jobs/[^/]+/solution$"),
          ("/jobs/{id}", r"^/jobs/[^/]+$"), ("/jobs", r"^/jobs$"), ("/healthz", r"^/healthz$"),
          ("/readyz", r"^/readyz$"), ("/metrics", r"^/metrics$"), ("/version", r"^/version$"),
          ("/openapi.json", r"^/openapi\.json$"), ("/", r"^/$")]
KNOWN_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")
SERIES = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def route_of(method, path):
    path = path.split("?", 1)[0]
    for pattern, rx in ROUTES:
        if re.match(rx, path):
            allowed = {"/jobs": ("GET", "HEAD", "POST"), "/jobs/{id}": ("GET", "HEAD", "DELETE")}
            if method in allowed.get(pattern, ("GET", "HEAD")):
                return pattern
    return "none"


class TallyDaemon(Daemon):
    """A Daemon that counts the requests it sends by (route, method label)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.tally = collections.Counter()

    def request(self, method, path, **kw):
        r = super().request(method, path, **kw)
        label = method if method in KNOWN_METHODS else "other"
        self.tally[(route_of(method, path), label)] += 1
        return r


def parse(text):
    """{family: {"type": t, "help": h}}, [(name, {labels}, value)]"""
    families, series = {}, []
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, help_ = line[7:].partition(" ")
            families.setdefault(name, {})["help"] = help_
        elif line.startswith("# TYPE "):
            name, _, typ = line[7:].partition(" ")
            families.setdefault(name, {})["type"] = typ
        elif line:
            m = SERIES.match(line)
            assert m, line
            series.append((m.group(1), dict(LABEL.findall(m.group(2) or "")),
                           float(m.group(3))))
    return families, series


class MetricsTest(unittest.TestCase):
    def setUp(self):
        need_binaries(self)
        self.d = TallyDaemon().start()

    def tearDown(self):
        self.d.stop()
        self.d.cleanup()

    def scrape(self):
        r = self.d.get("/metrics")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.header("Content-Type").startswith("text/plain; version=0.0.4"))
        return parse(r.body.decode())

    def histograms(self, families, series, name, bounds):
        """The series of histogram `name` by their labels (without le), each
        checked: le exactly `bounds` then +Inf, cumulative and monotone,
        _count equal to the +Inf bucket. Returns {labels: (count, sum)}."""
        self.assertEqual(families[name]["type"], "histogram", name)
        self.assertTrue(families[name]["help"], name)
        buckets = collections.defaultdict(list)
        sums, counts = {}, {}
        for n, labels, v in series:
            key = tuple(sorted((k, x) for k, x in labels.items() if k != "le"))
            if n == name + "_bucket":
                buckets[key].append((labels["le"], v))
            elif n == name + "_sum":
                sums[key] = v
            elif n == name + "_count":
                counts[key] = v
        self.assertTrue(buckets, name)
        self.assertEqual(set(buckets), set(sums), name)
        self.assertEqual(set(buckets), set(counts), name)
        out = {}
        for key, bs in buckets.items():
            les = [le for le, _ in bs]
            self.assertEqual(les, ["%g" % b for b in bounds] + ["+Inf"], (name, key))
            values = [v for _, v in bs]
            self.assertEqual(values, sorted(values), (name, key, "not cumulative"))
            self.assertEqual(values[-1], counts[key], (name, key, "+Inf != _count"))
            self.assertTrue(counts[key] == 0 or sums[key] >= 0, (name, key))
            out[key] = (counts[key], sums[key])
        return out

    def test_jobs_and_http(self):
        d = self.d
        fam, ser = self.scrape()  # before any job: everything at 0
        finished = {lb["outcome"]: v for n, lb, v in ser if n == "lcn_jobs_finished_total"}
        self.assertEqual(fam["lcn_jobs_finished_total"]["type"], "counter")
        self.assertEqual(finished, {"succeeded": 0, "failed": 0, "cancelled": 0,
                                    "interrupted": 0})
        for h in ("lcn_job_queue_wait_seconds", "lcn_job_run_seconds",
                  "lcn_job_time_to_target_seconds"):
            self.assertEqual(self.histograms(fam, ser, h, JOB_BOUNDS), {(): (0, 0)})

        # a job with a target it reaches (two crossing edges: K 0 at once)
        a = d.submit(tiny_graph(), budget_s=20, seed=1, target_k=0, stop_at_target=True)
        sa = d.wait(a)
        self.assertEqual(sa["state"], "succeeded")
        self.assertIsNotNone(sa["time_to_target_s"])
        # a job without a target, to its short budget
        c = d.submit(tiny_graph(), budget_s=0.3, seed=2)
        self.assertEqual(d.wait(c)["state"], "succeeded")
        # a job cancelled while it runs
        b = d.submit(gen_graph(nodes=300, seed=3), budget_s=60, seed=3)
        d.wait(b, states=("running",))
        self.assertIn(d.request("DELETE", "/jobs/" + b).status, (200, 202))
        self.assertEqual(d.wait(b)["state"], "cancelled")
        # answers without a route: 404 by GET, a method outside the list
        self.assertEqual(d.get("/nothing/here").status, 404)
        self.assertEqual(d.request("BREW", "/nothing").status, 404)
        self.assertEqual(d.request("HEAD", "/healthz").status, 200)

        tally = dict(d.tally)  # what the daemon must have counted (/metrics: one scrape)
        fam, ser = self.scrape()
        finished = {lb["outcome"]: v for n, lb, v in ser if n == "lcn_jobs_finished_total"}
        self.assertEqual(finished, {"succeeded": 2, "failed": 0, "cancelled": 1,
                                    "interrupted": 0})
        qw = self.histograms(fam, ser, "lcn_job_queue_wait_seconds", JOB_BOUNDS)
        run = self.histograms(fam, ser, "lcn_job_run_seconds", JOB_BOUNDS)
        ttt = self.histograms(fam, ser, "lcn_job_time_to_target_seconds", JOB_BOUNDS)
        self.assertEqual(qw[()][0], 3)
        self.assertEqual(run[()][0], 3)
        self.assertGreater(run[()][1], 0)
        self.assertEqual(ttt[()][0], 1)  # only a reached it
        # the status rounds it to the microsecond
        self.assertTrue(math.isclose(ttt[()][1], sa["time_to_target_s"], abs_tol=2e-6),
                        (ttt, sa["time_to_target_s"]))

        lat = self.histograms(fam, ser, "lcn_http_request_duration_seconds", HTTP_BOUNDS)
        seen = {(dict(k)["route"], dict(k)["method"]): v[0] for k, v in lat.items()}
        for key, n in tally.items():
            self.assertEqual(seen.get(key), n, (key, seen))
        # every other series is a route's own method, at 0 (the routes are
        # those the daemon documents: openapi_contract holds them equal)
        doc = self.d.get("/openapi.json").json()
        own = {(path, m.upper()) for path, ops in doc["paths"].items() for m in ops
               if m.upper() in KNOWN_METHODS}
        for key, n in seen.items():
            if key not in tally:
                self.assertIn(key, own)
                self.assertEqual(n, 0, key)
        self.assertEqual(seen[("none", "other")], 1)
        self.assertEqual(seen[("/healthz", "HEAD")], 1)
        self.assertEqual(seen[("/metrics", "GET")], 1)  # the first scrape; not this one

        # the HTTP answers counted by code agree with the latency counts
        codes = sum(v for n, lb, v in ser if n == "lcn_http_responses_total")
        self.assertEqual(codes, sum(seen.values()))


if __name__ == "__main__":
    unittest.main()
