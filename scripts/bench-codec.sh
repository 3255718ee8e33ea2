#!/usr/bin/env bash
# Runs the DNSWire codec benchmarks (Benchmarks/DNSCodecBenchmarks, ordo-one package-benchmark)
# and prints the results table. The plugin builds the benchmark in release mode by itself, in
# Benchmarks/.build (never the root package's .build). The first run builds package-benchmark
# and its dependencies and takes several minutes.
#
# Extra arguments go to the benchmark plugin, e.g.:
#   scripts/bench-codec.sh --filter "decode.*"
#   scripts/bench-codec.sh --format markdown
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../Benchmarks"

# --disable-sandbox: the plugin runs the benchmark executable, which the sandbox would stop
# on macOS; on Linux it is harmless.
exec swift package --disable-sandbox benchmark --target DNSCodecBenchmarks --no-progress "$@"
