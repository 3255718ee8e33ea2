#!/usr/bin/env bash
# impair relay benchmark (issue 3): datagrams per second the relay forwards on loopback with
# impairments on; target >= 100,000 (both directions together).
#
# Load: scripts/udp-blast.c, open loop at RATE queries/s (sendmmsg batches) to the relay, whose
# upstream is the same tool in echo mode (answers every datagram). The anchor, in the same run,
# is the load tool straight to the echo without the relay. The relay's own summary gives what it
# forwarded per second of traffic; its CPU time (from /proc) shows how much of a core it had,
# since this 2-core machine is shared with the load tool, the echo and anything else running.
# Then the same through dnsperf to `tunnelprobe serve` (real DNS, closed loop) for reference.
# On a shared machine run it as `nice -n -10 scripts/bench-impair.sh` so that unrelated builds do
# not take the benchmark's CPU (every process it starts inherits the priority).
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product tunnelprobe >/dev/null
bin=$(realpath .build/release/tunnelprobe)
seconds=${SECONDS_PER_RUN:-5}
rate=${RATE:-70000}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT INT TERM

${CC:-cc} -O2 -o "$work/udp-blast" scripts/udp-blast.c
"$work/udp-blast" echo 5397 &
pids+=($!)
sleep 0.3

impairments=(--up-loss 0.01 --down-loss 0.01 --up-delay 5 --down-delay 5 --up-duplicate 0.01 --down-duplicate 0.01)

relay() {  # NAME LOAD-COMMAND... -- relay flags...: one relay run under the given load
  local name=$1; shift
  local load=()
  while [ "$1" != "--" ]; do load+=("$1"); shift; done
  shift
  "$bin" impair --listen 127.0.0.1:5396 --seed 1 "$@" 2>"$work/$name.err" &
  local rp=$!
  sleep 0.5
  local t0; t0=$(awk '{print $14 + $15}' /proc/$rp/stat)
  local out; out=$("${load[@]}")
  local t1; t1=$(awk '{print $14 + $15}' /proc/$rp/stat)
  kill -INT "$rp"; wait "$rp" || true
  local hz; hz=$(getconf CLK_TCK)
  echo "$name: load: $out"
  grep -E "^(up|down|traffic):" "$work/$name.err" | sed 's/^/  relay /'
  local cpu_ms=$(( (t1 - t0) * 1000 / hz ))
  local forwarded; forwarded=$(awk '/^(up|down):/ {gsub(",", "", $5); f += $5} END {print f}' "$work/$name.err")
  echo "  relay CPU: $cpu_ms ms during the load; $(( cpu_ms > 0 ? forwarded * 1000 / cpu_ms : 0 )) datagrams forwarded per CPU-second"
}

echo "== anchor: udp-blast straight to the echo (no relay), $rate queries/s offered for $seconds s"
echo "anchor: $("$work/udp-blast" send 5397 "$seconds" "$rate")"
blast=("$work/udp-blast" send 5396 "$seconds" "$rate")
echo "== relay, no impairment, no log"
relay plain "${blast[@]}" -- --upstream 127.0.0.1:5397
echo "== relay, 1 % loss + 5 ms delay + 1 % duplication both ways, no log"
relay impaired "${blast[@]}" -- --upstream 127.0.0.1:5397 "${impairments[@]}"
echo "== relay, same impairments, with --log"
relay impaired+log "${blast[@]}" -- --upstream 127.0.0.1:5397 "${impairments[@]}" --log "$work/impair.jsonl"
python3 - "$work/impair.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
s = json.loads(lines[-1])["summary"]
n = len(lines) - 2
print(f"  log: {n} datagram lines for {s['up']['received'] + s['down']['received']} datagrams received, {len(open(sys.argv[1], 'rb').read()) / 1e6:.0f} MB")
PY

if command -v dnsperf >/dev/null; then
  echo "== dnsperf (closed loop, 500 outstanding) to tunnelprobe serve: straight, then through the impaired relay"
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/k.key"
  "$bin" serve --domain vpn.lab.test --key-file "$work/k.key" --listen 127.0.0.1:5399 --rate-limit 0 --quiet &
  pids+=($!)
  "$bin" loadgen --server 127.0.0.1:5399 --domain vpn.lab.test --key-file "$work/k.key" --write-queries "$work/q.txt" --count 300000
  sleep 0.5
  perf=(sh -c "dnsperf -s 127.0.0.1 -p \$0 -d $work/q.txt -l $seconds -q 500 -t 1 2>&1 | awk '/Queries per second/ {q=\$4} /Queries lost/ {l=\$3} END {print q \" qps, \" l \" lost\"}'")
  echo "anchor: dnsperf straight to serve: $("${perf[@]}" 5399)"
  relay dnsperf "${perf[@]}" 5396 -- --upstream 127.0.0.1:5399 "${impairments[@]}"
fi
