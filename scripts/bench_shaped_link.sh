#!/usr/bin/env bash
# The network model against a real slow link. Prints, per round and node, the simulated
# exchange time (round.comm_s: latency + 8·bytes/bandwidth on the layout's outer link), the
# measured one (round.real_comm_s: from the last member's start to this node holding every
# payload) and their ratio, for DiLoCo (fp32 and int8 payloads; over the ring all-reduce, the
# default, and over the mesh all-gather) and SparseLoCo:
#   1. across two network-namespace hosts, one uplink (then both) shaped by `tc tbf` to RATE
#      (default 20 Mb/s), the layout's outer link set to that bandwidth and the latency ping
#      measures between them; beside each, plain TCP's time for the same bytes on the same link;
#   2. the same through a relay (docs/relay.md): both nodes join a relay on host 3 and the layout
#      names them by key, so neither can dial the other and each one's payload to the other crosses
#      the relay, whose uplink alone is shaped (both payloads share it) and which the layout
#      declares (network.relay_replicas, relay_up_bps = RATE; the hosts' own links 1 Gb/s in the
#      model) (DiLoCo fp32 over the ring and the mesh; beside mode "one", where host 1's uplink is
#      shaped);
#   3. on threads of one process with the in-process shaper (network.shape = true) instead of tc.
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
# The runs' and the nodes' data root: the default one, where scripts/setup.sh put the Brown Corpus.
data_root="${XDG_CACHE_HOME:-$HOME/.cache}/thinwire"
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

# DiLoCo over its default ring (2 members: 2 hops of half the payload each) and over the mesh (one
# hop of the whole payload), fp32 and int8 (the ring decodes, sums and re-encodes per hop); SparseLoCo
# all-gathers over the mesh.
variants=("diloco-fp32:$outer_diloco" "diloco-fp32-mesh:$outer_diloco
topology = \"mesh\"" "diloco-int8:$outer_diloco
dtype = \"int8\"" "diloco-int8-mesh:$outer_diloco
dtype = \"int8\"
topology = \"mesh\"" "sparseloco:$outer_sparse")

# Per round: bytes each node sent, the simulated exchange time, each node's measured one, and the
# round's measured time — the last node to hold every payload (the member that started first waits
# for the whole of the last one's payload; the last one finds its peers' payloads partly in flight,
# so its own figure is shorter) — over the simulated one.
table() {  # $1 = run name, $2 = plain TCP's seconds as "BYTES=S ..." ('' = none)
  local id
  id="$(sqlite3 "$db" "select id from runs where name = '$1'")"
  sqlite3 -separator ' ' "$db" "
    select m.step, m.node, b.value, m.value, r.value from metrics m
      join metrics r on r.run_id = m.run_id and r.node = m.node and r.step = m.step and r.name = 'round.real_comm_s'
      join metrics b on b.run_id = m.run_id and b.node = m.node and b.step = m.step and b.name = 'round.bytes'
    where m.run_id = $id and m.name = 'round.comm_s' order by m.step, m.node" |
    awk -v run="$1" -v tcps="${2:-}" '
      function flush() { if (step != "") printf "%-24s %5d %11d %8.3f  %-16s %8.3f %7.3f %s\n", run, step, bytes, sim, nodes, worst, worst / sim, ref(bytes) }
      function ref(b) { return (b in tcp && tcp[b] > 0) ? sprintf("%8.3f", worst / tcp[b]) : "       -" }
      BEGIN { n = split(tcps, kv, " "); for (i = 1; i <= n; i++) { split(kv[i], p, "="); tcp[p[1]] = p[2] } }
      $1 != step { flush(); step = $1; bytes = $3 + 0; sim = $4; nodes = ""; worst = 0 }
      { nodes = nodes (nodes == "" ? "" : ",") sprintf("%.3f", $5); if ($5 > worst) worst = $5; if ($4 > sim) sim = $4 }
      END { flush() }'
}
header() { printf "%-24s %5s %11s %8s  %-16s %8s %7s %8s\n" run step bytes sim_s "real_s per node" real_s ratio "vs_tcp"; }

run_layout() {  # $1 = name, $2 = toml file, then the host to run on ('' = here)
  local name="$1" file="$2" host="${3:-}"
  local cmd=("$tw" --db "$db" run "$file" --data-root "$data_root" --set "run.name=$name")
  if [ -n "$host" ]; then on_host "$host" "${cmd[@]}" > "$work/$name.out" 2>&1 || { cat "$work/$name.out" >&2; exit 1; }
  else "${cmd[@]}" > "$work/$name.out" 2>&1 || { cat "$work/$name.out" >&2; exit 1; }; fi
}

echo "== thinwire: the network model against real slow links (${rate_mbit} Mb/s outer link)"

results=()
declare -A tcp_of  # run name → plain TCP's seconds on its link, "BYTES=S ..."
if (netns_require) 2> "$work/skip"; then
  netns_hosts 4
  "$tw" keys new "$work/keys/coord" > /dev/null
  "$tw" keys new "$work/keys/relay" > /dev/null
  for h in 1 2; do
    "$tw" keys new "$work/keys/n$h" > /dev/null
    # Both join the relay; the direct modes list them by endpoint, where they listen too.
    join=(--join "tcp://$(host_ip 3):7300" --relay-key "$work/keys/relay/public.key")
    on_host "$h" "$tw" node --listen "tcp://$(host_ip "$h"):$PORT" --curve-secret-key "$work/keys/n$h/secret.key" \
      --allow "$work/keys/coord/public.key" --data-root "$data_root" "${join[@]}" > "$work/node$h.log" 2>&1 &
  done
  on_host 3 "$tw" relay --listen "tcp://$(host_ip 3):7300" --curve-secret-key "$work/keys/relay/secret.key" \
    --allow "$work/keys/coord/public.key" --allow "$work/keys/n1/public.key" --allow "$work/keys/n2/public.key" \
    > "$work/relay.log" 2>&1 &
  for h in 1 2; do
    for _ in $(seq 1 100); do grep -q "CURVE key" "$work/node$h.log" && break; sleep 0.1; done
    grep -q "CURVE key" "$work/node$h.log" || { cat "$work/node$h.log" >&2; exit 1; }
  done
  # One-way latency between two hosts: half the mean round trip of 20 pings.
  rtt_ms="$(on_host 1 ping -c 20 -i 0.05 -q "$(host_ip 2)" | awk -F/ '/^rtt/ {print $5}')"
  lat_s="$(awk -v r="$rtt_ms" 'BEGIN {printf "%.6f", r / 2000}')"
  echo "measured one-way latency between the hosts: ${lat_s} s; tbf ${rate_mbit}mbit, burst 8 kB, ${TBF_QUEUE:-latency 50ms}"
  # The reference: plain TCP between the same two hosts, both directions at once (as an all-gather
  # loads them), BYTES each way; prints the slower direction's seconds. Debian's python3.
  cat > "$work/tcp_ref.py" <<'PY'
import socket, sys, threading, time
me, peer, n, port = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); srv.bind((me, port)); srv.listen(1)
for _ in range(100):
    try: out = socket.create_connection((peer, port)); break
    except OSError: time.sleep(0.05)
conn, _ = srv.accept()
out.sendall(b"r"); assert conn.recv(1) == b"r"  # both sides connected: start together
start = time.time()
def drain():
    got = 0
    while got < n: got += len(conn.recv(1 << 20))
    print(f"{time.time() - start:.4f}", flush=True)
t = threading.Thread(target=drain); t.start(); out.sendall(b"x" * n); t.join()
out.close(); conn.close()
PY
  tcp_ref() {  # $1 = bytes; the mean over 2 tries of the slower direction
    local s=0 i a b port
    for i in 1 2; do
      port=$((9100 + i))
      on_host 1 /usr/bin/python3 "$work/tcp_ref.py" "$(host_ip 1)" "$(host_ip 2)" "$1" "$port" > "$work/ref1" &
      on_host 2 /usr/bin/python3 "$work/tcp_ref.py" "$(host_ip 2)" "$(host_ip 1)" "$1" "$port" > "$work/ref2"
      wait "$!"
      a="$(cat "$work/ref1")"; b="$(cat "$work/ref2")"
      s="$(awk -v s="$s" -v a="$a" -v b="$b" 'BEGIN {print s + (a > b ? a : b)}')"
    done
    awk -v s="$s" 'BEGIN {printf "%.4f", s / 2}'
  }
  cluster="[cluster]
mode = \"remote\"
endpoints = [\"tcp://$(host_ip 1):$PORT\", \"tcp://$(host_ip 2):$PORT\"]
node_keys = [\"$work/keys/n1/public.key\", \"$work/keys/n2/public.key\"]
coordinator_key = \"$work/keys/coord/secret.key\""
  # "one": only host 1's uplink is slow (a home participant; the issue's setup): the round waits
  # for its payload. "both": both uplinks are slow and loaded at once, and each carries the
  # acknowledgements of what its host receives behind its own payload.
  relayed="[cluster]
mode = \"remote\"
endpoints = [\"key:$work/keys/n1/public.key\", \"key:$work/keys/n2/public.key\"]
node_keys = [\"\", \"\"]
coordinator_key = \"$work/keys/coord/secret.key\"
relay = \"tcp://$(host_ip 3):7300\"
relay_key = \"$work/keys/relay/public.key\""
  for mode in ${MODES:-one both relay}; do
    for h in 1 2 3; do tc -n "$(host_ns "$h")" qdisc del dev eth0 root 2> /dev/null || true; done
    case "$mode" in
      one) shape_uplink 1 "${rate_mbit}mbit" "${TBF_QUEUE:-latency 50ms}" ;;
      both) shape_uplink 1 "${rate_mbit}mbit" "${TBF_QUEUE:-latency 50ms}"; shape_uplink 2 "${rate_mbit}mbit" "${TBF_QUEUE:-latency 50ms}" ;;
      relay) shape_uplink 3 "${rate_mbit}mbit" "${TBF_QUEUE:-latency 50ms}" ;;
    esac
    names=()
    for v in "${variants[@]}"; do
      [ "$mode" = relay ] && [[ "${v%%:*}" != diloco-fp32* ]] && continue
      name="tbf-$mode-${v%%:*}"
      # Through the relay: both replicas are relayed, the relay's uplink is the shaped link and
      # the hosts' own links are not shaped (the model's 1 Gb/s stands for them).
      net=""
      [ "$mode" = relay ] && net="relay_replicas = [0, 1]
relay_up_bps = $bps
replica_up_bps = [1e9, 1e9]
replica_down_bps = [1e9, 1e9]"
      { layout "outer_latency_s = $lat_s
$net
${v#*:}"; if [ "$mode" = relay ]; then echo "$relayed"; else echo "$cluster"; fi; } > "$work/$name.toml"
      run_layout "$name" "$work/$name.toml" 0
      names+=("$name")
    done
    refs=""
    # Through the relay the shaped link is the relay's uplink, not a link between two nodes.
    [ "$mode" = relay ] || echo "plain TCP on the same link ($mode uplink(s) shaped), both directions at once, mean of 2 (model = 8·bytes/bandwidth):"
    [ "$mode" = relay ] || for bytes in $(for r in "${names[@]}"; do table "$r" | awk '{print $3}'; done | sort -un); do
      t="$(tcp_ref "$bytes")"
      refs+="$bytes=$t "
      awk -v b="$bytes" -v t="$t" -v bw="$bps" 'BEGIN {printf "  %11d B  %8.3f s  model %8.3f s  ratio %.3f\n", b, t, 8 * b / bw, t / (8 * b / bw)}'
    done
    for r in "${names[@]}"; do tcp_of["$r"]="$refs"; results+=("$r"); done
  done
else
  echo "tc/namespace part skipped: $(cat "$work/skip")"
fi

# The in-process shaper: threads of this process, no tc; latency = the home-20m profile's 40 ms.
[ "${SKIP_SHAPER:-0}" = 1 ] || for v in "${variants[@]}"; do
  name="shaper-${v%%:*}"
  { layout "shape = true
${v#*:}"; printf '[cluster]\nmode = "threads"\n'; } > "$work/$name.toml"
  run_layout "$name" "$work/$name.toml"
  results+=("$name")
done

header
for r in "${results[@]}"; do table "$r" "${tcp_of[$r]:-}"; done
echo
echo "mean ratio per run (round's measured / simulated), * = payloads of 1 MB or more:"
for r in "${results[@]}"; do
  table "$r" "${tcp_of[$r]:-}" | awk -v run="$r" '{ s += $7; n++; if ($7 < lo || n == 1) lo = $7; if ($7 > hi) hi = $7; big = big || ($3 >= 1000000)
                                  if ($8 != "-") { t += $8; m++ } }
    END { if (n) printf "  %-24s %6.3f (%.3f-%.3f) over %d rounds%s%s\n", run, s / n, lo, hi, n, big ? " *" : "  ",
                        m ? sprintf("; vs plain TCP %.3f", t / m) : "" }'
done
