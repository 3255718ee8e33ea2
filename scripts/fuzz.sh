#!/usr/bin/env bash
# The fuzzing campaign (issue "Nothing left behind, no crash"): builds the libFuzzer driver
# (Fuzz/Package.swift, -sanitize=fuzzer) and runs every entry of Fuzz/Entries for SECONDS each.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     default: 60 s each, every target
#   make fuzz FUZZ_SECONDS=1800               the 30-minute campaign per target
#
# Each target starts from its committed seed corpus (Fuzz/Corpus/<target>) and grows a working
# corpus in Fuzz/.work/<target> (not committed). A crash, a hang (-timeout) or a memory blow-up
# (-rss_limit_mb) is saved under Fuzz/.work/crashes/<target>/ and the script exits 1 naming it: copy
# the file to Fuzz/Regressions/<target>/ (named after what it broke), fix the parser, and the
# regression test (Tests/FuzzRegressionTests) keeps it fixed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=(dns pcap fates profile resolvers impair report mdvreply); fi

# SWIFT_BACKTRACE off: the Swift runtime's backtracer would catch the crash before libFuzzer saves it.
export SWIFT_BACKTRACE=enable=no
# The Fuzz package builds the root package as a path dependency in its own .build, and SwiftPM's
# incremental build there does not notice source files added to (or removed from) the root package
# ("cannot find type ..." after a pull): start that build afresh when the list of root sources changed.
sources=$(find Sources Fuzz/Entries -type f \( -name '*.swift' -o -name '*.c' -o -name '*.h' \) | sort | sha256sum | cut -c1-64)
stamp=Fuzz/.build/.root-sources
if [ -d Fuzz/.build ] && [ "$(cat "$stamp" 2>/dev/null || true)" != "$sources" ]; then
  echo "fuzz: the root package's source files changed; rebuilding Fuzz/.build from scratch"
  rm -rf Fuzz/.build
fi
swift build -c release --package-path Fuzz -Xswiftc -sanitize=fuzzer -Xswiftc -g
echo "$sources" > "$stamp"
binary=$(swift build -c release --package-path Fuzz --show-bin-path)/tunnelprobe-fuzz

failed=()
for target in "${targets[@]}"; do
  work="Fuzz/.work/$target"
  crashes="Fuzz/.work/crashes/$target"
  mkdir -p "$work" "$crashes"
  echo "fuzz $target: $seconds s"
  if ! TUNNELPROBE_FUZZ_TARGET=$target "$binary" "$work" "Fuzz/Corpus/$target" \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="$crashes/" -print_final_stats=1 > "Fuzz/.work/$target.log" 2>&1; then
    failed+=("$target")
    echo "fuzz $target: FAILED, see Fuzz/.work/$target.log and $crashes/"
  fi
  grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "Fuzz/.work/$target.log" | sed "s/^/  $target /" || true
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: crashes in ${failed[*]}"
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, $seconds s each, no crash"
