#!/usr/bin/env bash
# Issue 29: the same 1,000 resolver addresses scanned over UDP and over DoH (RFC 8484, HTTP/2 POST),
# and optionally TCP and DoT, through the lab's unbound (`lab up --resolver-tls`: unbound serves
# every transport on every address of 198.18.4.0/22, with the lab's CA). Release build, run as root.
# Rounds are interleaved (udp, https, udp, https, ...) so the machine's load falls on both alike;
# prints each scan's time (scan.json summary.durationSeconds, and the wall time with process start),
# the pairs accepted, and per transport the median time and its ratio to UDP's.
#   scripts/bench-transports.sh                           # 1,000 addresses, udp and https, 2 rounds
#   TRANSPORTS="udp tcp tls https" ROUNDS=3 COUNT=500 scripts/bench-transports.sh
#   BIN=/path/to/tunnelprobe scripts/bench-transports.sh  # a binary already built (release)
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${BIN:-}" ]]; then
  swift build -c release --product tunnelprobe >/dev/null
  BIN=.build/release/tunnelprobe
fi
bin=$(realpath "$BIN")
count=${COUNT:-1000}
rounds=${ROUNDS:-2}
transports=${TRANSPORTS:-udp https}
name="bt$$"; name=${name:0:8}
work=$(mktemp -d)
cleanup() { "$bin" lab down --name "$name" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT INT TERM

"$bin" lab up --name "$name" --resolver-udp-limit 1232 --resolver-tls >/dev/null
status=$("$bin" lab status --name "$name" --json)
key=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["keyFile"])' <<<"$status")
ca=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["stateDirectory"] + "/lab-ca.pem")' <<<"$status")
domain=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["domain"])' <<<"$status")

# The same addresses for every transport: 198.18.4.1 upward (the resolver's AnyIP block, LabTopology).
python3 - "$work" "$count" <<'PY'
import ipaddress, sys
work, count = sys.argv[1], int(sys.argv[2])
first = int(ipaddress.ip_address("198.18.4.1"))
addresses = [str(ipaddress.ip_address(first + i)) for i in range(count)]
forms = {"udp": "{}", "tcp": "tcp://{}", "tls": "tls://{}#resolver.lab.test", "https": "https://{}/dns-query#resolver.lab.test"}
for t, form in forms.items():
    with open(f"{work}/{t}.txt", "w") as f:
        f.write("".join(form.format(a) + "\n" for a in addresses))
PY

echo "$count addresses through the lab's unbound; rounds: $rounds; transports: $transports; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$rounds"); do
  for t in $transports; do
    out="$work/$t-$round"
    start=$(date +%s.%N)
    "$bin" lab exec --name "$name" -- "$bin" scan --domain "$domain" --key-file "$key" --resolvers "$work/$t.txt" \
      --tls-ca "$ca" --concurrency 256 --record-type TXT --engine masterdnsvpn --out "$out" --quiet --seed 1 || true
    end=$(date +%s.%N)
    python3 - "$out/scan.json" "$t" "$round" "$start" "$end" "$work/times.txt" <<'PY'
import json, sys
path, t, rnd, start, end, times = sys.argv[1:]
r = json.load(open(path)); s = r["summary"]
wall = float(end) - float(start)
print(f"round {rnd} {t:5}: scan {s['durationSeconds']:.2f} s (wall {wall:.2f} s), pairs {s['pairs']}, accepted {s['accepted']}, queries {s['queries']}")
open(times, "a").write(f"{t} {s['durationSeconds']}\n")
PY
  done
done
python3 - "$work/times.txt" <<'PY'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    t, d = line.split()
    times.setdefault(t, []).append(float(d))
udp = statistics.median(times["udp"]) if "udp" in times else None
for t, ds in times.items():
    m = statistics.median(ds)
    ratio = f", {m / udp:.2f} x udp" if udp else ""
    print(f"median {t:5}: {m:.2f} s over {len(ds)} round(s){ratio}")
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
