#!/usr/bin/env bash
# Runs the lab's DNS-leak case of verify (VerifierLabTests/dnsAroundTheTunnelIsCaught: the profile's
# DNS server reachable outside the tunnel) N times and counts the runs whose report named a leak with
# every one of its unique names (a run counts only when its log shows the test itself passed). Needs
# root and the lab's packages (make deps) and a release build. 100 runs took 17 minutes on 2 cores.
#   scripts/verify-leak-repeat.sh 100
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100}
bin=${TUNNELPROBE_BIN:-$PWD/.build/release/tunnelprobe}
swift build --build-tests >/dev/null
# A copy of the test bundle and of the binary: a run of 100 takes about an hour, and the tree may be
# rebuilt meanwhile; what is measured stays the build the run started with.
snapshot=$(mktemp -d /tmp/tp-leak-repeat.XXXXXX)
trap 'rm -rf "$snapshot"' EXIT
cp "$(swift build --show-bin-path)/tunnelprobePackageTests.xctest" "$snapshot/tests"
cp "$bin" "$snapshot/tunnelprobe"
passed=0
for i in $(seq 1 "$runs"); do
    if TUNNELPROBE_BIN="$snapshot/tunnelprobe" TUNNELPROBE_REQUIRE_LAB=1 "$snapshot/tests" --testing-library swift-testing \
        --filter 'VerifierLabTests/dnsAroundTheTunnelIsCaught' >"/tmp/tp-leak-repeat.$$.log" 2>&1 \
        && grep -q 'Test dnsAroundTheTunnelIsCaught() passed' "/tmp/tp-leak-repeat.$$.log"; then
        passed=$((passed + 1))
    else
        echo "run $i: no full leak verdict (log: /tmp/tp-leak-repeat.$$.$i.log)"
        cp "/tmp/tp-leak-repeat.$$.log" "/tmp/tp-leak-repeat.$$.$i.log"
    fi
done
rm -f "/tmp/tp-leak-repeat.$$.log"
echo "$passed of $runs runs gave a leak verdict with every name"
