#!/usr/bin/env python3
"""docs/openapi.json against a real lcnd (issue 21 item 3): the daemon serves
the document byte for byte at GET /openapi.json; the routes of the table in
server/api.c and the operations of the document are the same set, and a
probe of each one reaches a handler, while other methods get 405 and other
paths 404; and real answers (a submit, bad JSON, an unknown field, an
unknown job, no token, a full queue, the solution of a queued job, DELETE,
...) carry a status the document lists for that operation, the headers it
marks required, and a body that validates against the documented schema
(jsonschema, Debian's python3-jsonschema; a small structural check of the
same keywords when it is missing).

The document's validity as OpenAPI 3.1 is the CTest openapi_valid
(tools/openapi/validate.mjs)."""

import json
import os
import re
import time
import unittest

from lcnd_harness import Daemon, gen_graph, need_binaries, tiny_graph

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DOC_PATH = os.path.join(ROOT, "docs", "openapi.json")
METHODS = ("get", "post", "put", "patch", "delete")

try:
    import jsonschema
except ImportError:  # the structural check below stands in
    jsonschema = None


def api_routes():
    """(METHOD, pattern) of every row of api_routes[] in server/api.c."""
    with open(os.path.join(ROOT, "server", "api.c")) as f:
        src = f.read()
    m = re.search(r"api_routes\[\]\s*=\s*\{(.*?)\n\};", src, re.S)
    assert m, "no api_routes[] table in server/api.c"
    rows = re.findall(r'\{\s*"([A-Z]+)"\s*,\s*"([^"]+)"', m.group(1))
    assert rows, "api_routes[] has no rows"
    return {(meth, path) for meth, path in rows}


def structural_errors(schema, v, root, where="$"):
    """The JSON Schema keywords docs/openapi.json uses, checked plainly:
    a list of error strings (empty when v conforms)."""
    if "$ref" in schema:
        node = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        errs = structural_errors(node, v, root, where)
        if errs:
            return errs
    types = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    t = schema.get("type")
    if t == "integer" and (not isinstance(v, int) or isinstance(v, bool)):
        return ["%s: not an integer" % where]
    if t == "number" and (not isinstance(v, (int, float)) or isinstance(v, bool)):
        return ["%s: not a number" % where]
    if t in types and not isinstance(v, types[t]):
        return ["%s: not %s" % (where, t)]
    if "const" in schema and v != schema["const"]:
        return ["%s: %r is not %r" % (where, v, schema["const"])]
    if "enum" in schema and v not in schema["enum"]:
        return ["%s: %r not in %r" % (where, v, schema["enum"])]
    errs = []
    for sub in schema.get("allOf", []):
        errs += structural_errors(sub, v, root, where)
    if "oneOf" in schema:
        ok = [s for s in schema["oneOf"] if not structural_errors(s, v, root, where)]
        if len(ok) != 1:
            errs.append("%s: matches %d of oneOf" % (where, len(ok)))
    if isinstance(v, dict):
        props = schema.get("properties", {})
        errs += ["%s: %s missing" % (where, k) for k in schema.get("required", []) if k not in v]
        for k, x in v.items():
            if k in props:
                errs += structural_errors(props[k], x, root, "%s.%s" % (where, k))
            elif schema.get("additionalProperties") is False:
                errs.append("%s: unexpected %s" % (where, k))
    if isinstance(v, list) and "items" in schema:
        for i, x in enumerate(v):
            errs += structural_errors(schema["items"], x, root, "%s[%d]" % (where, i))
    return errs


class Contract(unittest.TestCase):
    TOKEN = "openapi-token-0123456789"

    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        with open(DOC_PATH, "rb") as f:
            cls.raw = f.read()
        cls.doc = json.loads(cls.raw)
        cls.g = gen_graph("random", 40, seed=11)
        cls.d = Daemon("--cpu-workers", "1", "--max-queued", "2", "--retry-after-s", "3",
                       "--max-body-bytes", "100000", "--max-budget-s", "120",
                       "--checkpoint-interval-s", "0.2", token=cls.TOKEN)
        tf = os.path.join(cls.d.dir, "token")
        with open(tf, "w") as f:
            f.write(cls.TOKEN + "\n")
        cls.d.start(extra=["--token-file", tf])
        cls.done = cls.d.submit(tiny_graph(), budget_s=0.2)  # a finished job to probe
        cls.d.wait(cls.done)

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        cls.d.cleanup()
        assert rc == 0, rc

    # ---- the document ----
    def resolve(self, ref):
        node = self.doc
        for part in ref.lstrip("#/").split("/"):
            node = node[part]
        return node

    def response_of(self, method, route, status):
        """The documented response of the operation for status, or None."""
        op = self.doc["paths"][route][method.lower()]
        r = op["responses"].get(str(status))
        if r is not None and "$ref" in r:
            r = self.resolve(r["$ref"])
        return r

    def check_body(self, schema, value, what):
        if jsonschema is not None:
            root = dict(schema)
            root["components"] = self.doc["components"]
            errs = [e.message for e in
                    jsonschema.Draft202012Validator(root).iter_errors(value)]
        else:
            errs = structural_errors(schema, value, self.doc)
        self.assertEqual(errs, [], "%s: %s" % (what, json.dumps(value)[:400]))

    def check_answer(self, method, route, r, expect=None):
        """r is documented for the operation (method, route): its status,
        its required headers and its body."""
        what = "%s %s -> %d" % (method, route, r.status)
        if expect is not None:
            self.assertEqual(r.status, expect, "%s: %s" % (what, r.body[:300]))
        doc_r = self.response_of(method, route, r.status)
        self.assertIsNotNone(doc_r, "%s: status not documented for the operation" % what)
        self.check_response(doc_r, r, what)

    def check_response(self, doc_r, r, what):
        for name, h in doc_r.get("headers", {}).items():
            if h.get("required"):
                self.assertIsNotNone(r.header(name), "%s: no %s header" % (what, name))
        ctype = r.header("Content-Type")
        content = doc_r.get("content", {})
        media = content.get(ctype) or content.get((ctype or "").split(";")[0].strip())
        self.assertIsNotNone(media, "%s: Content-Type %s is not documented" % (what, ctype))
        if ctype.startswith("application/json"):
            self.check_body(media["schema"], json.loads(r.body), what)

    # ---- tests ----
    def test_served_document_is_the_file(self):
        r = self.d.get("/openapi.json")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.header("Content-Type"), "application/json")
        self.assertEqual(r.body, self.raw)
        self.assertEqual(self.doc["openapi"], "3.1.0")

    def test_routes_are_the_operations(self):
        documented = {(m.upper(), p) for p, item in self.doc["paths"].items()
                      for m in item if m in METHODS}
        served = api_routes()
        self.assertEqual(served - documented, set(), "routes served but not documented")
        self.assertEqual(documented - served, set(), "operations documented but not served")

    def probe_path(self, route, job):
        return route.replace("{id}", job)

    def test_every_operation_reaches_a_handler(self):
        d = self.d
        for route, item in self.doc["paths"].items():
            for m in [m for m in item if m in METHODS]:
                body = {"graph": tiny_graph(), "budget_s": 0.1} if m == "post" else None
                r = d.request(m.upper(), self.probe_path(route, self.done), body=body)
                self.assertNotIn(r.status, (404, 405),
                                 "%s %s: %d %s" % (m, route, r.status, r.body[:200]))
                self.check_answer(m, route, r)
        d.wait(d.get("/jobs?limit=1").json()["jobs"][0]["id"])  # the probe's job

    def test_other_methods_and_paths_are_not_served(self):
        d = self.d
        not_allowed = self.doc["components"]["responses"]["MethodNotAllowed"]
        for route, item in self.doc["paths"].items():
            ops = {m.upper() for m in item if m in METHODS}
            for m in set(x.upper() for x in METHODS) - ops:
                r = d.request(m, self.probe_path(route, self.done))
                what = "%s %s" % (m, route)
                self.assertEqual(r.status, 405, what)
                allow = {a.strip() for a in r.header("Allow").split(",")}
                self.assertEqual(allow, ops | ({"HEAD"} if "GET" in ops else set()), what)
                self.check_response(not_allowed, r, what)
        no_route = self.doc["components"]["responses"]["RouteNotFound"]
        for path in ("/index.html", "/job", "/jobs/%s/events" % self.done, "/openapi.yaml",
                     "/jobs/%s/solution/x" % self.done):
            r = d.get(path)
            self.assertEqual(r.status, 404, path)
            self.check_response(no_route, r, path)

    def test_answers_are_documented(self):
        d = self.d
        ok = d.request("POST", "/jobs", body={"graph": self.g, "budget_s": 60, "seed": 2,
                                              "name": "contract"})
        self.check_answer("POST", "/jobs", ok, 201)
        running = ok.json()["id"]
        d.wait(running, ("running",))
        queued = d.submit(tiny_graph(), budget_s=0.1)
        bad = [
            ("bad json", b'{"graph": ', "application/json", 400, "bad_json"),
            ("unknown field", {"graph": tiny_graph(), "budget": 1}, "application/json", 400,
             "invalid_field"),
            ("bad graph", {"graph": {"nodes": [], "edges": [{"source": 0, "target": 1}],
                                     "width": 1, "height": 1}}, "application/json", 400,
             "invalid_field"),
            ("not json", b"graph", "text/plain", 415, "unsupported_media_type"),
            ("budget", {"graph": tiny_graph(), "budget_s": 1000}, "application/json", 422,
             "limit_exceeded"),
            ("gpu", {"graph": tiny_graph(), "backend": "gpu"}, "application/json", 422,
             "backend_unavailable"),
            ("too large", b" " * 200000, "application/json", 413, "too_large"),
            ("warm start", {"graph": tiny_graph(), "init_from": "j0000000000009999"},
             "application/json", 422, "init_from_unusable"),
        ]
        for what, body, ctype, status, code in bad:
            r = d.request("POST", "/jobs", body=body, ctype=ctype)
            self.check_answer("POST", "/jobs", r, status)
            self.assertEqual(r.json()["error"]["code"], code, what)
        # the queue: one running, one queued, the limit is two waiting
        second = d.submit(tiny_graph(), budget_s=0.1)
        r = d.request("POST", "/jobs", body={"graph": tiny_graph()})
        self.check_answer("POST", "/jobs", r, 429)
        self.assertEqual(r.header("Retry-After"), "3")
        # a queued job: status, progress page, no solution yet, cancel
        self.check_answer("GET", "/jobs/{id}", d.get("/jobs/" + queued), 200)
        self.check_answer("GET", "/jobs/{id}/progress", d.get("/jobs/%s/progress" % queued), 200)
        r = d.get("/jobs/%s/solution" % queued)
        self.check_answer("GET", "/jobs/{id}/solution", r, 409)
        self.assertEqual(r.json()["error"]["code"], "no_solution")
        r = d.get("/jobs/%s/solution.svg" % queued)
        self.check_answer("GET", "/jobs/{id}/solution.svg", r, 409)
        self.assertEqual(r.json()["error"]["code"], "no_solution")
        r = d.request("DELETE", "/jobs/" + queued)
        self.check_answer("DELETE", "/jobs/{id}", r, 200)
        self.assertEqual(r.json()["state"], "cancelled")
        # a running job: its status with telemetry, a list, cancel it
        t_end = time.time() + 60
        while d.status(running)["telemetry"] is None and time.time() < t_end:
            time.sleep(0.05)
        self.check_answer("GET", "/jobs/{id}", d.get("/jobs/" + running), 200)
        self.check_answer("GET", "/jobs", d.get("/jobs?state=running"), 200)
        r = d.request("DELETE", "/jobs/" + running)
        self.check_answer("DELETE", "/jobs/{id}", r, 200)
        d.wait(second)
        # query arguments, unknown jobs, no token
        for path, route, status in (("/jobs?limit=0", "/jobs", 400),
                                    ("/jobs?state=done", "/jobs", 400),
                                    ("/jobs?before=x", "/jobs", 400),
                                    ("/jobs/%s/progress?after=-1" % running,
                                     "/jobs/{id}/progress", 400),
                                    ("/jobs/j0000000000009999", "/jobs/{id}", 404),
                                    ("/jobs/nope/solution", "/jobs/{id}/solution", 404),
                                    ("/jobs/j0000000000009999/solution.svg",
                                     "/jobs/{id}/solution.svg", 404),
                                    ("/jobs/j0000000000009999/progress", "/jobs/{id}/progress",
                                     404)):
            self.check_answer("GET", route, d.get(path), status)
        r = d.request("DELETE", "/jobs/j0000000000009999")
        self.check_answer("DELETE", "/jobs/{id}", r, 404)
        for route in ("/jobs", "/jobs/{id}", "/metrics", "/openapi.json"):
            r = d.get(self.probe_path(route, self.done), headers={"Authorization": "Bearer x"})
            self.check_answer("GET", route, r, 401)
        self.check_answer("GET", "/healthz", d.get("/healthz", headers={"Authorization": ""}), 200)
        # a finished job's solution and its progress as a stream
        self.check_answer("GET", "/jobs/{id}/solution", d.get("/jobs/%s/solution" % self.done),
                          200)
        self.check_answer("GET", "/jobs/{id}/solution.svg",
                          d.get("/jobs/%s/solution.svg" % self.done), 200)
        r = d.get("/jobs/%s/progress" % self.done, headers={"Accept": "text/event-stream"})
        self.check_answer("GET", "/jobs/{id}/progress", r, 200)
        events = [json.loads(line[6:]) for line in r.body.decode().splitlines()
                  if line.startswith("data: ")]
        self.assertEqual(events[-1]["state"], "succeeded")
        schema = self.doc["components"]["schemas"]["ProgressEvent"]
        for e in events:
            self.check_body(schema, e, "stream event")

    def test_structural_check_catches_what_jsonschema_does(self):
        # the fallback must not pass what the real validator refuses
        s = {"$ref": "#/components/schemas/JobCreated"}
        good = {"id": "j0000000000000001", "state": "queued",
                "links": {"self": "a", "progress": "b", "solution": "c"}}
        self.assertEqual(structural_errors(s, good, self.doc), [])
        for bad in ({"id": "j1", "state": "queued"}, dict(good, state="done"),
                    dict(good, extra=1), dict(good, links={"self": 1})):
            self.assertNotEqual(structural_errors(s, bad, self.doc), [], bad)


if __name__ == "__main__":
    unittest.main(verbosity=2)
