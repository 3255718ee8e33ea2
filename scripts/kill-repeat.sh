#!/usr/bin/env bash
# Issue "Nothing left behind": N runs of `verify` killed at random moments (half SIGINT, half SIGKILL),
# each followed by an ordinary run, must leave nothing behind, and every SIGINT must exit 130 with a
# report (Tests/TunnelVerifyTests/KillRepeatLabTests.swift). Needs root, the lab's packages (make deps)
# and a release build.
#   scripts/kill-repeat.sh 50 [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
export TUNNELPROBE_KILL_RUNS=${1:-50}
[ -n "${2:-}" ] && export TUNNELPROBE_KILL_SEED=$2
export TUNNELPROBE_BIN=${TUNNELPROBE_BIN:-$PWD/.build/release/tunnelprobe}
swift build --build-tests >/dev/null
TUNNELPROBE_REQUIRE_LAB=1 swift test --skip-build --no-parallel --filter 'KillRepeatLabTests' 2>&1 | grep -E 'kill repeat|✘|✔ Test run|Test run with'
