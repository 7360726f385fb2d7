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
# the Kubernetes example is checked with PyYAML (deploy/check-k8s.py)
PKGS="$PKGS python3-yaml"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
