#!/bin/sh
# .ci/run must run the README's test command verbatim, and the README must
# keep exactly two set-up commands (two ```sh blocks under "## Set up").
set -eu
root=$(dirname "$0")/../..
cmd=$(grep -E '^\./scripts/deps\.sh && cmake -S \. -B build-test' "$root/.ci/run")
[ -n "$cmd" ] || { echo ".ci/run has no test command"; exit 1; }
grep -qxF "$cmd" "$root/README.md" || { echo ".ci/run's command is not the README's: $cmd"; exit 1; }
blocks=$(awk '/^## Set up/{s=1;next} /^## /{s=0} s && /^```sh/{n++} END{print n+0}' "$root/README.md")
[ "$blocks" -eq 2 ] || { echo "README 'Set up' has $blocks command blocks, expected 2"; exit 1; }
echo "ok: .ci/run runs the README's test command; two set-up commands"
