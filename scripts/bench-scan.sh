#!/usr/bin/env bash
# Scan-engine benchmarks (issue 2), run as root:
#  1. a full MTU scan of 1,000 resolver addresses in the lab (the resolver namespace answers on
#     198.18.4.0/22 through one real unbound); target: under 10 seconds;
#  2. the engine's closed-loop query rate against `tunnelprobe serve`, next to dnsperf's against the
#     same responder process in the same run, interleaved in short slices (same kind of queries:
#     authenticated echo probes); target: >= dnsperf.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product tunnelprobe >/dev/null
bin=$(realpath .build/release/tunnelprobe)
name="bn$$"; name=${name:0:8}
work=$(mktemp -d)
cleanup() { "$bin" lab down --name "$name" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT INT TERM

echo "== 1,000-address MTU scan through the lab's unbound (limit 1232)"
"$bin" lab up --name "$name" --resolver-udp-limit 1232 >/dev/null
key=$("$bin" lab status --name "$name" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["keyFile"])')
start=$(date +%s.%N)
"$bin" lab exec --name "$name" -- "$bin" scan --domain vpn.lab.test --key-file "$key" --resolver 198.18.4.0/22 \
  --cidr-cap 1000 --concurrency 256 --record-type TXT --engine masterdnsvpn --out "$work/scan" --quiet --seed 1 || true
end=$(date +%s.%N)
python3 - "$work/scan/scan.json" "$start" "$end" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); s = r["summary"]
print(f"pairs {s['pairs']}, accepted {s['accepted']}, queries {s['queries']}, scan {s['durationSeconds']:.2f} s "
      f"(wall with process start {float(sys.argv[3]) - float(sys.argv[2]):.2f} s), synced up {r['synced'].get('upload')} down {r['synced'].get('download')}")
PY
"$bin" lab down --name "$name" >/dev/null

echo "== query rate against serve on loopback: dnsperf vs the engine, interleaved against one responder"
# The method and its reasons are in scripts/bench-query-rate.py.
python3 scripts/bench-query-rate.py "$bin" --rounds "${ROUNDS:-10}" --seconds "${SECONDS_PER_SLICE:-4}"
