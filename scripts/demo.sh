#!/usr/bin/env bash
# The demo on the built-in lab: lab up -> scan -> report -> lab down (also on failure or Ctrl-C).
set -euo pipefail
bin=$(realpath "${1:-.build/debug/tunnelprobe}")
[ "$(id -u)" = 0 ] || { echo "demo: run as root (it creates network namespaces)" >&2; exit 77; }
name="demo$$"
name=${name:0:8}
cleanup() { "$bin" lab down --name "$name" >/dev/null 2>&1 || true; }
trap cleanup EXIT INT TERM
"$bin" lab up --name "$name" --resolver-udp-limit 1232
status=$("$bin" lab status --name "$name" --json)
field() { printf '%s' "$status" | python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
key=$(field "['keyFile']"); domain=$(field "['domain']"); resolver=$(field "['resolverAddress']")
out="$PWD/reports/$(date -u +%Y%m%d-%H%M%S)-demo"
# The lab's resolver, two of its alias addresses, and an address where nobody answers.
"$bin" lab exec --name "$name" -- "$bin" scan --domain "$domain" --key-file "$key" \
  --resolver "$resolver" --resolver 198.18.4.10 --resolver 198.18.4.11 --resolver 198.18.0.99 \
  --timeout 1 --out "$out" || true
echo
cat "$out/scan.md"
echo "report written to $out (scan.json, scan.md, engine exports)"
