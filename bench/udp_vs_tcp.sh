#!/usr/bin/env bash
# Loopback goodput of STRIDE (stride perf) against kernel TCP (stride perf --tcp): same harness,
# same bytes, one run each, printed as a ratio; then `stride demo` through the userspace relay
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

# The bottleneck figures come from `stride demo` (receiver, 1 Gbit/s / 20 us / 256 KiB relay
# and sender in one process; the sender's controller is set for a 1 Gbit/s line).
for thr in "demo defaults (T_low 200us, T_high 1ms)|" "protocol defaults (T_low 5us, T_high 40us)|--t-low 5us --t-high 40us"; do
label="${thr%%|*}"; extra="${thr#*|}"
# shellcheck disable=SC2086
D=$("$B" demo --bytes "$BYTES" --json $extra)
echo "demo, $label: $D"
python3 - "$D" <<'PY'
import json, sys
d = json.loads(sys.argv[1]); r = d["relay"]
print(f"  via 1 Gbit/s relay: goodput {d['goodput_gbps']:.3f} Gbit/s, bottleneck utilization {100*r['utilization']:.1f} %, "
      f"relay queueing delay p50/p99/max {r['queue_delay_p50_ns']/1e3:.1f}/{r['queue_delay_p99_ns']/1e3:.1f}/{r['queue_delay_max_ns']/1e3:.1f} us, "
      f"queue drops {r['queue_drops']}, STT queueing delay p50/p99 {d['queue_delay_p50_ns']/1e3:.1f}/{d['queue_delay_p99_ns']/1e3:.1f} us, "
      f"retransmitted {d['retransmitted_packets']}, timeouts {d['timeouts']}")
PY
done
