#!/bin/sh
# The README's first command ends here: a look at the bundled sample with the
# binaries built in build/. For now it runs the independent checker
# (`lcnctl check`) on the sample instance and on its planted drawing; it will
# solve the sample through lcnd's API once the daemon lands.
# LCNCTL=path overrides build/bin/lcnctl.
set -eu
cd "$(dirname "$0")/.."
lcnctl="${LCNCTL:-build/bin/lcnctl}"
if [ ! -x "$lcnctl" ]; then
    echo "demo: $lcnctl not found; build first: cmake -S . -B build && cmake --build build" >&2
    exit 2
fi

summary() {
    # the verdict and tuple from lcnctl check's one-line JSON
    sed -e 's/.*"K":\([^,]*\),"nK":\([^,]*\),"Phi":\([^,]*\),"C":\([^,]*\),.*"valid":\([a-z]*\).*/valid=\5  (K, nK, Phi, C) = (\1, \2, \3, \4)/'
}

# (each check runs on its own, so an invalid sample stops the demo with status 1)
echo "== sample instance samples/planted-60.json, its stored (scrambled) layout:"
out=$("$lcnctl" check samples/planted-60.json)
echo "$out" | summary
echo "== the planted drawing of the same graph, checked against the instance:"
out=$("$lcnctl" check samples/planted-60-solution.json --instance samples/planted-60.json)
echo "$out" | summary
echo "== full report of the planted drawing:"
"$lcnctl" check samples/planted-60-solution.json --instance samples/planted-60.json --pretty
