#!/bin/sh
# Start-to-verdict time of `verify` against its anchor, the engine's own handshake time, measured in
# the same run: verify.json carries both (timing.startToVerdictMs, timing.handshakeMs). Target for
# iodine: handshake + at most 5000 ms for the data phase and every check together.
# Usage: scripts/bench-verify.sh [BIN] [RUNS]   (as root; builds and removes its own lab)
set -eu
BIN=${1:-.build/debug/tunnelprobe}
RUNS=${2:-3}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
NAME=bv$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
OUT=$(mktemp -d)
trap '"$BIN" lab down --name "$NAME" >/dev/null 2>&1 || true; rm -rf "$OUT"' EXIT INT TERM
"$BIN" lab up --name "$NAME" --tunnel-domain t.lab.test --no-qname-minimisation --json > "$OUT/lab.json"
field() { python3 -c "import json,sys; print(json.load(open('$OUT/lab.json'))['tunnel']['$1'])"; }
cat > "$OUT/iodine.json" <<JSON
{"version":1,"name":"bench iodine","protocol":"iodine","domain":"t.lab.test","resolvers":[{"address":"198.18.0.1"}],
 "expectedExitIP":"198.18.2.1","dns":["198.18.2.2"],"iodine":{"passwordFile":"$(field iodinePasswordFile)"}}
JSON
cat > "$OUT/openvpn.json" <<JSON
{"version":1,"name":"bench openvpn","protocol":"openvpn","expectedExitIP":"198.18.2.1","dns":["198.18.2.2"],
 "openvpn":{"remote":"$(field openvpnRemote)","keyFile":"$(field openvpnKeyFile)","localAddress":"198.18.9.2","remoteAddress":"198.18.9.1"}}
JSON
cat > "$OUT/wireguard.json" <<JSON
{"version":1,"name":"bench wireguard","protocol":"wireguard","expectedExitIP":"198.18.2.1","dns":["198.18.2.2"],
 "wireguard":{"endpoint":"$(field wireguardEndpoint)","keyFile":"$(field wireguardClientKeyFile)","address":"198.18.10.2/24","peerPublicKey":"$(field wireguardServerPublicKey)"}}
JSON
printf '%-10s %4s %8s %12s %14s %18s\n' engine run verdict handshakeMs verdictMs afterHandshakeMs
for engine in iodine openvpn wireguard; do
  i=1
  while [ "$i" -le "$RUNS" ]; do
    "$BIN" lab exec --name "$NAME" -- "$BIN" verify --profile "$OUT/$engine.json" --whoami-url http://198.18.2.2/ \
      --out "$OUT/$engine-$i" --quiet --seed "$i" || true
    python3 - "$OUT/$engine-$i/verify.json" "$engine" "$i" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t = r["timing"]
print("%-10s %4s %8s %12s %14s %18s" % (sys.argv[2], sys.argv[3], r["verdict"], t.get("handshakeMs"), t["startToVerdictMs"], t.get("afterHandshakeMs")))
PY
    i=$((i + 1))
  done
done
