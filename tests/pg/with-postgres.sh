#!/bin/sh
# Runs a command against a throwaway PostgreSQL server: a new cluster in a
# temporary directory (initdb), listening on a Unix socket there only, gone
# afterwards. The command gets LCN_TEST_PG_URL (a libpq URL of an empty
# database "lcn", user "lcn", trust authentication on the socket), and
# LCN_TEST_PG_STOP / LCN_TEST_PG_START, shell commands that stop the server
# (fast shutdown: every connection is dropped) and start it again on the
# same socket and data, for the tests of database faults.
#
#   tests/pg/with-postgres.sh COMMAND [ARG...]
#
# Exits 77 (CTest: skipped) when the server binaries are missing
# (scripts/deps.sh installs them: Debian's postgresql package). PostgreSQL
# refuses to run as root, so as root the server runs as the postgres user.
set -eu
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ]; then
    echo "SKIP: no PostgreSQL server binaries (scripts/deps.sh installs them)"
    exit 77
fi
D=$(mktemp -d /tmp/lcn-pg-XXXXXX)
AS=""
if [ "$(id -u)" = 0 ]; then
    chown postgres "$D"
    AS="runuser -u postgres --"
fi
stop() {
    $AS "$BIN/pg_ctl" -D "$D/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$D"
}
trap stop EXIT INT TERM
$AS "$BIN/initdb" -D "$D/data" -A trust -U lcn --no-sync -E UTF8 >"$D/initdb.log" 2>&1 ||
    { cat "$D/initdb.log"; exit 1; }
OPTS="-k $D -c listen_addresses='' -c fsync=off -c synchronous_commit=off"
$AS "$BIN/pg_ctl" -D "$D/data" -l "$D/server.log" -w -o "$OPTS" start >/dev/null ||
    { cat "$D/server.log"; exit 1; }
LCN_TEST_PG_STOP="$AS $BIN/pg_ctl -D $D/data -m fast -w stop"
LCN_TEST_PG_START="$AS $BIN/pg_ctl -D $D/data -l $D/server.log -w -o \"$OPTS\" start"
export LCN_TEST_PG_STOP LCN_TEST_PG_START
$AS "$BIN/createdb" -h "$D" -U lcn lcn
LCN_TEST_PG_URL="postgresql://lcn@/lcn?host=$D"
export LCN_TEST_PG_URL
"$@"
