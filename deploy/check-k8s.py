"""Consistency of a Kubernetes manifest of lcnd (deploy/k8s/lcnd.yaml, a
StatefulSet with a store per pod; deploy/k8s/lcnd-shared.yaml, a Deployment
on one PostgreSQL store): every document parses, the pod asks for exactly
one nvidia.com/gpu, the config's listen port is the container's and the
lcnd Services' port, the token file and state dir named by the config are
mounted (the token from the Secret; the state from a claim template unless
the jobs are in PostgreSQL), the command is `lcnd serve --config` on the
mounted config, and the probes use the port. With store_url: its host is a
Service of the manifest (or outside the namespace), that Service selects a
workload and targets one of its ports, and PGPASSWORD comes from a Secret
key that exists. Exits 77 (skipped) without PyYAML."""

import os
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    print("skipped: python3-yaml (PyYAML) not installed")
    sys.exit(77)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
by_kind = {}
for d in docs:
    by_kind.setdefault(d["kind"], []).append(d)
for kind in ("Namespace", "Secret", "ConfigMap", "Service"):
    if kind not in by_kind:
        fail("no %s" % kind)
workloads = by_kind.get("StatefulSet", []) + by_kind.get("Deployment", [])
secrets = {d["metadata"]["name"]: d for d in by_kind["Secret"]}


def runs_lcnd(w):
    cs = w["spec"]["template"]["spec"]["containers"]
    return any(c.get("command", [""])[0].endswith("/lcnd") for c in cs)


lcnd_workloads = [w for w in workloads if runs_lcnd(w)]
if len(lcnd_workloads) != 1:
    fail("expected one StatefulSet or Deployment running lcnd, found %d" % len(lcnd_workloads))
ns = by_kind["Namespace"][0]["metadata"]["name"]
for d in docs:
    if d["kind"] != "Namespace" and d["metadata"].get("namespace") != ns:
        fail("%s %s is not in namespace %s" % (d["kind"], d["metadata"]["name"], ns))

conf = {}
for line in by_kind["ConfigMap"][0]["data"]["lcnd.conf"].splitlines():
    line = line.split("#")[0].strip()
    if line:
        k, _, v = line.partition("=")
        conf[k.strip()] = v.strip()
port = int(conf["listen"].rsplit(":", 1)[1])
if "token_file" not in conf or not conf["token_file"]:
    fail("a non-loopback listen address needs token_file")

sts = lcnd_workloads[0]
shared = bool(conf.get("store_url"))
pod = sts["spec"]["template"]["spec"]
(c,) = pod["containers"]
if c["resources"]["limits"].get("nvidia.com/gpu") != 1:
    fail("the pod must ask for exactly one nvidia.com/gpu")
cports = {p["name"]: p["containerPort"] for p in c["ports"]}
if cports.get("http") != port:
    fail("containerPort %s != listen port %d" % (cports.get("http"), port))
lcnd_services = [svc for svc in by_kind["Service"]
                 if svc["spec"]["selector"] == sts["spec"]["template"]["metadata"]["labels"]]
if not lcnd_services:
    fail("no Service selects the lcnd pods")
for svc in lcnd_services:
    if svc["spec"]["ports"][0]["port"] != port:
        fail("Service %s port != %d" % (svc["metadata"]["name"], port))
for svc in by_kind["Service"]:
    if svc in lcnd_services:
        continue
    # another Service (the example database): it must select a workload and
    # target one of its container ports
    sel = [w for w in workloads if svc["spec"]["selector"] == w["spec"]["template"]["metadata"][
        "labels"]]
    if not sel:
        fail("Service %s selects no workload" % svc["metadata"]["name"])
    names = {p["name"] for c in sel[0]["spec"]["template"]["spec"]["containers"]
             for p in c.get("ports", [])}
    if svc["spec"]["ports"][0]["targetPort"] not in names:
        fail("Service %s targets no port of its pods" % svc["metadata"]["name"])
if sts["kind"] == "StatefulSet" and not any(
        s["spec"].get("clusterIP") == "None" and s["metadata"]["name"] == sts["spec"][
            "serviceName"] for s in by_kind["Service"]):
    fail("the StatefulSet's serviceName must be a headless Service")
if shared:
    host = conf["store_url"].split("@", 1)[-1].split("/", 1)[0].split(":", 1)[0]
    svc_names = {"%s.%s.svc.cluster.local" % (x["metadata"]["name"], ns)
                 for x in by_kind["Service"]}
    if host.endswith(".%s.svc.cluster.local" % ns) and host not in svc_names:
        fail("store_url's host %s is no Service of the manifest" % host)

cmd = c["command"] + c["args"]
if not (cmd[0].endswith("/lcnd") and cmd[1] == "serve" and "--config" in cmd):
    fail("the container must run lcnd serve --config FILE")
config_path = cmd[cmd.index("--config") + 1]
mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
vols = {v["name"]: v for v in pod["volumes"]}
claims = {t["metadata"]["name"] for t in sts["spec"].get("volumeClaimTemplates", [])}


def mounted(path):
    """The mount that holds path, longest prefix first."""
    for mp in sorted(mounts, key=len, reverse=True):
        if path == mp or path.startswith(mp.rstrip("/") + "/"):
            return mounts[mp]
    return None


m = mounted(config_path)
if not m or "configMap" not in vols[m["name"]]:
    fail("%s is not mounted from the ConfigMap" % config_path)
m = mounted(conf["token_file"])
token_secret = vols[m["name"]].get("secret", {}).get("secretName") if m else None
if token_secret not in secrets:
    fail("token_file %s is not mounted from a Secret" % conf["token_file"])
if conf["token_file"].rsplit("/", 1)[1] not in secrets[token_secret]["stringData"]:
    fail("the Secret has no key %s" % conf["token_file"].rsplit("/", 1)[1])
m = mounted(conf["state_dir"])
if not shared and (not m or m["name"] not in claims):
    fail("state_dir %s is not on a volumeClaimTemplate" % conf["state_dir"])
if shared and not m:
    fail("state_dir %s is not mounted (the root file system is read-only)" % conf["state_dir"])
for probe in ("startupProbe", "livenessProbe"):
    if c[probe]["httpGet"]["port"] not in ("http", port):
        fail("%s does not use the http port" % probe)
rp = c["readinessProbe"]["exec"]["command"]
if "ready" not in rp or not any(str(port) in a for a in rp):
    fail("the readiness probe must run lcnctl ready on port %d" % port)
env = {e["name"]: e.get("value") for e in c.get("env", [])}
if shared:
    pw = [e for e in c.get("env", []) if e["name"] == "PGPASSWORD"]
    ref = pw[0].get("valueFrom", {}).get("secretKeyRef", {}) if pw else {}
    if pw and ref.get("key") not in secrets.get(ref.get("name"), {}).get("stringData", {}):
        fail("PGPASSWORD names no key of a Secret of the manifest")
if env.get("LCN_TOKEN_FILE") != conf["token_file"]:
    fail("LCN_TOKEN_FILE must name the token file for lcnctl ready")
# the daemon itself must accept the config (when a daemon with `serve` is given)
lcnd = sys.argv[2] if len(sys.argv) > 2 else ""
if lcnd and subprocess.run([lcnd, "serve", "--help"], capture_output=True).returncode == 0:
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
        f.write(by_kind["ConfigMap"][0]["data"]["lcnd.conf"])
    try:
        p = subprocess.run([lcnd, "serve", "--config", f.name, "--print-config"],
                           capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if p.returncode != 0:
        fail("lcnd rejects the ConfigMap's lcnd.conf: " + p.stderr.strip())
    printed = dict(l.split(" = ", 1) for l in p.stdout.splitlines() if " = " in l)
    for k, v in conf.items():
        if printed.get(k) != v:
            fail("lcnd reads %s as %r, the ConfigMap says %r" % (k, printed.get(k), v))
    print("lcnd accepts the ConfigMap's configuration")
print("ok: %d documents consistent (port %d, token %s, state %s)" % (
    len(docs), port, conf["token_file"], conf["state_dir"]))
