#!/usr/bin/env bash
# `serve --forward` benchmark (issue 17): what the relay in front of a tunnel server adds, in delay
# and in throughput, against the same load sent straight to the upstream in the same run (the anchor).
#
# Upstream: scripts/udp-blast.c in echo mode on loopback (answers every datagram with itself), standing
# in for the tunnel server; the relay is `tunnelprobe serve --forward` in front of it.
#  1. Delay: one query at a time (closed loop), N queries of a tunnel-sized name that is not a probe,
#     each from a new source port as a port-randomising resolver sends them (RFC 5452 9.2; every
#     query is a new flow in the relay), then N from one port (one flow). Round-trip percentiles,
#     straight and through the relay; the difference is the relay's added delay.
#  2. Throughput: udp-blast open loop at RATE queries/s from one port, straight and through the relay:
#     answers per second.
#  3. Probes: `loadgen` (closed loop, authenticated echo probes) against plain `serve` and against
#     `serve --forward`: what reading every query for a MAC costs the probe answers themselves.
# Every process it starts is stopped on exit. On a shared 2-core machine, numbers move between runs:
# compare within one run only.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product tunnelprobe >/dev/null
bin=$(realpath .build/release/tunnelprobe)
seconds=${SECONDS_PER_RUN:-5}
rate=${RATE:-30000}
queries=${QUERIES:-3000}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT INT TERM

${CC:-cc} -O2 -o "$work/udp-blast" scripts/udp-blast.c
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/k.key"
"$work/udp-blast" echo 5497 &
pids+=($!)
"$bin" serve --domain vpn.lab.test --key-file "$work/k.key" --listen 127.0.0.1:5496 --rate-limit 0 --forward 127.0.0.1:5497 --quiet &
relay=$!
pids+=($relay)
"$bin" serve --domain vpn.lab.test --key-file "$work/k.key" --listen 127.0.0.1:5495 --rate-limit 0 --quiet &
pids+=($!)
sleep 1

echo "== 1. delay: $queries queries one at a time (closed loop), straight to the echo and through serve --forward"
python3 - "$queries" <<'PY'
import os, random, socket, statistics, struct, sys, time
n = int(sys.argv[1])
rng = random.Random(17)
def query():
    # A 200-character tunnel-like name under the zone (not a probe: no valid meta block).
    labels = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz234567") for _ in range(50)) for _ in range(4)]
    q = struct.pack(">HHHHHH", rng.randrange(65536), 0x0100, 1, 0, 0, 1)
    for l in labels + ["vpn", "lab", "test"]:
        q += bytes([len(l)]) + l.encode()
    return q + b"\0" + struct.pack(">HH", 10, 1) + b"\0\0\x29\x10\0\0\0\0\0\0\0"
def run(port, fresh):
    rtts, lost = [], 0
    s = None
    for i in range(n):
        if fresh or s is None:
            if s: s.close()
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1)
        q = query()
        t = time.perf_counter_ns()
        s.sendto(q, ("127.0.0.1", port))
        try:
            d = s.recv(4096)
            rtts.append((time.perf_counter_ns() - t) / 1000)
        except socket.timeout:
            lost += 1
    s.close()
    rtts.sort()
    pct = lambda p: rtts[min(len(rtts) - 1, int(p * len(rtts)))]
    return statistics.median(rtts), pct(0.9), pct(0.99), lost
for fresh in (True, False):
    kind = "a new source port per query" if fresh else "one source port"
    # Alternate straight and relayed runs twice so that drift on the machine hits both alike.
    results = {5497: [], 5496: []}
    for _ in range(2):
        for port in (5497, 5496):
            results[port].append(run(port, fresh))
    for port, name in ((5497, "straight"), (5496, "relayed ")):
        r = results[port]
        med = statistics.mean(x[0] for x in r); p90 = statistics.mean(x[1] for x in r); p99 = statistics.mean(x[2] for x in r)
        print(f"  {kind:28s} {name}: median {med:7.1f} us, p90 {p90:7.1f} us, p99 {p99:7.1f} us, lost {sum(x[3] for x in r)} of {2 * n}")
    added = statistics.mean(x[0] for x in results[5496]) - statistics.mean(x[0] for x in results[5497])
    print(f"  {kind:28s} added by the relay: {added:.1f} us at the median")
PY

echo "== 2. throughput: udp-blast, $rate queries/s offered for $seconds s from one port"
echo "  straight: $("$work/udp-blast" send 5497 "$seconds" "$rate")"
t0=$(awk '{print $14 + $15}' /proc/$relay/stat)
echo "  relayed : $("$work/udp-blast" send 5496 "$seconds" "$rate")"
t1=$(awk '{print $14 + $15}' /proc/$relay/stat)
echo "  relay CPU: $(( (t1 - t0) * 1000 / $(getconf CLK_TCK) )) ms during $seconds s of load"

echo "== 3. probes: loadgen (closed loop, 100 outstanding, $seconds s), plain serve, then serve --forward"
for port in 5495 5496 5495 5496; do
  name=$([ "$port" = 5495 ] && echo "serve          " || echo "serve --forward")
  echo "  $name: $("$bin" loadgen --server 127.0.0.1:$port --domain vpn.lab.test --key-file "$work/k.key" --duration "$seconds" --json)"
done
