#!/usr/bin/env bash
# Sweep benchmark (issue 21), run as root: the simulated internet (`lab internet`, 198.19.0.0/16,
# about 2 % answering as a seeded mix: honest with UDP limits, hijackers, lossy, rate-limited, slow)
# swept by `tunnelprobe sweep` at --rate, with the MTU scan of what answers.
#  1. the sweep alone (--sweep-only) of 4,096, 16,384 and 65,536 addresses: packets per second
#     sent vs --rate, peak memory (VmHWM: flat in the number of addresses), every answering address
#     found (compared with truth.json), no address probed twice (counted by the simulated hosts);
#  2. the sweep with the MTU scan of what answers, 4,096 (a /20) and 65,536 (the /16): wall time
#     (target under 60 s for the /16 on two cores), the accepted set against the truth;
#  3. the anchor, in the same run: the stateful `scan` of 1,024 addresses of the same /16 (a /22)
#     with its defaults (2 s timeout, 2 attempts, 256 pairs at once), and its cost per address
#     scaled to the /16.
#  4. the send path against ZMap (issue 31), in the same run: a client namespace behind a veth to
#     the simulated internet (3 % answering), ZMap 2.1 (UDP module, a DNS query as payload, allowed
#     198.19.0.0/16 only, its default blocklist replaced by an empty one because that list holds
#     198.18.0.0/15) and `sweep --sweep-only` over the /16 at 50,000 and 200,000 pps and unlimited
#     (ZMap -r 0, sweep --rate 1000000), the sweep once per send path (--send-path udp: the kernel's
#     UDP socket; --send-path packet: frames built by the sweep on a packet socket, as ZMap does):
#     packets per second sent, hosts found, CPU per probe, and the ratios to ZMap; then that each
#     address was probed once by each of the six sweeps (the simulated hosts' count).
#     Figures (eight runs, shared 2-core machine, other builds running, load average 10.3-15.7):
#     sweep packet / ZMap pps at 50k 1.35, 2.63, 1.44, 1.01, 1.14, 1.08, 1.09, 0.99; at 200k 1.59,
#     4.56, 1.14, 1.57, 1.20, 1.14, 1.08, 1.05; unlimited 1.45, 1.17, 1.72, 1.05, 0.81, 1.91, 0.81,
#     2.61 (ZMap 20k to 181k pps): not yet at least ZMap's in every run. 1,703 of 1,703 always-answering
#     hosts and each address once per sweep in every run. The sending thread's time is the
#     kernel's (87 % of perf's samples); sealing each probe took 23 % of it before (HMAC-SHA256
#     12.8, base32 3.8, allocation 3.3, the zone's text 2.6) and 7 % since KeyedHMAC runs on the C
#     value-type SHA-256 with the zone absorbed once (README, "sweep").
# BIN=path uses that binary instead of building; RATE (default 5000), SEED (default 21), ANSWERING (the share
# that answers, default 0.02; issue 27's target is with 0.03), ANCHOR=0 to skip the anchor, ZMAP=0 to skip the ZMap
# comparison, ONLY_ZMAP=1 to run the comparison alone, ONLY_FULL=1 to run only the /16 sweep with the MTU scan
# (issue 27's target) and nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${BIN:-}" ]; then bin=$(realpath "$BIN"); else
swift build -c release --product tunnelprobe >/dev/null
bin=$(realpath .build/release/tunnelprobe)
fi
rate=${RATE:-5000}
seed=${SEED:-21}
answering=${ANSWERING:-0.02}
work=$(mktemp -d)
simpid=""
clientns=""
cleanup() {
  if [ -n "$clientns" ]; then ip netns del "$clientns" 2>/dev/null || true; fi
  if [ -n "$simpid" ] && kill -0 "$simpid" 2>/dev/null; then kill -TERM "$simpid"; wait "$simpid" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

start_sim() {  # $1: directory, $2: answering share (default: ANSWERING)
  "$bin" lab internet --dir "$1" --seed "$seed" --answering "${2:-$answering}" >/dev/null &
  simpid=$!
  for _ in $(seq 1 300); do [ -f "$1/ready" ] && return 0; sleep 0.1; done
  echo "lab internet did not get ready" >&2; exit 1
}
stop_sim() { kill -TERM "$simpid"; wait "$simpid" || true; simpid=""; }

run_case() {  # $1: addresses, $2: full | sweep-only
  local size=$1 mode=$2 block extra=()
  case $size in 4096) block=198.19.0.0/20 ;; 16384) block=198.19.0.0/18 ;; 65536) block=198.19.0.0/16 ;; esac
  [ "$mode" = sweep-only ] && extra=(--sweep-only)
  local dir="$work/sim-$size-$mode"
  start_sim "$dir"
  local ns; ns=$(cat "$dir/netns")
  echo "$block" > "$dir/block.txt"
  echo "== $mode: $size addresses ($block) at --rate $rate"
  local start end
  start=$(date +%s.%N)
  ip netns exec "$ns" "$bin" sweep --ranges "$dir/block.txt" --domain vpn.sim.test --key-file "$dir/key.hex" \
    --rate "$rate" --timeout 1 --concurrency 256 --engine masterdnsvpn --seed "$seed" --out "$dir/report" --quiet "${extra[@]}"
  end=$(date +%s.%N)
  stop_sim
  python3 - "$dir" "$block" "$start" "$end" "$mode" <<'PY'
import ipaddress, json, sys
d, block, start, end, mode = sys.argv[1], ipaddress.ip_network(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
truth = json.load(open(f"{d}/truth.json"))
sweep = json.load(open(f"{d}/report/sweep.json"))
scan = json.load(open(f"{d}/report/scan.json"))
probes = json.load(open(f"{d}/probes.json"))
hosts = [h for h in truth["hosts"] if ipaddress.ip_address(h["address"]) in block]
found = set(open(f"{d}/report/answering.txt").read().split())
always = [h for h in hosts if h["behaviour"] != "lossy"]
lossy = [h for h in hosts if h["behaviour"] == "lossy"]
missed = [h["address"] for h in always if h["address"] not in found]
extra = found - {h["address"] for h in hosts}
print(f"wall {end - start:.2f} s (in the command {sweep['seconds']:.2f} s); sent {sweep['sentThisRun']} probes at "
      f"{sweep['packetsPerSecond']:.0f} pps (--rate {sweep['rate']:.0f}); peak RSS {sweep['peakRSSKiB'] / 1024:.1f} MiB")
print(f"truth: {len(hosts)} answering hosts ({len(always)} always answer, {len(lossy)} lossy); found {len(found)}: "
      f"{len(always) - len(missed)} of {len(always)} always-answering, {sum(h['address'] in found for h in lossy)} of {len(lossy)} lossy, "
      f"{len(extra)} not in the truth; missed {missed[:5]}")
if mode == "full":
    accepted = {p["resolver"].split(":")[0] for p in scan["pairs"] if p["accepted"]}
    expected = {h["address"] for h in hosts if h["behaviour"] in ("honest", "slow", "rateLimited")}
    print(f"MTU scan: {len(scan['pairs'])} pairs, {len(accepted)} accepted; of the {len(expected)} honest/slow/rate-limited "
          f"{len(expected & accepted)} accepted, {len(accepted - expected)} accepted outside them (lossy)")
    # Every honest host's MTU within 4 bytes of its limit (issue 27): the largest answer that came whole.
    size = {p["resolver"].split(":")[0]: (p.get("download") or {}).get("responseSize") for p in scan["pairs"] if p["accepted"]}
    limits = {h["address"]: h["udpLimit"] for h in hosts if h["behaviour"] == "honest"}
    off = [(a, limit, size.get(a)) for a, limit in limits.items() if size.get(a) is None or abs(size[a] - limit) > 4]
    print(f"honest hosts' download MTU within 4 bytes of their UDP limit: {len(limits) - len(off)} of {len(limits)}; off {off[:5]}")
print(f"sweep probes seen by the hosts: {probes['sweepProbes']} to {probes['addressesProbed']} addresses, "
      f"{len(probes['probedTwice'])} probed twice")
PY
}

if [ "${ONLY_FULL:-0}" = 1 ]; then
  run_case 65536 full
  exit 0
fi
if [ "${ONLY_ZMAP:-0}" != 1 ]; then
for size in 4096 16384 65536; do run_case "$size" sweep-only; done
for size in 4096 65536; do run_case "$size" full; done
fi

if [ "${ANCHOR:-1}" != 0 ] && [ "${ONLY_ZMAP:-0}" != 1 ]; then
  dir="$work/sim-anchor"
  start_sim "$dir"
  ns=$(cat "$dir/netns")
  echo "== anchor: stateful scan of 1,024 addresses (198.19.0.0/22), defaults"
  start=$(date +%s.%N)
  ip netns exec "$ns" "$bin" scan --resolver 198.19.0.0/22 --domain vpn.sim.test --key-file "$dir/key.hex" \
    --engine masterdnsvpn --seed "$seed" --out "$dir/report" --quiet || true
  end=$(date +%s.%N)
  stop_sim
  python3 - "$dir" "$start" "$end" <<'PY'
import json, sys
d, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
s = json.load(open(f"{d}/report/scan.json"))["summary"]
wall = end - start
print(f"wall {wall:.2f} s for {s['pairs']} pairs ({s['accepted']} accepted): {wall / max(1, s['pairs']) * 1000:.1f} ms per address, "
      f"{wall / max(1, s['pairs']) * 65536 / 60:.1f} min scaled to 65,536 addresses")
PY
fi

# 4. ZMap vs the sweep's send path, one client namespace behind a veth, same run.
if [ "${ZMAP:-1}" != 0 ]; then
  if ! command -v zmap >/dev/null; then echo "zmap is not installed (apt-get install zmap; make deps): comparison skipped" >&2; exit 1; fi
  dir="$work/sim-zmap"
  start_sim "$dir" 0.03
  simns=$(cat "$dir/netns")
  tag=$(printf '%06x' $((RANDOM * 32768 + RANDOM)))
  clientns="tpzc-$tag"
  ip netns add "$clientns"
  ip -n "$clientns" link set lo up
  ip link add "tpzc${tag}c" netns "$clientns" type veth peer name "tpzc${tag}s" netns "$simns"
  ip -n "$clientns" addr add 198.18.255.2/30 dev "tpzc${tag}c"
  ip -n "$simns" addr add 198.18.255.1/30 dev "tpzc${tag}s"
  ip -n "$clientns" link set "tpzc${tag}c" up
  ip -n "$simns" link set "tpzc${tag}s" up
  ip -n "$clientns" route add 198.19.0.0/16 via 198.18.255.1
  gwmac=$(ip -n "$simns" -o link show "tpzc${tag}s" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
  echo 198.19.0.0/16 > "$dir/block.txt"
  echo 198.19.0.0/16 > "$dir/zmap-allow.txt"
  : > "$dir/zmap-block.txt"
  # A DNS query (id 0x1234, RD, one TXT question zmap.vpn.sim.test) as the UDP payload.
  python3 -c 'import struct,sys; q=struct.pack(">HHHHHH",0x1234,0x0100,1,0,0,0)+b"".join(bytes([len(l)])+l for l in b"zmap.vpn.sim.test".split(b"."))+b"\0"+struct.pack(">HH",16,1); open(sys.argv[1],"wb").write(q)' "$dir/query.bin"
  # CPU seconds (user + system) a command used, written to $1: a figure the machine's load does not
  # change the way it changes packets per second.
  cpu() { local out=$1; shift; python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[2:]).returncode
u = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write(str(u.ru_utime + u.ru_stime))
sys.exit(r)' "$out" "$@"; }
  truth_hosts=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["hosts"]))' "$dir/truth.json")
  echo "== ZMap vs sweep --sweep-only: 198.19.0.0/16 ($truth_hosts answering hosts), client namespace behind a veth; load $(cut -d' ' -f1-3 /proc/loadavg)"
  for r in 50000 200000 0; do
    zr=$r; tr=$r; label=$r
    [ "$r" = 0 ] && { tr=1000000; label=unlimited; }
    cpu "$dir/zmap-$label.cpu" ip netns exec "$clientns" zmap -M udp -p 53 --probe-args="file:$dir/query.bin" -i "tpzc${tag}c" -G "$gwmac" \
      -S 198.18.255.2 -w "$dir/zmap-allow.txt" -b "$dir/zmap-block.txt" -r "$zr" -c 1 -o "$dir/zmap-$label.csv" \
      -m "$dir/zmap-$label.json" 2>"$dir/zmap-$label.log" || { echo "zmap failed:"; tail -5 "$dir/zmap-$label.log"; }
    for path in udp packet; do
      cpu "$dir/sweep-$path-$label.cpu" ip netns exec "$clientns" "$bin" sweep --ranges "$dir/block.txt" --domain vpn.sim.test --key-file "$dir/key.hex" \
        --sweep-only --rate "$tr" --timeout 1 --seed "$seed" --send-path "$path" --out "$dir/sweep-$path-$label" --quiet
    done
    python3 - "$dir" "$label" <<'PY'
import json, sys
d, label = sys.argv[1], sys.argv[2]
meta = json.load(open(f"{d}/zmap-{label}.json"))
# ZMap's own send rate: its last status line, "send: N done (X Kp/s avg)" (packets over its send time).
import re
zpps = None
m = re.findall(r"send: \d+ done \(([\d.]+) ([KMG]?)p/s avg\)", open(f"{d}/zmap-{label}.log").read())
if m:
    v, u = m[-1]
    zpps = float(v) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[u]
zset = {l.split(",")[0] for l in open(f"{d}/zmap-{label}.csv").read().split() if l and l[0].isdigit()}
zfound = len(zset)
# The hosts that answer every query (all but the lossy ones, which drop 30 % at random): the fair
# count of what each sender found, since the lossy hosts' draws depend on the order of the runs.
always = {h["address"] for h in json.load(open(f"{d}/truth.json"))["hosts"] if h["behaviour"] != "lossy"}
zcpu = float(open(f"{d}/zmap-{label}.cpu").read()) / 65536 * 1e6
line = (f"rate {label}: zmap {zpps or 0:.0f} pps, {zfound} hosts answered ({len(zset & always)} of {len(always)} always-answering), "
        f"{zcpu:.1f} us CPU per probe")
for path in ("udp", "packet"):
    s = json.load(open(f"{d}/sweep-{path}-{label}/sweep.json"))
    answered = set(open(f"{d}/sweep-{path}-{label}/answering.txt").read().split())
    found = f"{len(answered)} ({len(answered & always)} of {len(always)} always-answering)"
    tpps = s["packetsPerSecond"]
    used = (s.get("sendPath") or {}).get("used", "?")
    ratio = f"{tpps / zpps:.2f}" if zpps else "-"
    tcpu = float(open(f"{d}/sweep-{path}-{label}.cpu").read()) / s["sentThisRun"] * 1e6
    line += (f"\n  sweep {path} (used {used}) {tpps:.0f} pps (sent {s['sentThisRun']}), {found} answering, {tcpu:.1f} us CPU per probe, "
             f"sweep/zmap pps {ratio}, CPU per probe {tcpu / zcpu:.2f}")
print(line)
PY
  done
  ip netns del "$clientns"; clientns=""
  stop_sim
  # No address probed twice by one sweep: the simulated hosts count the probes that carry their
  # own address under the key (ZMap's queries are not sweep probes), six sweeps in all.
  python3 - "$dir" <<'PY'
import json, sys
p = json.load(open(f"{sys.argv[1]}/probes.json"))
counts = p["addressesByProbeCount"]
print(f"sweep probes seen by the hosts over the six sweeps: {p['sweepProbes']} to {p['addressesProbed']} addresses, "
      f"addresses by probe count {counts} ({'each address once per sweep' if counts == {'6': 65536} else 'NOT once per sweep'})")
PY
fi
