#!/usr/bin/env bash
# Issue 19, item 3: the scan's congestion window (AIMD on the queries in flight) at --concurrency 256
# and 1000 over the lab's 1,000 resolver addresses (198.18.4.0/22, one unbound with max-udp-size 1232),
# run as root. Two labs: unbound as the lab always runs it (4096 queries per thread) and a busy one
# that holds 100 per thread (a small router's worth). For each: wall time, pairs accepted, and whether
# every pair's MTU equals the 256 run's. The anchor in the same run: --concurrency 1000 without the
# window (--no-congestion-control).
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product tunnelprobe >/dev/null
bin=$(realpath .build/release/tunnelprobe)
name="bo$$"; name=${name:0:8}
work=$(mktemp -d)
cleanup() { "$bin" lab down --name "$name" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT INT TERM

for per_thread in 4096 100; do
  echo "== unbound num-queries-per-thread $per_thread"
  "$bin" lab up --name "$name" --resolver-udp-limit 1232 --resolver-queries-per-thread "$per_thread" >/dev/null
  key=$("$bin" lab status --name "$name" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["keyFile"])')
  for run in "256" "1000" "1000 --no-congestion-control"; do
    set -- $run
    out="$work/scan-$per_thread-$1${2:+-off}"
    start=$(date +%s.%N)
    "$bin" lab exec --name "$name" -- "$bin" scan --domain vpn.lab.test --key-file "$key" --resolver 198.18.4.0/22 \
      --cidr-cap 1000 --concurrency "$1" ${2:-} --record-type TXT --engine masterdnsvpn --out "$out" --quiet --seed 1 || true
    end=$(date +%s.%N)
    python3 - "$out/scan.json" "$work/scan-$per_thread-256/scan.json" "$run" "$start" "$end" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); base = json.load(open(sys.argv[2]))
def figures(rep):
    return {p["resolver"]: (p["accepted"], (p.get("upload") or {}).get("qnameChars"), (p.get("download") or {}).get("responseSize"))
            for p in rep["pairs"]}
a, b = figures(r), figures(base)
same = sum(1 for k, v in a.items() if b.get(k) == v)
s = r["summary"]; w = r.get("congestion") or {}
print(f"  --concurrency {sys.argv[3]:<28} wall {float(sys.argv[5]) - float(sys.argv[4]):6.2f} s (scan {s['durationSeconds']:.2f} s), "
      f"accepted {s['accepted']}/{s['pairs']}, MTUs equal to the 256 run: {same}/{len(a)}, queries {s['queries']}, "
      f"window decreases {w.get('decreases', '-')}, smallest {w.get('smallestWindow', '-')}")
PY
  done
  "$bin" lab down --name "$name" >/dev/null
done
