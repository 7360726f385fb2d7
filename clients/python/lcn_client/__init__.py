"""lcn_client - a small client for lcnd's HTTP API (docs/API.md,
docs/openapi.json). Standard library only.

    c = Client("127.0.0.1:8480", token=None)
    job = c.submit(graph, budget_s=10, seed=1, target_k=6, threads=2)
    final = c.wait(job, progress=print)
    layout = c.solution(job)

Every method that talks to the daemon raises LcnError when it answers with
an error status; the exception carries the status and the API's error body
(code, message, field). Network failures raise the urllib/OSError
exceptions unchanged, and so does an answer no lcnd sends: one larger than
64 MiB (2 GiB for a solution) or a stream line over 16 MiB raises
ConnectionError instead of being held in memory however large it grows.
A Client holds no connection between calls, so one may be shared by
threads.
"""

import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["Client", "LcnError", "TERMINAL"]

TERMINAL = ("succeeded", "failed", "cancelled", "interrupted")

# the largest answers read (lcnctl's bounds, clients/http.h and sse.h)
MAX_ANSWER = 64 << 20
MAX_SOLUTION = 2 << 30
MAX_LINE = 16 << 20

# solver fields of POST /jobs taken as keyword arguments of submit()
_SOLVER = ("threads", "replicas", "proposal_workers", "gpus", "tuning")


class LcnError(Exception):
    """The daemon answered an error status.

    status: the HTTP status; code, message, field: the members of the API's
    error body {"error": {"code", "message", "field"}} (None when absent or
    when the body is not one); body: the body as received (bytes);
    retry_after: the Retry-After header in seconds, or None."""

    def __init__(self, status, body, retry_after=None):
        self.status = status
        self.body = body
        self.retry_after = retry_after
        self.code = self.message = self.field = None
        try:
            err = json.loads(body)["error"]
            self.code = err.get("code")
            self.message = err.get("message")
            self.field = err.get("field")
        except (ValueError, TypeError, KeyError, AttributeError):
            pass
        text = "%d %s: %s" % (status, self.code, self.message) if self.code else \
            "%d %s" % (status, body[:200].decode("utf-8", "replace"))
        if self.field:
            text += " (%s)" % self.field
        super().__init__(text)


class Client:
    """A client of one daemon.

    server: "HOST:PORT" or a base URL ("http://HOST:PORT"); token: the
    bearer token when the daemon has a token_file; timeout: seconds one
    request may take (a progress stream's reads included)."""

    def __init__(self, server="127.0.0.1:8480", token=None, timeout=60.0):
        if "://" not in server:
            server = "http://" + server
        self.base = server.rstrip("/")
        self.token = token
        self.timeout = timeout

    # ---- the resources ----
    def submit(self, graph, budget_s=None, seed=None, target_k=None, backend=None,
               stop_at_target=None, name=None, **solver):
        """POST /jobs. graph is a dict in the format of docs/FORMAT.md;
        threads, replicas, proposal_workers, gpus (a count or "all": one run
        across that many GPUs) and tuning go to `solver`.
        Arguments left None take the daemon's defaults. Returns the job id
        once the job is durable."""
        unknown = set(solver) - set(_SOLVER)
        if unknown:
            raise TypeError("submit() got unknown solver fields %s (known: %s)" %
                            (sorted(unknown), ", ".join(_SOLVER)))
        req = {"graph": graph}
        for k, v in (("budget_s", budget_s), ("seed", seed), ("target_k", target_k),
                     ("backend", backend), ("stop_at_target", stop_at_target), ("name", name)):
            if v is not None:
                req[k] = v
        s = {k: v for k, v in solver.items() if v is not None}
        if s:
            req["solver"] = s
        return self._json("POST", "/jobs", body=req)["id"]

    def status(self, job):
        """GET /jobs/<id>: the job's status (a dict, telemetry included)."""
        return self._json("GET", "/jobs/" + _seg(job))

    def solution(self, job):
        """GET /jobs/<id>/solution: the best validated layout, the submitted
        graph with coordinates plus an "lcn" record (K, nK, Phi, C, final).
        LcnError 409 no_solution while none exists."""
        return self._json("GET", "/jobs/%s/solution" % _seg(job), limit=MAX_SOLUTION)

    def cancel(self, job):
        """DELETE /jobs/<id>: cancels a queued or running job and returns its
        status once it is terminal (a finished job is returned unchanged).
        The status of a 202 (the store cannot commit now; the cancel is
        durable and completes later) is returned as well: check its state."""
        return self._json("DELETE", "/jobs/" + _seg(job))

    def list(self, state=None, limit=None):
        """GET /jobs, newest first, following the pages: every job (in
        `state` when given), at most `limit` of them. Statuses without
        telemetry."""
        out, before = [], None
        while limit is None or len(out) < limit:
            q = {"limit": 500 if limit is None else min(500, limit - len(out))}
            if state:
                q["state"] = state
            if before:
                q["before"] = before
            page = self._json("GET", "/jobs?" + urllib.parse.urlencode(q))
            out += page["jobs"]
            before = page["next_before"]
            if not before:
                break
        return out

    def wait(self, job, progress=None, timeout=None):
        """Follows the job's progress events until it is terminal and
        returns its final status. progress, when given, is called with each
        event (a dict: seq, type, elapsed_s and state, stage or best) in
        order, each once. Uses the Server-Sent-Events stream, reconnecting
        with Last-Event-ID when it ends early (a daemon restart), and polls
        the pages instead while the daemon refuses more streams. Raises
        TimeoutError when timeout seconds pass first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        after = 0
        while True:
            try:
                after = self._stream(job, after, progress, deadline)
            except LcnError as e:
                if e.status != 503 or e.code != "too_many_streams":
                    raise
                after = self._poll(job, after, progress, deadline, e.retry_after or 1)
            s = self.status(job)
            if s["state"] in TERMINAL and after >= s["progress_seq"]:
                return s
            _left(deadline)

    # ---- progress ----
    def _stream(self, job, after, progress, deadline):
        """Reads one stream until it ends; returns the last seq seen."""
        headers = {"Accept": "text/event-stream", "Last-Event-ID": str(after)}
        resp = self._open("GET", "/jobs/%s/progress" % _seg(job), headers=headers,
                          timeout=self._read_timeout(deadline))
        with resp:
            data = []
            while True:
                try:
                    line = resp.readline(MAX_LINE + 1)
                    if len(line) > MAX_LINE:
                        raise ConnectionError("a progress stream line is longer than %d MiB: "
                                              "not lcnd?" % (MAX_LINE >> 20))
                except (socket.timeout, TimeoutError):
                    _left(deadline)
                    raise TimeoutError("no progress event for %.0f s" % self.timeout)
                if not line:
                    return after
                line = line.decode("utf-8").rstrip("\r\n")
                if line.startswith("data:"):
                    data.append(line[5:].lstrip(" "))
                elif not line and data:  # an event ends at a blank line
                    ev = json.loads("\n".join(data))
                    data = []
                    if ev["seq"] > after:
                        after = ev["seq"]
                        if progress:
                            progress(ev)
                _left(deadline)

    def _poll(self, job, after, progress, deadline, pause):
        """Pages through the events until the job is done; returns the last
        seq seen."""
        while True:
            page = self._json("GET", "/jobs/%s/progress?after=%d" % (_seg(job), after))
            for ev in page["events"]:
                if progress:
                    progress(ev)
            after = page["next"]
            if page["done"]:
                return after
            if not page["events"]:
                time.sleep(min(float(pause), max(0.05, _left(deadline) or pause)))

    def _read_timeout(self, deadline):
        left = _left(deadline)
        return self.timeout if left is None else max(0.05, min(self.timeout, left))

    # ---- HTTP ----
    def _open(self, method, path, body=None, headers=None, timeout=None):
        h = {"Accept": "application/json"}
        h.update(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            h["Content-Type"] = "application/json"
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(self.base + path, data=data, headers=h, method=method)
        try:
            return urllib.request.urlopen(req, timeout=timeout or self.timeout)
        except urllib.error.HTTPError as e:
            with e:
                raw = _read(e, MAX_ANSWER)
            ra = e.headers.get("Retry-After")
            raise LcnError(e.code, raw, float(ra) if ra and ra.isdigit() else None) from None

    def _json(self, method, path, body=None, limit=MAX_ANSWER):
        with self._open(method, path, body=body) as resp:
            return json.loads(_read(resp, limit))


def _read(resp, limit):
    """The whole body of resp, at most limit bytes (ConnectionError past)."""
    raw = resp.read(limit + 1)
    if len(raw) > limit:
        raise ConnectionError("the answer is larger than %d MiB: not lcnd?" % (limit >> 20))
    return raw


def _seg(job):
    """A job id as one path segment (quoted, so no id names another path)."""
    return urllib.parse.quote(str(job), safe="")


def _left(deadline):
    """Seconds left before deadline (None: no deadline); TimeoutError when
    none are."""
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the job did not finish in time")
    return left
