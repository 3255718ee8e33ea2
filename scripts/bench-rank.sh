#!/usr/bin/env bash
# Issue 19, items 1 and 5: `rank` against lab resolvers whose limits are known, run as root.
# Each "resolver" is an impairment relay in the client namespace in front of the lab's unbound:
# policers (--up-rate R --up-rate-queue 0, bursts of 5) that refuse or drop the excess, and a shaper
# with a queue (congestion). Prints each configured limit next to the measured knee, the error, the
# class rank gave it and the time it took, then the ranking and a plan.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product tunnelprobe >/dev/null
bin=$(realpath .build/release/tunnelprobe)
name="br$$"; name=${name:0:8}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  "$bin" lab down --name "$name" >/dev/null 2>&1 || true; rm -rf "$work"
}
trap cleanup EXIT INT TERM

"$bin" lab up --name "$name" --resolver-udp-limit 1232 >/dev/null
status=$("$bin" lab status --name "$name" --json)
key=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["keyFile"])' <<<"$status")
client=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["clientAddress"])' <<<"$status")
resolver=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["resolverAddress"])' <<<"$status")
# port  configured-rate  kind  flags
specs=(
  "5401 25 refuse --up-rate 25 --up-rate-burst 5 --up-rate-queue 0 --up-rate-excess refuse"
  "5402 60 drop --up-rate 60 --up-rate-burst 5 --up-rate-queue 0"
  "5403 150 refuse --up-rate 150 --up-rate-burst 5 --up-rate-queue 0 --up-rate-excess refuse"
  "5404 90 queue --up-rate 90 --up-rate-queue 1000"
)
resolvers=()
for spec in "${specs[@]}"; do
  set -- $spec
  port=$1; shift 3
  "$bin" lab exec --name "$name" -- "$bin" impair --listen "$client:$port" --upstream "$resolver:53" --seed 3 "$@" >/dev/null 2>&1 &
  pids+=($!)
  resolvers+=(--resolver "$client:$port")
done
sleep 1
"$bin" lab exec --name "$name" -- "$bin" scan --domain vpn.lab.test --key-file "$key" "${resolvers[@]}" --per-resolver-qps 15 \
  --timeout 1 --out "$work/scan" --quiet --seed 1
start=$(date +%s.%N)
"$bin" lab exec --name "$name" -- "$bin" rank --scan "$work/scan" --key-file "$key" --out "$work/rank" --quiet --seed 2 \
  --start-rate 10 --step-seconds 2 --pause-seconds 0.5 --timeout 0.5 --ceiling 400 --parallel 4 --target 150kB/s --engine masterdnsvpn
end=$(date +%s.%N)
python3 - "$work/rank/rank.json" "$start" "$end" "${specs[@]}" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); specs = sys.argv[4:]
by = {p["resolver"]: p for p in r["pairs"]}
print(f"rank wall time {float(sys.argv[3]) - float(sys.argv[2]):.1f} s for {len(r['pairs'])} pairs measured 4 at once")
print(f"{'resolver':<20} {'configured':>10} {'kind':<7} {'measured':>9} {'error':>7} {'class':<12} {'steps':>5} {'seconds':>7}")
for spec in specs:
    port, rate, kind = spec.split()[:3]
    p = next(v for k, v in by.items() if k.endswith(":" + port))
    err = (p["sustainableRate"] - float(rate)) / float(rate) * 100
    print(f"{p['resolver']:<20} {rate:>10} {kind:<7} {p['sustainableRate']:>9.1f} {err:>6.1f}% {p['limitedBy']:<12} {len(p['steps']):>5} {p['seconds']:>7.1f}")
for e in r["engines"]:
    print(e["name"] + ": " + ", ".join(f"{x['resolver']} {x['downloadGoodput'] / 1000:.1f} kB/s down" for x in e["pairs"]))
    if e.get("plan"): print("  plan: " + e["plan"]["sentence"] + ": " + ", ".join(f"{u['resolver']} at {u['rate']:.1f} q/s" for u in e["plan"]["uses"]))
PY
