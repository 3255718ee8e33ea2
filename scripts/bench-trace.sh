#!/usr/bin/env bash
# Trace benchmark (issues 4 and 27): `tunnelprobe trace` (release build) against a bare libpcap read loop
# over the same synthetic capture, in the same run. Target: trace >= 0.6 of the loop's packet rate
# (issue 27; it was 1/3 in issue 4), and a maximum RSS that does not grow with the number of answered
# queries (1M vs 2M packets).
# The anchor (scripts/bench/pcaploop.c) times open + pcap_next_ex over every packet + close inside the
# process; trace is timed as a whole process (start-up, reading, analysis, writing trace.json/.md).
# Each round runs the anchor and trace back to back; every round is printed with the load average.
# trace runs on two threads (libpcap reading, decoding and the DNS front end on one, transaction
# matching on the other); the anchor loop on one. trace's CPU time (user + system) is printed beside.
#   scripts/bench-trace.sh            # 1M and 2M packets, 5 rounds each
#   QUERIES="250000" ROUNDS=3 scripts/bench-trace.sh
#   TUNNELPROBE_BIN=/path/to/release/tunnelprobe scripts/bench-trace.sh   # no build
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
if [ -n "${TUNNELPROBE_BIN:-}" ]; then  # a release binary built elsewhere (another scratch path)
  bin=$(realpath "$TUNNELPROBE_BIN")
else
  swift build -c release --product tunnelprobe >/dev/null
  bin=$(realpath .build/release/tunnelprobe)
fi
cc=${CC:-$(command -v gcc || command -v clang)}  # the Swift toolchain brings clang
"$cc" -O2 -o "$work/tracegen" scripts/bench/tracegen.c -lpcap
"$cc" -O2 -o "$work/pcaploop" scripts/bench/pcaploop.c -lpcap

for queries in ${QUERIES:-505000 1010000}; do
  file="$work/dns-$queries.pcap"
  packets=$("$work/tracegen" "$file" "$queries" 42 | cut -d' ' -f1)
  cat "$file" >/dev/null  # warm the page cache
  echo "$packets packets:"
  ratios=""
  for i in $(seq "${ROUNDS:-5}"); do
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    read -r _ _ loop _ < <("$work/pcaploop" "$file")
    read -r wall user sys rss < <(scripts/bench/run-timed.py "$bin" trace "$file" --quiet --out "$work/report")
    ratio=$(python3 -c "print(f'{$packets / $wall / $loop:.2f}')")
    ratios="$ratios $ratio"
    python3 -c "print(f'  round $i (load average $load): libpcap loop {$loop / 1e6:.2f} Mpkt/s, trace {$packets / $wall / 1e6:.2f} Mpkt/s '
                      f'({$wall:.3f} s, CPU {$user + $sys:.3f} s, max RSS {$rss / 1024:.1f} MiB): ratio $ratio')"
  done
  python3 - "$work/report/trace.json" "$ratios" <<'PY'
import json, statistics, sys
t = json.load(open(sys.argv[1]))["totals"]
ratios = [float(r) for r in sys.argv[2].split()]
print(f"  ({t['queries']} queries, {t['answered']} answered, {t['lost']} lost, {t['duplicates']} duplicates, "
      f"RTT p50 {t['rttMs']['p50']} ms p99 {t['rttMs']['p99']} ms)")
print(f"  ratio median {statistics.median(ratios):.2f}, min {min(ratios):.2f}, max {max(ratios):.2f} "
      f"(target >= 0.6: {sum(r >= 0.6 for r in ratios)} of {len(ratios)} rounds)")
PY
done
