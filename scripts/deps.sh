#!/bin/sh
# Installs the Debian 12 packages lcn needs to build, test and run.
# Idempotent; uses sudo when not root. The one list of build dependencies.
set -eu
PKGS="build-essential cmake pkg-config git python3 curl clang
libjansson-dev libmicrohttpd-dev libuv1-dev libsqlite3-dev libcurl4-openssl-dev
libssl-dev libcmocka-dev libsystemd-dev systemd libclang-rt-dev valgrind"
# the PostgreSQL job store (issue 20): libpq to build, the server binaries for
# the throwaway databases of the tests (tests/pg/with-postgres.sh)
PKGS="$PKGS libpq-dev postgresql"
# the web page's test: Debian's chromium driven by Selenium (tests/integration/test_web.py)
PKGS="$PKGS chromium chromium-driver python3-selenium"
# the Kubernetes example is checked with PyYAML (deploy/check-k8s.py)
PKGS="$PKGS python3-yaml"
# the OpenAPI tests: response bodies against docs/openapi.json (jsonschema),
# the document against the OpenAPI 3.1 schema (node, tools/openapi); a node
# from elsewhere that brings its own npm is kept
PKGS="$PKGS python3-jsonschema"
command -v npm >/dev/null 2>&1 || PKGS="$PKGS nodejs npm"
# the Python client's packaging (pip install --no-build-isolation)
PKGS="$PKGS python3-setuptools python3-wheel python3-venv"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -q
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -q --no-install-recommends $missing
fi
# The OpenAPI validator, pinned by tools/openapi/package-lock.json; installed
# again only when the lock file changed since the last install (the stamp).
OA="$(cd "$(dirname "$0")/.." && pwd)/tools/openapi"
if ! cmp -s "$OA/package-lock.json" "$OA/node_modules/.lcn-lock-stamp" 2>/dev/null; then
    npm ci --prefix "$OA" --no-audit --no-fund --loglevel=error >/dev/null
    cp "$OA/package-lock.json" "$OA/node_modules/.lcn-lock-stamp"
fi
