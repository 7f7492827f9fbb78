#!/usr/bin/env bash
# Loopback goodput of STRIDE (stride perf) against kernel TCP (stride perf --tcp): same harness,
# same bytes, one run each, printed as a ratio; then STRIDE through the userspace relay
# (1 Gbit/s, 20 us, 256 KiB queue) with the bottleneck's utilisation and queueing delay.
# Usage: bash bench/udp_vs_tcp.sh [BYTES]   (default 1GB)
set -euo pipefail
cd "$(dirname "$0")/.."
BYTES="${1:-1GB}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build --release -q -p stride-cli
B="$CARGO_TARGET_DIR/release/stride"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
field() { python3 -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['$1'])"; }

P1=$(port); "$B" perf server --listen 127.0.0.1:$P1 --json >/dev/null 2>&1 & pids+=($!)
P2=$(port); "$B" perf server --tcp --listen 127.0.0.1:$P2 --json >/dev/null 2>&1 & pids+=($!)
sleep 0.3
S=$("$B" perf client --to 127.0.0.1:$P1 --bytes "$BYTES" --json)
T=$("$B" perf client --tcp --to 127.0.0.1:$P2 --bytes "$BYTES" --json)
sg=$(echo "$S" | field goodput_gbps); tg=$(echo "$T" | field goodput_gbps)
echo "stride: $S"
echo "tcp:    $T"
python3 -c "print(f'loopback goodput: STRIDE {float($sg):.3f} Gbit/s, TCP {float($tg):.3f} Gbit/s, ratio STRIDE/TCP = {float($sg)/float($tg):.3f}')"

P3=$(port); "$B" relay --listen 127.0.0.1:$P3 --to 127.0.0.1:$P1 --rate 1gbit --delay 20us --queue 256KiB --json >/tmp/stride-bench-relay.$$ 2>/dev/null & RP=$!
sleep 0.3
R=$("$B" perf client --to 127.0.0.1:$P3 --bytes "$BYTES" --json)
kill -INT $RP; wait $RP || true
echo "stride via relay: $R"
echo "relay:  $(cat /tmp/stride-bench-relay.$$)"
rm -f /tmp/stride-bench-relay.$$
