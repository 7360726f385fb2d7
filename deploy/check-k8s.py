"""Consistency of deploy/k8s/lcnd.yaml: every document parses, the pod asks
for exactly one nvidia.com/gpu, the config's listen port is the container's
and the Services' port, the token file and state dir named by the config
are mounted (the token from the Secret, the state from a claim template),
the command is `lcnd serve --config` on the mounted config, and the probes
use the port. Exits 77 (skipped) without PyYAML."""

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
for kind in ("Namespace", "Secret", "ConfigMap", "Service", "StatefulSet"):
    if kind not in by_kind:
        fail("no %s" % kind)
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

sts = by_kind["StatefulSet"][0]
pod = sts["spec"]["template"]["spec"]
(c,) = pod["containers"]
if c["resources"]["limits"].get("nvidia.com/gpu") != 1:
    fail("the pod must ask for exactly one nvidia.com/gpu")
cports = {p["name"]: p["containerPort"] for p in c["ports"]}
if cports.get("http") != port:
    fail("containerPort %s != listen port %d" % (cports.get("http"), port))
for svc in by_kind["Service"]:
    if svc["spec"]["selector"] != sts["spec"]["template"]["metadata"]["labels"]:
        fail("Service %s does not select the pods" % svc["metadata"]["name"])
    if svc["spec"]["ports"][0]["port"] != port:
        fail("Service %s port != %d" % (svc["metadata"]["name"], port))
if not any(s["spec"].get("clusterIP") == "None" and s["metadata"]["name"] == sts["spec"][
        "serviceName"] for s in by_kind["Service"]):
    fail("the StatefulSet's serviceName must be a headless Service")

cmd = c["command"] + c["args"]
if not (cmd[0].endswith("/lcnd") and cmd[1] == "serve" and "--config" in cmd):
    fail("the container must run lcnd serve --config FILE")
config_path = cmd[cmd.index("--config") + 1]
mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
vols = {v["name"]: v for v in pod["volumes"]}
claims = {t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]}


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
if not m or vols[m["name"]].get("secret", {}).get("secretName") != by_kind["Secret"][0][
        "metadata"]["name"]:
    fail("token_file %s is not mounted from the Secret" % conf["token_file"])
if conf["token_file"].rsplit("/", 1)[1] not in by_kind["Secret"][0]["stringData"]:
    fail("the Secret has no key %s" % conf["token_file"].rsplit("/", 1)[1])
m = mounted(conf["state_dir"])
if not m or m["name"] not in claims:
    fail("state_dir %s is not on a volumeClaimTemplate" % conf["state_dir"])
for probe in ("startupProbe", "livenessProbe"):
    if c[probe]["httpGet"]["port"] not in ("http", port):
        fail("%s does not use the http port" % probe)
rp = c["readinessProbe"]["exec"]["command"]
if "ready" not in rp or not any(str(port) in a for a in rp):
    fail("the readiness probe must run lcnctl ready on port %d" % port)
env = {e["name"]: e["value"] for e in c.get("env", [])}
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
