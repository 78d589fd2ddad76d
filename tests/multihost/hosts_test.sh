#!/usr/bin/env bash
# Several machines on one machine: five network namespaces as hosts on one bridge —
# host 0 runs the coordinator, hosts 1-4 one keyed `thinwire node` each on its own address — and
# the runs cross real interfaces:
#   (a) SparseLoCo, three replicas on three hosts (the outer sync crosses the bridge), over the
#       mesh and through the hub: the coordinator's relay on host 0's address, CURVE-keyed, each
#       replica admitted under its own key (same losses as the mesh, its own bytes);
#   (b) DiLoCo, two replicas of two nodes each, every replica's Gloo group spanning two hosts, and
#       plain DDP with its Gloo group across two hosts;
#   (c) a compressed two-stage pipeline replica with its stages on two hosts, beside a full replica
#       on a third (stage links and per-stage SparseLoCo cross the bridge);
#   (d) a link that starts dropping every packet mid-run fails the run within the heartbeat
#       timeout, naming the node behind it (it used to hang with no message);
#   (e) one host whose corpus differs: the run fails before any step, naming that host's node.
# Each run's final table (steps, losses, bytes per node) equals the same layout on threads, to the
# last digit, and every round stores its measured exchange time (round.real_comm_s).
# Skips (exit 77) where network namespaces cannot be made.
# Usage: hosts_test.sh PATH_TO_THINWIRE
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../app/harness.sh"
source "$here/netns.sh"
RUN_SUFFIX=-hosts RUN_WHERE="across hosts"
source "$here/same_as_threads.sh"
netns_require
at_exit netns_cleanup
PORT=7000

micro_corpus "$work/corpus"
netns_hosts 5
"$tw" keys new "$work/keys/coord" > /dev/null
for h in 1 2 3 4; do
  # Each node has its own data root with its own copy of the corpus: it prepares its data itself.
  mkdir -p "$work/n$h" && cp -r "$work/corpus" "$work/n$h/corpus"
  "$tw" keys new "$work/keys/n$h" > /dev/null
  on_host "$h" "$tw" node --listen "tcp://$(host_ip "$h"):$PORT" --curve-secret-key "$work/keys/n$h/secret.key" \
    --allow "$work/keys/coord/public.key" --data-root "$work/n$h" > "$work/node$h.log" 2>&1 &
done
for h in 1 2 3 4; do
  for _ in $(seq 1 100); do grep -q "CURVE key" "$work/node$h.log" && break; sleep 0.1; done
  grep -q "CURVE key" "$work/node$h.log" || fail "node on host $h did not come up"
done

# $1 = name, $2 = the layout's own tables; writes $work/$1.toml (remote, hosts $3...) and $1-threads.toml.
layouts() {
  local name="$1" body="$2"; shift 2
  local eps="" keys="" h
  for h in "$@"; do
    eps+="\"tcp://$(host_ip "$h"):$PORT\", "
    keys+="\"$work/keys/n$h/public.key\", "
  done
  local common
  common="$(micro_tables "tie_embeddings = false")
[network]
profile = \"home-20m\"
$body"
  printf '%s\n[cluster]\nmode = "remote"\nendpoints = [%s]\nnode_keys = [%s]\ncoordinator_key = "%s"\n%s\n%s\n' \
    "$common" "${eps%, }" "${keys%, }" "$work/keys/coord/secret.key" "${CLUSTER_EXTRA:-}" "${REMOTE_EXTRA:-}" > "$work/$name.toml"
  printf '%s\n[cluster]\nmode = "threads"\n%s\n' "$common" "${CLUSTER_EXTRA:-}" > "$work/$name-threads.toml"
}

# (a) SparseLoCo, one replica per host.
layouts sparseloco '[outer]
algorithm = "sparseloco"
replicas = 3
inner_steps = 10' 1 2 3
compare sparseloco 3
# Every node stored a measured exchange time for each of its 2 rounds, and it is a real time.
id="$(sqlite3 "$db" "select id from runs where name = 'sparseloco-hosts'")"
n="$(sqlite3 "$db" "select count(*) from metrics where run_id = $id and name = 'round.real_comm_s' and value > 0 and value < 30")"
[ "$n" = 6 ] || fail "expected 6 stored round.real_comm_s (3 nodes × 2 rounds) across hosts, got $n"
# Through the hub: the relay listens on host 0's address; nodes reach it across the bridge.
REMOTE_EXTRA="hub_endpoint = \"tcp://$(host_ip 0):7300\"" layouts sparseloco_hub '[outer]
algorithm = "sparseloco"
replicas = 3
inner_steps = 10
topology = "hub"' 1 2 3
compare sparseloco_hub 3
losses() { awk '$1 ~ /^replica-/ && NF == 10 {print $1, $2, $3, $4}' "$1"; }
[ "$(losses "$work/sparseloco_hub.out")" = "$(losses "$work/sparseloco.out")" ] \
  || fail "the hub's losses differ from the mesh's: $(losses "$work/sparseloco_hub.out") vs $(losses "$work/sparseloco.out")"
ev="$(sqlite3 "$db" "select e.text from events e join runs r on r.id = e.run_id where r.name = 'sparseloco_hub-hosts' and e.kind = 'hub'")"
grep -q "in 6 uploads, .* in 12 payloads, refused 0" <<<"$ev" || fail "the relay's own counts: '$ev'"
echo "ok: sparseloco through a CURVE hub across hosts: mesh losses, relay counts $ev"

# (b) Gloo groups across hosts: DiLoCo with two-node replicas (hosts 1+2 and 3+4), then DDP on two.
CLUSTER_EXTRA="nodes_per_replica = 2" layouts diloco2x2 '[outer]
algorithm = "diloco"
replicas = 2
inner_steps = 10' 1 2 3 4
compare diloco2x2 4
layouts ddp '[outer]
algorithm = "ddp"
replicas = 2' 2 4
compare ddp 2

# (c) A full replica on host 1; a pipeline replica with stage 0 on host 2 and stage 1 on host 3,
# rank-8 compressed boundaries.
CLUSTER_EXTRA="stages = 2" layouts pipeline '[outer]
algorithm = "sparseloco"
replicas = 2
inner_steps = 10
[pipeline]
replicas = 1
micro_batches = 2
rank = 8' 1 2 3
compare pipeline 3
# The stage link carried the compressed activations: stage 1 sent 20 steps × (m · b·T·k·4 + 8) B.
b=2 T=32 k=8
got="$(awk '$1 == "replica-1.1" && NF == 10 {print $8}' "$work/pipeline.out")"
[ "$got" = "$((20 * (2 * b * T * k * 4 + 8)))" ] || fail "stage 1 sent $got B, not the formula's"

# (e) The same data everywhere: host 4's corpus differs in one document; a run on hosts 3 and 4
# fails before any step, naming host 4's node (fresh caches, so each node tokenises its own corpus).
echo "Document 10 line 1: one changed sentence." >> "$work/n4/corpus/doc10.txt"
layouts mismatch '[outer]
algorithm = "diloco"
replicas = 2
inner_steps = 10' 3 4
if on_host 0 "$tw" --db "$db" run "$work/mismatch.toml" --data-root "$work" --set run.name=mismatch \
    --set data.cache_dir=cache-fresh > "$work/mismatch.out" 2>&1; then
  fail "a run with different data on one host finished"
fi
grep -q "replica-1: its data differ" "$work/mismatch.out" || fail "the node with other data is not named: $(tail -5 "$work/mismatch.out")"
steps="$(sqlite3 "$db" "select count(*) from metrics m join runs r on r.id = m.run_id where r.name = 'mismatch' and m.name = 'train.loss'")"
[ "$steps" = 0 ] || fail "$steps steps ran with mismatched data"
echo "ok: other data on host 4 refused before any step: $(grep -m1 -o "replica-1: its data differ[^;]*" "$work/mismatch.out")"

# (d) A link that drops every packet mid-run (a tbf whose bucket is smaller than a packet), with a
# quorum of all three replicas (with fewer the two others would go on without it, docs/faults.md):
# the run does not hang; it fails within the heartbeat timeout, naming the node behind the dead link.
layouts sparseloco-long '[outer]
algorithm = "sparseloco"
replicas = 3
inner_steps = 10' 1 2 3
on_host 0 "$tw" --db "$db" run "$work/sparseloco-long.toml" --data-root "$work" --set run.name=dead-link \
  --set train.steps=100000 --set cluster.min_replicas=3 > "$work/dead-link.out" 2>&1 &
runpid=$!
for _ in $(seq 1 300); do [ "$(sqlite3 "$db" "select count(*) from metrics m join runs r on r.id = m.run_id
  where r.name = 'dead-link' and m.name = 'round.bytes'" 2> /dev/null || echo 0)" -ge 3 ] && break; sleep 0.1; done
tc -n "$(host_ns 3)" qdisc replace dev eth0 root tbf rate 1kbit burst 100 limit 100
t0=$SECONDS
for _ in $(seq 1 600); do kill -0 "$runpid" 2> /dev/null || break; sleep 0.1; done
if kill -0 "$runpid" 2> /dev/null; then kill "$runpid"; fail "the run hung behind a link that drops every packet"; fi
wait "$runpid" && fail "a run behind a dead link finished: $(tail -5 "$work/dead-link.out")"
grep -q "replica-2" "$work/dead-link.out" || fail "the dead link's node is not named: $(tail -5 "$work/dead-link.out")"
echo "ok: a dead link fails the run in $((SECONDS - t0)) s: $(grep -m1 "failed" "$work/dead-link.out")"
tc -n "$(host_ns 3)" qdisc del dev eth0 root
# Once the link is back, the node behind it serves the next run: it stopped its part when its
# coordinator fell silent (cluster.heartbeat_timeout_s), so a new configure finds it idle.
layouts single '[outer]
algorithm = "none"
replicas = 1' 3
served=""
for _ in $(seq 1 30); do
  if on_host 0 "$tw" --db "$db" run "$work/single.toml" --data-root "$work" --set train.steps=2 > "$work/single.out" 2>&1; then
    served=yes; break
  fi
  sleep 1
done
[ -n "$served" ] || fail "the node behind the dead link did not serve a new run within 30 s: $(grep -m1 failed "$work/single.out")"
echo "ok: the node behind the dead link serves a new run $((SECONDS - t0)) s after the link died"

for h in 1 2 3 4; do pgrep -f "curve-secret-key $work/keys/n$h/" > /dev/null || fail "node on host $h died"; done
echo "hosts_test: OK"
