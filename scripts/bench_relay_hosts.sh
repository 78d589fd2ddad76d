#!/usr/bin/env bash
# Relay throughput across network-namespace links, against a direct connection on the same links.
# Three hosts on one switch (tests/multihost/netns.sh): host 0 sends, host 1 runs `thinwire relay`,
# host 2 runs a `thinwire node --join` the relay and, on that node's data port P+2, a receiving PULL
# (scripts/zmq_throughput.py, the data plane's PUSH-to-PULL pattern). Each cell sends the same
# messages twice, neighbours in time: directly from host 0 to host 2's port, and through the relay
# (host 0 dials the relay's public port for the node's data port, Q+2; the relay splices it through
# the node's tunnel to P+2: two veth hops and the relay's process instead of one hop). Plain TCP and
# CurveZMQ end to end, as a keyed run has it. Prints GB/s per cell and relayed / direct; the
# median of REPEATS tries per cell (default 3). Needs root (namespaces) and /usr/bin/python3 with
# Debian's python3-zmq. Usage: scripts/bench_relay_hosts.sh [THINWIRE] [SIZES_MIB] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
tw="$(realpath "${1:-build/release/app/thinwire}")"
sizes_mib="${2:-1 16}"
repeats="${3:-3}"
[ -x "$tw" ] || { echo "no thinwire binary at $tw (build first: scripts/setup.sh)" >&2; exit 1; }
/usr/bin/python3 -c "import zmq" 2> /dev/null || { echo "needs /usr/bin/python3 with python3-zmq (apt-get install python3-zmq)" >&2; exit 1; }
root="$(pwd)"
work="$(mktemp -d)"
source tests/multihost/netns.sh
netns_require
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  netns_cleanup
  rm -rf "$work"
}
trap cleanup EXIT
py=(/usr/bin/python3 "$root/scripts/zmq_throughput.py")
P=7200 RELAY="tcp://$(host_ip 1):7100"

netns_hosts 3
for k in relay node coord; do "$tw" keys new "$work/keys/$k" > /dev/null; done
on_host 1 "$tw" relay --listen "$RELAY" --curve-secret-key "$work/keys/relay/secret.key" \
  --allow "$work/keys/node/public.key" > "$work/relay.log" 2>&1 &
pids+=($!)
# The node says hello to the relay every second until it answers, so it may start at once.
on_host 2 "$tw" node --listen "tcp://$(host_ip 2):$P" --join "$RELAY" --relay-key "$work/keys/relay/public.key" \
  --curve-secret-key "$work/keys/node/secret.key" --allow "$work/keys/coord/public.key" > "$work/node.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do grep -q "dialers reach this node at" "$work/node.log" && break; sleep 0.1; done
public="$(grep -o "dialers reach this node at tcp://[0-9.]*:[0-9]*" "$work/node.log" | head -1 | awk '{print $NF}' || true)"
[ -n "$public" ] || { echo "the node did not join the relay: $(cat "$work/node.log" "$work/relay.log")" >&2; exit 1; }
q="${public##*:}"  # the relay's public port Q for the node's P; its data port is Q + 2
direct="tcp://$(host_ip 2):$((P + 2))" relayed="${public%:*}:$((q + 2))"
read -r server_pub server_sec < <(/usr/bin/python3 -c "import zmq; p, s = zmq.curve_keypair(); print(p.decode(), s.decode())")

# One try: COUNT messages of BYTES from host 0 to TARGET, received on host 2; prints bytes/s.
one() {  # target, count, bytes, curve (0/1)
  local target="$1" count="$2" bytes="$3" curve="$4" rk=() sk=() out
  [ "$curve" = 1 ] && rk=("$server_sec" "$server_pub") sk=("$server_pub")
  on_host 2 "${py[@]}" recv "tcp://0.0.0.0:$((P + 2))" "$count" "$bytes" "${rk[@]}" > "$work/recv.out" 2>&1 &
  local r=$!
  for _ in $(seq 1 100); do grep -q ready "$work/recv.out" && break; sleep 0.05; done
  on_host 0 "${py[@]}" send "$target" "$count" "$bytes" "${sk[@]}" || { echo "send to $target failed" >&2; exit 1; }
  wait "$r" || { echo "receive from $target failed: $(cat "$work/recv.out")" >&2; exit 1; }
  out="$(grep -o 'bytes_per_s=[0-9]*' "$work/recv.out")"
  echo "${out#bytes_per_s=}"
}
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

echo "relay throughput across namespace links: host 0 -> host 2 direct, and through the relay on host 1"
echo "(node's public endpoint $public; data port direct $direct, relayed $relayed; median of $repeats)"
printf '%-10s %-6s %14s %14s %10s\n' message curve "direct GB/s" "relayed GB/s" "relayed/direct"
for mib in $sizes_mib; do
  bytes=$((mib << 20)) count=$(( (256 / mib) < 8 ? 8 : 256 / mib ))
  for curve in 0 1; do
    d=() r=()
    for _ in $(seq 1 "$repeats"); do
      d+=("$(one "$direct" "$count" "$bytes" "$curve")")
      r+=("$(one "$relayed" "$count" "$bytes" "$curve")")
    done
    dm="$(printf '%s\n' "${d[@]}" | median)" rm="$(printf '%s\n' "${r[@]}" | median)"
    awk -v m="$mib MiB" -v c="$([ "$curve" = 1 ] && echo yes || echo no)" -v d="$dm" -v r="$rm" \
      'BEGIN {printf "%-10s %-6s %14.3f %14.3f %10.3f\n", m, c, d / 1e9, r / 1e9, r / d}'
  done
done
