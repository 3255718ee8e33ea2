#!/usr/bin/env bash
# impair relay benchmark (issue 3): datagrams per second the relay forwards on loopback with
# impairments on, against the anchor measured in the same run: dnsperf straight to the same
# upstream without the relay.
#
# Upstream: `tunnelprobe serve` (authenticated echo probes, as bench-scan.sh uses). Load: dnsperf,
# closed loop, many queries outstanding. The relay's own summary (log's last line) gives what it
# forwarded; the figure is (up forwarded + down forwarded) / relay seconds under load.
# Impairments: 1 % loss + 5 ms delay + 1 % duplication in both directions, with and without --log.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product tunnelprobe >/dev/null
bin=$(realpath .build/release/tunnelprobe)
seconds=${SECONDS_PER_RUN:-10}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT INT TERM

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/k.key"
"$bin" serve --domain vpn.lab.test --key-file "$work/k.key" --listen 127.0.0.1:5399 --rate-limit 0 --quiet &
pids+=($!)
"$bin" loadgen --server 127.0.0.1:5399 --domain vpn.lab.test --key-file "$work/k.key" --write-queries "$work/q.txt" --count 400000
sleep 1

perf() {  # dnsperf against PORT for $seconds; prints "qps lost"
  dnsperf -s 127.0.0.1 -p "$1" -d "$work/q.txt" -l "$seconds" -q "${OUTSTANDING:-2000}" -t 1 2>&1 |
    awk '/Queries per second/ {q=$4} /Queries lost/ {l=$3} END {print q, l}'
}

relay() {  # name, extra flags...: runs dnsperf through a relay and prints the relay's figures
  local name=$1; shift
  "$bin" impair --listen 127.0.0.1:5398 --upstream 127.0.0.1:5399 --seed 1 "$@" 2>"$work/$name.err" &
  local rp=$!
  sleep 1
  local out; out=$(perf 5398)
  kill -INT "$rp"; wait "$rp" || true
  echo "$name: dnsperf through the relay $out (qps, lost)"
  grep -E "^(up|down|traffic):" "$work/$name.err" | sed 's/^/  relay /'
}

echo "== anchor: dnsperf straight to serve (no relay), ${seconds} s"
echo "anchor: $(perf 5399) (qps, lost)"

impairments=(--up-loss 0.01 --down-loss 0.01 --up-delay 5 --down-delay 5 --up-duplicate 0.01 --down-duplicate 0.01)
echo "== relay, no impairment, no log"
relay "plain"
echo "== relay, 1 % loss + 5 ms delay + 1 % duplication both ways, no log"
relay "impaired" "${impairments[@]}"
echo "== relay, same impairments, with --log"
relay "impaired+log" --log "$work/impair.jsonl" "${impairments[@]}"
python3 - "$work/impair.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
s = json.loads(lines[-1])["summary"]
up, down = s["up"], s["down"]
# The relay ran ~1 s idle before and after the load: time the forwarding from the first to the
# last datagram line instead of the relay's lifetime.
first = json.loads(lines[1])["tNs"]; last = json.loads(lines[-2])["tNs"]
span = (last - first) / 1e9
fwd = up["forwarded"] + down["forwarded"]
print(f"relay log: {len(lines)-2} datagram lines over {span:.2f} s; up received {up['received']} forwarded {up['forwarded']} "
      f"dropped {sum(up['dropped'].values())} duplicated {up['duplicated']}; down received {down['received']} forwarded {down['forwarded']} "
      f"dropped {sum(down['dropped'].values())} duplicated {down['duplicated']}")
print(f"relay forwarded {fwd / span:,.0f} datagrams/s (both directions), {(up['received'] + down['received']) / span:,.0f} received/s")
PY
