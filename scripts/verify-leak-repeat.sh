#!/usr/bin/env bash
# Runs the lab's DNS-leak case of verify (VerifierLabTests/dnsAroundTheTunnelIsCaught: the profile's
# DNS server reachable outside the tunnel) N times and counts the runs whose report named a leak with
# every one of its unique names. Needs root and the lab's packages (make deps) and a release build.
#   scripts/verify-leak-repeat.sh 100
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100}
bin=${TUNNELPROBE_BIN:-$PWD/.build/release/tunnelprobe}
swift build --build-tests >/dev/null
passed=0
for i in $(seq 1 "$runs"); do
    if TUNNELPROBE_BIN="$bin" TUNNELPROBE_REQUIRE_LAB=1 swift test --skip-build --no-parallel \
        --filter 'VerifierLabTests/dnsAroundTheTunnelIsCaught' >"/tmp/tp-leak-repeat.$$.log" 2>&1; then
        passed=$((passed + 1))
    else
        echo "run $i: no full leak verdict (log: /tmp/tp-leak-repeat.$$.$i.log)"
        cp "/tmp/tp-leak-repeat.$$.log" "/tmp/tp-leak-repeat.$$.$i.log"
    fi
done
rm -f "/tmp/tp-leak-repeat.$$.log"
echo "$passed of $runs runs gave a leak verdict with every name"
