#!/usr/bin/env bash
# Issue 19, item 4: monitor's memory stays flat. 10,000 checks of 10 lab pairs back to back
# (--interval 0), run as root; the resident size (VmRSS) after 100 checks is the anchor that the
# size after 10,000 is compared with, in the same run. Also the check rate.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product tunnelprobe >/dev/null
bin=$(realpath .build/release/tunnelprobe)
name="bm$$"; name=${name:0:8}
work=$(mktemp -d)
cleanup() { "$bin" lab down --name "$name" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT INT TERM
"$bin" lab up --name "$name" --resolver-udp-limit 1232 >/dev/null
key=$("$bin" lab status --name "$name" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["keyFile"])')
"$bin" lab exec --name "$name" -- "$bin" scan --domain vpn.lab.test --key-file "$key" --resolver 198.18.4.0/28 --cidr-cap 10 \
  --engine masterdnsvpn --out "$work/scan" --quiet --seed 1
"$bin" lab exec --name "$name" -- "$bin" monitor --scan "$work/scan" --key-file "$key" --interval 0 --checks "${CHECKS:-10000}" \
  --timeout 1 --out "$work/monitor" --quiet --seed 2 || true
python3 - "$work/monitor/monitor.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = {s["checks"]: s["rssKB"] for s in r["memory"]}
print(f"{r['checks']} checks of {len(r['pairs'])} pairs in {r['rounds']} rounds, {r['elapsedSeconds']:.1f} s "
      f"({r['checks'] / r['elapsedSeconds']:.0f} checks/s); history lines on disk, per-pair state in memory")
print("VmRSS: " + ", ".join(f"{k} checks {v} kB" for k, v in sorted(m.items())))
if 100 in m:
    print(f"after {r['checks']} checks vs after 100: {m[max(m)] - m[100]:+d} kB")
PY
