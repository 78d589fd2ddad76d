#!/usr/bin/env bash
# Nodes nobody can dial: two "homes", each a private network behind its own home router (an
# nftables masquerade that drops every connection started outside), with two nodes each, and a
# public segment with the coordinator (host 0), one public node (host 1) and a relay (host 2).
# Both homes use the same addresses (192.168.1.10 and .11), as real homes do. The home nodes run
# `thinwire node --join` the relay; layouts name them by key ("key:K").
#   (0) nothing outside a home connects in: not a public host with a route into the home, not the
#       other home; a machine of the same home does;
#   (a) DiLoCo over a ring whose five members sit in both homes and in public;
#   (b) SparseLoCo through the hub (the coordinator's, on host 0) with the same five members;
#   (c) a compressed 2-stage pipeline replica with one stage in each home, beside a full replica
#       in public;
#   each run's final table (steps, losses, bytes per node) equals the same layout on threads, and
#   the relay's counters for each home node equal what the node read off its data port, per link
#   class: relayed payload = the node's relayed.<class>.recv + the 48-byte header of each message
#   (docs/relay.md); and a public member's messages to a home node travel over the connection the
#   home node dialled to its outbox, not through the relay;
#   (d) a home router that drops its line mid-run: the survivors go on, the node behind it is named
#       lost, rejoins through the relay once the line is back (cluster.restart_lost), and the run
#       finishes.
# Skips (exit 77) where network namespaces or nftables are missing.
# Usage: nat_test.sh PATH_TO_THINWIRE
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../app/harness.sh"
source "$here/netns.sh"
RUN_SUFFIX=-nat RUN_WHERE="through NAT and the relay"
source "$here/same_as_threads.sh"
source "$here/homes.sh"
netns_require
homes_require
at_exit homes_cleanup
at_exit netns_cleanup
PORT=7000
RELAY="tcp://$(host_ip 2):7100"

micro_corpus "$work/corpus"
netns_hosts 3
netns_homes 2 2
for k in coord relay pub h0m0 h0m1 h1m0 h1m1; do "$tw" keys new "$work/keys/$k" > /dev/null; done
allow=()
for k in coord pub h0m0 h0m1 h1m0 h1m1; do allow+=(--allow "$work/keys/$k/public.key"); done
on_host 2 "$tw" relay --listen "$RELAY" --curve-secret-key "$work/keys/relay/secret.key" "${allow[@]}" > "$work/relay.log" 2>&1 &
pids+=($!)
start_node() {  # $1 = name, $2... = the command prefix that puts it on its machine; rest from here
  local name="$1"; shift
  mkdir -p "$work/$name" && cp -r "$work/corpus" "$work/$name/corpus"
  "$@" "$tw" node --curve-secret-key "$work/keys/$name/secret.key" --allow "$work/keys/coord/public.key" \
    --data-root "$work/$name" "${NODE_ARGS[@]}" > "$work/$name.log" 2>&1 &
  pids+=($!)
}
NODE_ARGS=(--listen "tcp://$(host_ip 1):$PORT")
start_node pub on_host 1
for h in 0 1; do
  for j in 0 1; do
    NODE_ARGS=(--listen "tcp://$(home_ip "$j"):$PORT" --join "$RELAY" --relay-key "$work/keys/relay/public.key")
    start_node "h${h}m$j" on_home "$h" "$j"
  done
done
for n in h0m0 h0m1 h1m0 h1m1; do
  for _ in $(seq 1 100); do grep -q "joined relay" "$work/$n.log" && break; sleep 0.1; done
  grep -q "joined relay" "$work/$n.log" || fail "home node $n did not join the relay: $(cat "$work/$n.log")"
done
echo "ok: the four home nodes joined the relay"

# (0) Nothing outside a home connects in.
can_connect() { timeout 3 bash -c "exec 3<>/dev/tcp/$1/$2" 2> /dev/null; }
ip -n "$(host_ns 0)" route add 192.168.1.0/24 via "$(router_ip 0)"
on_home 0 1 bash -c "$(declare -f can_connect); can_connect $(home_ip 0) $PORT" \
  || fail "home 0's own machine cannot reach its node: the proof below would prove nothing"
if on_host 0 bash -c "$(declare -f can_connect); can_connect $(home_ip 0) $PORT"; then
  fail "a public host with a route into home 0 connected to its node"
fi
if on_host 0 bash -c "$(declare -f can_connect); can_connect $(router_ip 0) $PORT"; then
  fail "a public host connected to home 0's router"
fi
if on_home 1 0 bash -c "$(declare -f can_connect); can_connect $(router_ip 0) $PORT"; then
  fail "home 1 connected into home 0"
fi
ip -n "$(host_ns 0)" route del 192.168.1.0/24
echo "ok: nothing outside a home connects in (a public host with a route, the other home); its own machine does"

# $1 = name, $2 = the layout's own tables, then the nodes by name; writes $work/$1.toml and $1-threads.toml.
layouts() {
  local name="$1" body="$2"; shift 2
  local eps="" keys="" n
  for n in "$@"; do
    if [ "$n" = pub ]; then eps+="\"tcp://$(host_ip 1):$PORT\", "; keys+="\"$work/keys/pub/public.key\", "
    elif [[ "$n" == *@listed ]]; then  # by its address inside its home and its key, as a user might list it
      n="${n%@listed}"; eps+="\"tcp://$(home_ip "${n: -1}"):$PORT\", "; keys+="\"$work/keys/$n/public.key\", "
    else eps+="\"key:$work/keys/$n/public.key\", "; keys+="\"\", "; fi
  done
  local common
  common="$(micro_tables "tie_embeddings = false")
[network]
profile = \"home-20m\"
${NETWORK_EXTRA:-}
$body"
  printf '%s\n[cluster]\nmode = "remote"\nendpoints = [%s]\nnode_keys = [%s]\ncoordinator_key = "%s"\nrelay = "%s"\nrelay_key = "%s"\n%s\n%s\n' \
    "$common" "${eps%, }" "${keys%, }" "$work/keys/coord/secret.key" "$RELAY" "$work/keys/relay/public.key" \
    "${CLUSTER_EXTRA:-}" "${REMOTE_EXTRA:-}" > "$work/$name.toml"
  printf '%s\n[cluster]\nmode = "threads"\n%s\n' "$common" "${CLUSTER_EXTRA:-}" > "$work/$name-threads.toml"
}
# The relay's counters of each home node in run $1 (there must be $2): its data-plane payload to the
# node, less 48 B per message header (every data-plane message is a 48-byte header frame and its
# payload frame), equal to what the node read off its data port (relayed.<class>.recv), which
# holds what the run counts received (bytes.*.recv) and the uncounted state and measurement frames.
check_relay() {
  local name="$1" id line node frames payload relayed counted per_class
  id="$(sqlite3 "$db" "select id from runs where name = '$name-nat'")"
  # The node's last row of a metric, summed over the names matching `like`.
  last_rows() {
    sqlite3 "$db" "select coalesce(sum(value), 0) from metrics m where m.run_id = $id and m.node = '$1'
      and m.name like '$2' and m.step = (select max(step) from metrics where run_id = $id and node = '$1' and name = m.name)"
  }
  local n=0 carried=0
  while IFS= read -r line; do
    grep -q " via relay (" <<<"$line" || fail "$name: $line"
    node="${line%% via relay*}"
    frames="$(sed -E 's/.* data to node [0-9]+ B \(payload [0-9]+ B in ([0-9]+) frames\).*/\1/' <<<"$line")"
    payload="$(sed -E 's/.* data to node [0-9]+ B \(payload ([0-9]+) B in .*/\1/' <<<"$line")"
    relayed="$(last_rows "$node" 'relayed.%.recv')"
    relayed="${relayed%.0}"
    counted="$(last_rows "$node" 'bytes.%.recv')"
    counted="${counted%.0}"
    per_class="$(sqlite3 -separator ' ' "$db" "select name, cast(max(value) as integer) from metrics where run_id = $id
      and node = '$node' and name like 'relayed.%' group by name" | paste -sd, -)"
    # A data-plane message is two frames, a 48-byte header and its payload: the relay's payload
    # less 24 B per frame is what the node read off its data port, to the byte.
    [ $((frames % 2)) = 0 ] || fail "$name: $node: an odd number of data frames through the relay ($frames)"
    [ "$((payload - 24 * frames))" = "$relayed" ] \
      || fail "$name: $node: the relay carried $payload B of data payload in $frames frames, the node read $relayed B off its data port ($per_class; counted $counted B)"
    n=$((n + 1))
    carried=$((carried + relayed))
    echo "   $node: relay data payload $payload B in $frames frames = $((payload - 24 * frames)) B past headers = read at the node (${per_class:-nothing}); counted by the run $counted B"
  done < <(sqlite3 "$db" "select e.text from events e join runs r on r.id = e.run_id where r.name = '$name-nat' and e.kind = 'relay'")
  [ "$n" = "$2" ] || fail "$name: relay counters for $n home nodes, not $2"
  [ "$carried" -gt 0 ] || fail "$name: the relay carried no payload between home nodes"
}

# (a) DiLoCo over a ring across both homes and the public node; the home replicas' relay is part
# of the network model (the same declaration on threads, so the clocks agree too).
NETWORK_EXTRA='relay_replicas = [1, 2, 3, 4]
relay_up_bps = 50e6' layouts ring '[outer]
algorithm = "diloco"
replicas = 5
inner_steps = 10
topology = "ring"' pub h0m0 h0m1 h1m0 h1m1
compare ring 5
check_relay ring 4
# The public member sends to replica-1 (home 0) over the connection replica-1 dialled to its outbox:
# of what replica-1 received, only the other home nodes' words came through the relay (8-byte
# clocks each round), none of the ring's payload, which its public predecessor sends.
ring_id="$(sqlite3 "$db" "select id from runs where name = 'ring-nat'")"
direct_in="$(sqlite3 "$db" "select cast(max(value) as integer) from metrics where run_id = $ring_id and node = 'replica-1' and name = 'bytes.outer.recv'")"
relayed_in="$(sqlite3 "$db" "select cast(coalesce(max(value), 0) as integer) from metrics where run_id = $ring_id and node = 'replica-1' and name = 'relayed.outer.recv'")"
[ "${direct_in:-0}" -gt 100000 ] && [ $((relayed_in * 1000)) -lt "$direct_in" ] \
  || fail "ring: replica-1 received $direct_in B, $relayed_in B of it through the relay (expected only words: its ring predecessor is public)"
echo "ok: replica-1 in home 0 received $direct_in B, all but $relayed_in B (the other home nodes' words) over the outbox it dialled"

# (b) SparseLoCo through the coordinator's hub on host 0: the home nodes dial it out. One home node
# is listed by its address inside its home and its key: it does not answer there, so the
# coordinator finds it at the relay.
REMOTE_EXTRA="hub_endpoint = \"tcp://$(host_ip 0):7300\"" layouts hub '[outer]
algorithm = "sparseloco"
replicas = 5
inner_steps = 10
topology = "hub"' pub h0m0 h0m1 h1m0 h1m1@listed
compare hub 5
grep -q "node 4 does not answer at tcp://$(home_ip 1):$PORT; looking for its key" "$work/hub.out" \
  || fail "the node listed by its home address was not looked for at the relay: $(head -20 "$work/hub.out")"
echo "ok: a node listed by its address inside its home was found at the relay"

# (c) A full replica in public; a rank-8 compressed pipeline with stage 0 in home 0, stage 1 in home 1.
CLUSTER_EXTRA="stages = 2" layouts pipeline '[outer]
algorithm = "sparseloco"
replicas = 2
inner_steps = 10
[pipeline]
replicas = 1
micro_batches = 2
rank = 8' pub h0m0 h1m0
compare pipeline 3
check_relay pipeline 2

# (d) Home 1's line drops mid-run for longer than the heartbeat timeout, then comes back.
layouts churn '[outer]
algorithm = "diloco"
replicas = 3
inner_steps = 10' pub h0m0 h1m0
on_host 0 "$tw" --db "$db" run "$work/churn.toml" --data-root "$work" --set run.name=churn-nat --set train.steps=3000 \
  --set cluster.restart_lost=1 > "$work/churn.out" 2>&1 &
runpid=$!
pids+=($runpid)
wait_rows churn-nat 60 > /dev/null || fail "the run with home 1's dropped line stored no rows: $(tail -10 "$work/churn.out")"
home_link_down 1
sleep 8
home_link_up 1
t0=$SECONDS
# A hang is a run whose progress lines stop; a loaded machine only makes them slower.
last_size=-1
still=0
while kill -0 "$runpid" 2> /dev/null; do
  size="$(stat -c %s "$work/churn.out")"
  if [ "$size" = "$last_size" ]; then still=$((still + 1)); else still=0; last_size="$size"; fi
  [ "$still" -lt 600 ] || fail "the run hung after home 1's line came back (no progress for 60 s): $(tail -5 "$work/churn.out")"
  sleep 0.1
done
wait "$runpid" || fail "the run with home 1's dropped line did not finish: $(tail -10 "$work/churn.out")"
grep -q "replica-2" "$work/churn.out" || fail "the node behind the dropped line is not named: $(tail -10 "$work/churn.out")"
ev="$(sqlite3 "$db" "select e.kind || ': ' || e.text from events e join runs r on r.id = e.run_id where r.name = 'churn-nat'
  and (e.text like '%replica-2%' or e.kind = 'relay')")"
grep -qi "lost" <<<"$ev" || fail "no event names replica-2 lost: $ev"
grep -q "replica-2 via relay (rejoins 1" <<<"$ev" || fail "replica-2 did not rejoin through the relay: $ev"
echo "ok: home 1's dropped line: replica-2 lost, rejoined through the relay, run finished $((SECONDS - t0)) s after the line came back"
echo "nat_test: OK"
