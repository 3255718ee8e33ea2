#!/usr/bin/env bash
# `path` benchmark (issue 3): can the client sustain 5,000 probes per second without being the
# bottleneck? Against `tunnelprobe serve` on loopback (release build), in the same run:
#  1. tunnelprobe path at 5,000 probes/s for DURATION seconds (query 100 characters, response 300 bytes):
#     achieved send rate, loss up/down, and the client's CPU time (user + system) per probe;
#  2. the anchor: dnsperf at the same rate (-Q 5000) for the same time against the same responder with
#     echo probes, and its CPU per query.
# The client is not the bottleneck when it achieves the rate with no loss while using well under one core.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-5000}
DURATION=${DURATION:-6}
PORT=${PORT:-$((20000 + RANDOM % 20000))}
swift build -c release --product tunnelprobe >/dev/null
bin=$(realpath .build/release/tunnelprobe)
work=$(mktemp -d)
cleanup() { [ -n "${srv:-}" ] && kill "$srv" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT INT TERM

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/k.key"
"$bin" serve --domain vpn.lab.test --key-file "$work/k.key" --listen 127.0.0.1:$PORT --rate-limit 0 --threads 1 --quiet &
srv=$!
sleep 1

echo "== tunnelprobe path: $RATE probes/s for $DURATION s (query 100 chars, response 300 bytes)"
/usr/bin/time -f "%U %S %e" -o "$work/path.time" "$bin" path --resolver 127.0.0.1:$PORT --domain vpn.lab.test \
  --key-file "$work/k.key" --rate "$RATE" --duration "$DURATION" --size 100:300 --tmax 1 --seed 1 --out "$work/p" --quiet
python3 - "$work/p/path.json" "$work/path.time" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
r = doc["resolvers"][0]
user, system, wall = map(float, open(sys.argv[2]).read().split()[-3:])
c, s = r["counts"], r["stream"]
cpu = user + system
print(f"path: sent {c['sent']}, answered {c['answered']}, achieved {s['achievedRate']:.0f} probes/s, "
      f"loss up {r['loss']['up']['ratio']:.4f} down {r['loss']['down']['ratio']:.4f}, RTT p50 {r['rttMs']['p50']} ms p99 {r['rttMs']['p99']} ms")
print(f"path client CPU: {cpu:.2f} s over {wall:.2f} s wall (sending, Tmax wait, drains, report) = "
      f"{100 * cpu / wall:.0f} % of one core, {1e6 * cpu / c['sent']:.1f} us per probe")
print(f"drops at the client's own socket: {s.get('clientSocketDrops')}; UDP receive-buffer drops in this network "
      f"namespace during the run (responder, other processes): {doc['client']['udpReceiveBufferErrors']}")
PY

echo "== anchor: dnsperf -Q $RATE for $DURATION s against the same responder (echo probes)"
"$bin" loadgen --server 127.0.0.1:$PORT --domain vpn.lab.test --key-file "$work/k.key" --write-queries "$work/q.txt" \
  --count $((RATE * DURATION + 1000)) >/dev/null
/usr/bin/time -f "%U %S %e" -o "$work/dnsperf.time" dnsperf -s 127.0.0.1 -p $PORT -d "$work/q.txt" -l "$DURATION" \
  -Q "$RATE" -q 500 > "$work/dnsperf.out" 2>&1 || true
python3 - "$work/dnsperf.out" "$work/dnsperf.time" <<'PY'
import re, sys
out = open(sys.argv[1]).read()
user, system, wall = map(float, open(sys.argv[2]).read().split()[-3:])
sent = int(re.search(r"Queries sent:\s+(\d+)", out).group(1))
done = int(re.search(r"Queries completed:\s+(\d+)", out).group(1))
qps = float(re.search(r"Queries per second:\s+([\d.]+)", out).group(1))
cpu = user + system
print(f"dnsperf: sent {sent}, completed {done}, {qps:.0f} queries/s")
print(f"dnsperf client CPU: {cpu:.2f} s over {wall:.2f} s wall = {100 * cpu / wall:.0f} % of one core, {1e6 * cpu / max(sent, 1):.1f} us per query")
PY
