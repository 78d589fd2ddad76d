#!/usr/bin/env bash
# The network model against a real slow link (issue 13). Prints, per round and node, the simulated
# exchange time (round.comm_s: latency + 8·bytes/bandwidth on the layout's outer link), the
# measured one (round.real_comm_s: from the last member's start to this node holding every
# payload) and their ratio, for DiLoCo (fp32 and int8 payloads) and SparseLoCo:
#   1. across network-namespace hosts whose uplinks `tc tbf` shapes to RATE (default 20 Mb/s),
#      the layout's outer link set to that bandwidth and the latency ping measures between them;
#   2. on threads of one process with the in-process shaper (network.shape = true) instead of tc.
# Needs root for (1) (skipped with the reason otherwise). Tiny model on Brown, 4 rounds of 10 steps;
# a few minutes. Usage: scripts/bench_shaped_link.sh [RATE_MBIT] [THINWIRE]
set -euo pipefail
cd "$(dirname "$0")/.."
rate_mbit="${1:-20}"
tw="$(realpath "${2:-build/release/app/thinwire}")"
[ -x "$tw" ] || { echo "no thinwire binary at $tw (build first: scripts/setup.sh)" >&2; exit 1; }
[[ "$rate_mbit" =~ ^[0-9]+$ ]] && [ "$rate_mbit" -gt 0 ] || { echo "RATE_MBIT must be a positive integer, not '$rate_mbit'" >&2; exit 1; }
command -v sqlite3 > /dev/null || { echo "needs the sqlite3 command (scripts/setup.sh installs it)" >&2; exit 1; }
root="$(pwd)"
work="$(mktemp -d)"
db="$work/bench.db"
source tests/multihost/netns.sh
cleanup() { netns_cleanup; rm -rf "$work"; }
trap cleanup EXIT
PORT=7100
bps=$((rate_mbit * 1000000))

layout() {  # $1 = outer table lines; cluster table follows from the caller
  cat <<TOML
[model]
preset = "tiny"
[train]
steps = 40
batch_size = 4
warmup_steps = 4
eval_every = 0
[network]
profile = "home-20m"
outer_bandwidth_bps = $bps
$1
TOML
}
outer_diloco='[outer]
algorithm = "diloco"
replicas = 2
inner_steps = 10'
outer_sparse='[outer]
algorithm = "sparseloco"
replicas = 2
inner_steps = 10'

# Per round: bytes each node sent, the simulated exchange time, each node's measured one, and the
# round's measured time — the last node to hold every payload (the member that started first waits
# for the whole of the last one's payload; the last one finds its peers' payloads partly in flight,
# so its own figure is shorter) — over the simulated one.
table() {  # $1 = run name
  local id
  id="$(sqlite3 "$db" "select id from runs where name = '$1'")"
  sqlite3 -separator ' ' "$db" "
    select m.step, m.node, b.value, m.value, r.value from metrics m
      join metrics r on r.run_id = m.run_id and r.node = m.node and r.step = m.step and r.name = 'round.real_comm_s'
      join metrics b on b.run_id = m.run_id and b.node = m.node and b.step = m.step and b.name = 'round.bytes'
    where m.run_id = $id and m.name = 'round.comm_s' order by m.step, m.node" |
    awk -v run="$1" '
      function flush() { if (step != "") printf "%-20s %5d %11d %8.3f  %-16s %8.3f %7.3f\n", run, step, bytes, sim, nodes, worst, worst / sim }
      $1 != step { flush(); step = $1; bytes = $3; sim = $4; nodes = ""; worst = 0 }
      { nodes = nodes (nodes == "" ? "" : ",") sprintf("%.3f", $5); if ($5 > worst) worst = $5; if ($4 > sim) sim = $4 }
      END { flush() }'
}
header() { printf "%-20s %5s %11s %8s  %-16s %8s %7s\n" run step bytes sim_s "real_s per node" real_s ratio; }

run_layout() {  # $1 = name, $2 = toml file, then the host to run on ('' = here)
  local name="$1" file="$2" host="${3:-}"
  local cmd=("$tw" --db "$db" run "$file" --data-root "$root" --set "run.name=$name")
  if [ -n "$host" ]; then on_host "$host" "${cmd[@]}" > "$work/$name.out" 2>&1 || { cat "$work/$name.out" >&2; exit 1; }
  else "${cmd[@]}" > "$work/$name.out" 2>&1 || { cat "$work/$name.out" >&2; exit 1; }; fi
}

echo "== thinwire: the network model against real slow links (${rate_mbit} Mb/s outer link)"

results=()
if (netns_require) 2> "$work/skip"; then
  netns_hosts 3
  "$tw" keys new "$work/keys/coord" > /dev/null
  for h in 1 2; do
    "$tw" keys new "$work/keys/n$h" > /dev/null
    shape_uplink "$h" "${rate_mbit}mbit" "${TBF_QUEUE:-latency 50ms}"
    on_host "$h" "$tw" node --listen "tcp://$(host_ip "$h"):$PORT" --curve-secret-key "$work/keys/n$h/secret.key" \
      --allow "$work/keys/coord/public.key" --data-root "$root" > "$work/node$h.log" 2>&1 &
  done
  for h in 1 2; do
    for _ in $(seq 1 100); do grep -q "CURVE key" "$work/node$h.log" && break; sleep 0.1; done
    grep -q "CURVE key" "$work/node$h.log" || { cat "$work/node$h.log" >&2; exit 1; }
  done
  # One-way latency between two hosts: half the mean round trip of 20 pings.
  rtt_ms="$(on_host 1 ping -c 20 -i 0.05 -q "$(host_ip 2)" | awk -F/ '/^rtt/ {print $5}')"
  lat_s="$(awk -v r="$rtt_ms" 'BEGIN {printf "%.6f", r / 2000}')"
  echo "tbf ${rate_mbit}mbit on each node host's uplink (burst 8 kB, ${TBF_QUEUE:-latency 50ms}); measured one-way latency ${lat_s} s"
  cluster="[cluster]
mode = \"remote\"
endpoints = [\"tcp://$(host_ip 1):$PORT\", \"tcp://$(host_ip 2):$PORT\"]
node_keys = [\"$work/keys/n1/public.key\", \"$work/keys/n2/public.key\"]
coordinator_key = \"$work/keys/coord/secret.key\""
  for v in "diloco-fp32:$outer_diloco" "diloco-int8:$outer_diloco
dtype = \"int8\"" "sparseloco:$outer_sparse"; do
    name="tbf-${v%%:*}"
    { layout "outer_latency_s = $lat_s
${v#*:}"; echo "$cluster"; } > "$work/$name.toml"
    run_layout "$name" "$work/$name.toml" 0
    results+=("$name")
  done
else
  echo "tc/namespace part skipped: $(cat "$work/skip")"
fi

# The in-process shaper: threads of this process, no tc; latency = the home-20m profile's 40 ms.
[ "${SKIP_SHAPER:-0}" = 1 ] || for v in "diloco-fp32:$outer_diloco" "diloco-int8:$outer_diloco
dtype = \"int8\"" "sparseloco:$outer_sparse"; do
  name="shaper-${v%%:*}"
  { layout "shape = true
${v#*:}"; printf '[cluster]\nmode = "threads"\n'; } > "$work/$name.toml"
  run_layout "$name" "$work/$name.toml"
  results+=("$name")
done

header
for r in "${results[@]}"; do table "$r"; done
echo
echo "mean ratio per run (round's measured / simulated), * = payloads of 1 MB or more:"
for r in "${results[@]}"; do
  table "$r" | awk -v run="$r" '{ s += $7; n++; if ($7 < lo || n == 1) lo = $7; if ($7 > hi) hi = $7; big = big || ($3 >= 1000000) }
    END { if (n) printf "  %-20s %6.3f (%.3f-%.3f) over %d rounds%s\n", run, s / n, lo, hi, n, big ? " *" : "" }'
done
