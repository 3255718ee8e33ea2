#!/usr/bin/env bash
# Issue 19: monitor's memory after 10,000 checks equals its memory after 100. 10,000 checks of 10
# lab pairs back to back (--interval 0), run as root; the figures after 100 checks are the anchor
# that the figures after 10,000 are compared with, in the same run: the resident size (VmRSS), its
# anonymous part (RssAnon: heap and stacks, without the program's code pages) and the heap glibc
# counts in use (mallinfo2). Then the same run with glibc's per-thread cache off
# (GLIBC_TUNABLES=glibc.malloc.tcache_count=0), to show what of any difference is that cache: chunks
# freed into it stay counted as in use and keep their pages. Also the check rate.
# CHECKS=100000 ./scripts/bench-monitor.sh runs longer.
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
for run in default tcache-off; do
  tunables=""
  [ "$run" = tcache-off ] && tunables="glibc.malloc.tcache_count=0"
  "$bin" lab exec --name "$name" -- env ${tunables:+GLIBC_TUNABLES=$tunables} "$bin" monitor --scan "$work/scan" --key-file "$key" \
    --interval 0 --checks "${CHECKS:-10000}" --timeout 1 --out "$work/monitor-$run" --quiet --seed 2 || true
done
python3 - "$work/monitor-default/monitor.json" "$work/monitor-tcache-off/monitor.json" <<'PY'
import json, sys
for path, label in zip(sys.argv[1:], ["glibc defaults", "glibc tcache off"]):
    r = json.load(open(path))
    # The last sample is taken at the end, after the one at the last power of ten: keep the first per count.
    m = {}
    for s in r["memory"]:
        m.setdefault(s["checks"], s)
    print(f"{label}: {r['checks']} checks of {len(r['pairs'])} pairs in {r['rounds']} rounds, {r['elapsedSeconds']:.1f} s "
          f"({r['checks'] / r['elapsedSeconds']:.0f} checks/s)")
    print(f"  {'checks':>7} {'VmRSS kB':>9} {'RssAnon kB':>10} {'heap in use kB':>14} {'heap free kB':>12} {'threads':>7}")
    for k, s in sorted(m.items()):
        print(f"  {k:>7} {s['rssKB']:>9} {s.get('anonKB', '-'):>10} {s.get('heapInUseKB', '-'):>14} {s.get('heapFreeKB', '-'):>12} {s.get('threads', '-'):>7}")
    last = max(m)
    if 100 in m:
        a, b = m[100], m[last]
        def d(key):
            return f"{b[key] - a[key]:+d} kB" if key in a and key in b else "-"
        pages = (b["rssKB"] - a["rssKB"]) / 4
        print(f"  after {last} checks vs after 100: VmRSS {d('rssKB')} ({pages:+.0f} pages of 4 kB), RssAnon {d('anonKB')}, "
              f"heap in use {d('heapInUseKB')}, threads {a.get('threads', '-')} -> {b.get('threads', '-')}")
PY
