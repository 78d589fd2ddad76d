#!/usr/bin/env bash
# Integration test of the distributed runtime through the CLI: `thinwire run` on threads and on
# real `thinwire node` child processes over TCP loopback, exact byte counts for DDP and DiLoCo,
# re-timing, layout errors, a node killed mid-run, and Ctrl-C. Micro model on a small text folder.
# Usage: run_test.sh PATH_TO_THINWIRE [CASE...] (threads, processes, ring3, hub, layout_errors,
# node_killed, ctrl_c; all of them when none is named)
source "$(dirname "$0")/harness.sh"
shift

micro_corpus "$work/corpus"
{ micro_tables "" "data.corpus=\"$work/corpus\"" "data.cache_dir=\"$work/cache\""
  printf '[outer]\nreplicas = 2\ninner_steps = 10\n[network]\nprofile = "home-20m"\n'; } > "$work/micro.toml"
P=33184  # parameters of this micro model
run() { "$tw" --db "$db" run "$work/micro.toml" --data-root "$work" "$@"; }  # paths are under $work
sent_of() { awk -v n="$1" '$1 == n && NF == 10 {print $5}' <<<"$2"; }  # the final table's row
# Re-timing on the recorded network reproduces every node's recorded clock after every round and at
# the end bit for bit (printed with %.17g, which round-trips a double); faster is shorter.
exact_retime() {  # run id, least number of clocks compared
  local rt
  rt="$("$tw" --db "$db" runs retime "$1" --network home-20m --rounds)"
  awk -v min="$2" 'NF == 4 && $1 ~ /^replica-/ && $4 !~ /%/ {n++; if ($3 != $4) bad = 1} END {exit (bad || n < min)}' <<<"$rt" \
    || fail "run $1: retime on the same network differs from the recorded clocks: $rt"
}

case_threads() {
# DDP, 2 replicas as threads: a ring all-reduce sends 2·(R−1)/R·P·4 = P·4 bytes per step per
# replica, 20 steps, plus the 8-byte start-up weights checksum.
out="$(run --set outer.algorithm=ddp --set run.name=ddp-threads)"
grep -q "finished" <<<"$out" || fail "ddp on threads did not finish: $out"
[ "$(sent_of replica-0 "$out")" = "$((20 * P * 4 + 8))" ] || fail "ddp bytes are not 20·P·4+8: $out"
[ "$(sent_of replica-1 "$out")" = "$((20 * P * 4 + 8))" ] || fail "ddp bytes (replica 1): $out"

# DiLoCo over the mesh, 2 replicas as threads: P·b per peer per round, 2 rounds, fp32 then bf16.
out="$(run --set outer.algorithm=diloco --set outer.topology=mesh --set run.name=diloco-threads)"
[ "$(sent_of replica-0 "$out")" = "$((2 * P * 4 + 8))" ] || fail "diloco fp32 bytes are not 2·P·4+8: $out"
out="$(run --set outer.algorithm=diloco --set outer.topology=mesh --set outer.dtype=bf16)"
[ "$(sent_of replica-1 "$out")" = "$((2 * P * 2 + 8))" ] || fail "diloco bf16 bytes are not 2·P·2+8: $out"
# Over the ring (DiLoCo's default): with 2 replicas each sends both chunks once, P·4 per round, plus
# the opening's 8-byte norm (the guard is on by default) — the mesh's bytes and 8 more, in 2 hops.
out="$(run --set outer.algorithm=diloco --set run.name=diloco-ring)"
[ "$(sent_of replica-0 "$out")" = "$((2 * (P * 4 + 8) + 8))" ] || fail "diloco ring bytes are not 2·(P·4+8)+8: $out"

# Simulated comm per DiLoCo round on home-20m: mesh 40 ms + 8·P·4 B / 20 Mb/s = 0.0930944 s; ring
# 2 hops of 40 ms + 8·(P·4 + 8) B / 20 Mb/s = 0.1330976 s.
comm_s_is() {  # run name, value
  local id
  id="$("$tw" --db "$db" runs list | awk -v n="$1" '$2 == n {print $1}')"
  "$tw" --db "$db" runs export "$id" --format csv > "$work/d.csv"
  [ "$(awk -F, '$7 == "round.comm_s"' "$work/d.csv" | wc -l)" -eq 4 ] || fail "$1: expected 2 rounds x 2 replicas of round.comm_s"
  awk -F, -v want="$2" '$7 == "round.comm_s" && ($8 - want)^2 > 1e-18 {bad = 1} END {exit bad}' "$work/d.csv" \
    || fail "$1: round.comm_s is not latency·hops + 8*bytes/bandwidth ($2)"
}
comm_s_is diloco-threads 0.0930944
comm_s_is diloco-ring 0.1330976

# Per-replica access links: replica 0 on a 5 Mb/s downlink with 50 ms. Over the mesh its rounds move at its own
# downlink, 0.05 + 8·P·4 / 5e6 = 0.2623776 s; replica 1 receives at 20 Mb/s from both uplinks but
# pays the larger latency, 0.05 + 8·P·4 / 20e6 = 0.1030944 s. Re-timing reproduces the clocks.
run --set outer.algorithm=diloco --set outer.topology=mesh --set 'network.replica_down_bps=[5e6, 20e6]' \
    --set 'network.replica_latency_s=[0.05, 0.04]' --set run.name=diloco-links >/dev/null
id="$("$tw" --db "$db" runs list | awk '$2 == "diloco-links" {print $1}')"
"$tw" --db "$db" runs export "$id" --format csv > "$work/l.csv"
awk -F, '$7 == "round.comm_s" {n++; want = ($2 == "replica-0") ? 0.2623776 : 0.1030944; if (($8 - want)^2 > 1e-18) bad = 1}
         END {exit (bad || n != 4)}' "$work/l.csv" || fail "access links: round.comm_s per replica: $(grep round.comm_s "$work/l.csv")"
# Over the ring every step waits for the slowest edge, 1 → 0 at 5 Mb/s, for both replicas:
# 2 hops of 50 ms + 8·(P·4 + 8) / 5e6 = 0.3123904 s.
run --set outer.algorithm=diloco --set 'network.replica_down_bps=[5e6, 20e6]' \
    --set 'network.replica_latency_s=[0.05, 0.04]' --set run.name=diloco-links-ring >/dev/null
id="$("$tw" --db "$db" runs list | awk '$2 == "diloco-links-ring" {print $1}')"
"$tw" --db "$db" runs export "$id" --format csv > "$work/l.csv"
awk -F, '$7 == "round.comm_s" {n++; if (($8 - 0.3123904)^2 > 1e-18) bad = 1} END {exit (bad || n != 4)}' "$work/l.csv" \
  || fail "access links over the ring: round.comm_s: $(grep round.comm_s "$work/l.csv")"
for name in diloco-threads diloco-ring ddp-threads; do
  id="$("$tw" --db "$db" runs list | awk -v n="$name" '$2 == n {print $1}')"
  exact_retime "$id" 4
  rt="$("$tw" --db "$db" runs retime "$id" --network datacenter)"
  awk '$1 ~ /^replica-/ {if ($3 >= $2) bad = 1} END {exit bad}' <<<"$rt" || fail "$name: datacenter is not faster: $rt"
done
# Replicas of two nodes under DiLoCo cannot be re-timed (the leader's broadcast is not stored): refused by name.
run --set outer.algorithm=diloco --set cluster.nodes_per_replica=2 --set train.steps=10 --set run.name=diloco-2n >/dev/null
id="$("$tw" --db "$db" runs list | awk '$2 == "diloco-2n" {print $1}')"
err="$("$tw" --db "$db" runs retime "$id" --network home-20m 2>&1 || true)"
grep -q "run $id (diloco, 2 replicas × 2 nodes): runs whose replicas span several nodes under diloco cannot be re-timed" <<<"$err" \
  || fail "multi-node DiLoCo retime not refused by name: $err"

# Streaming DiLoCo (overlapped exchanges, FP4; over the ring, its default) and NoLoCo (groups of 2
# among 4 replicas, over the mesh and over the ring): re-timing on the recorded network reproduces
# the live clocks, which follow the same overlap, group and hop rules.
run --set outer.algorithm=streaming_diloco --set outer.fragments=2 --set outer.overlap_steps=2 --set outer.dtype=fp4 \
    --set outer.mix_alpha=0.5 --set run.name=streaming >/dev/null
run --set outer.algorithm=noloco --set outer.replicas=4 --set outer.group_size=2 --set outer.momentum=0.5 \
    --set run.name=noloco >/dev/null
run --set outer.algorithm=noloco --set outer.replicas=4 --set outer.group_size=2 --set outer.momentum=0.5 \
    --set outer.topology=ring --set run.name=noloco-ring >/dev/null
for name in streaming noloco noloco-ring diloco-links diloco-links-ring; do
  id="$("$tw" --db "$db" runs list | awk -v n="$name" '$2 == n {print $1}')"
  show="$("$tw" --db "$db" runs show "$id")"  # whole (grep -q on a pipe would cut it off: SIGPIPE under pipefail)
  grep -q "finished" <<<"$show" || fail "$name did not finish"
  exact_retime "$id" 4
done
}

case_processes() {
# Two real `thinwire node` processes over TCP loopback: the run finishes, its metrics are stored,
# and the losses equal the same layout on threads (same seed, same data parts).
[ -n "$("$tw" --db "$db" runs list 2>/dev/null | awk '$2 == "ddp-threads" {print $1}')" ] ||  # the threads run compared with (case_threads)
  run --set outer.algorithm=ddp --set run.name=ddp-threads > /dev/null
out="$(run --set outer.algorithm=ddp --set cluster.mode=local --set run.name=ddp-local)"
grep -q "finished" <<<"$out" || fail "ddp on local processes did not finish: $out"
id="$("$tw" --db "$db" runs list | awk '$2 == "ddp-local" {print $1}')"
show="$("$tw" --db "$db" runs show "$id")"
grep -Eq "^train.loss +40 +20 " <<<"$show" || fail "local run lacks 2×20 train.loss points: $show"
grep -q "tcp://127.0.0.1:" <<<"$show" || fail "local run does not list its nodes' endpoints: $show"
cmp_out="$("$tw" --db "$db" runs compare "$("$tw" --db "$db" runs list | awk '$2 == "ddp-threads" {print $1}')" "$id")"
a="$(awk '$1 == "last" && $2 == "val" {print $4, $5}' <<<"$cmp_out")"
[ -n "$a" ] || fail "runs compare printed no last val loss: $cmp_out"
awk '{exit !(NF == 2 && $1 == $2)}' <<<"$a" || fail "local processes and threads give different losses: $cmp_out"
}

case_ring3() {
# A ring of 3 replicas (chunks of 11062, 11061, 11061 values) on threads and on child processes:
# the same losses, value for value, and the ring's bytes per replica: position 0 sends every chunk
# twice but chunks 1 and 2 once, (2·P − 2·11061)·4, the others (2·P − 11062 − 11061)·4, plus the
# guard's 8-byte opening to each peer, per round; 2 rounds and the 16-byte start-up checksum.
for mode in threads local; do
  out="$(run --set outer.algorithm=diloco --set outer.replicas=3 --set cluster.mode=$mode --set run.name=ring3-$mode)"
  [ "$(sent_of replica-0 "$out")" = "$((2 * ((2 * P - 2 * 11061) * 4 + 16) + 16))" ] || fail "ring of 3 ($mode): replica-0 bytes: $out"
  for r in 1 2; do
    [ "$(sent_of replica-$r "$out")" = "$((2 * ((2 * P - 11062 - 11061) * 4 + 16) + 16))" ] || fail "ring of 3 ($mode): replica-$r bytes: $out"
  done
  id="$("$tw" --db "$db" runs list | awk -v n="ring3-$mode" '$2 == n {print $1}')"
  "$tw" --db "$db" runs export "$id" --format csv | awk -F, '$7 == "train.loss" || $7 == "val.loss" || $7 == "round.bytes" {print $2, $3, $7, $8}' \
    | sort > "$work/ring3-$mode.txt"
done
[ "$(wc -l < "$work/ring3-threads.txt")" -ge 60 ] || fail "ring of 3: too few values stored"
cmp -s "$work/ring3-threads.txt" "$work/ring3-local.txt" || fail "ring of 3: threads and processes differ: $(diff "$work/ring3-threads.txt" "$work/ring3-local.txt" | head -5)"
exact_retime "$("$tw" --db "$db" runs list | awk '$2 == "ring3-local" {print $1}')" 6
}

case_hub() {
# The hub (outer.topology = "hub", docs/topologies.md): SparseLoCo over 3 replicas uploads each round's
# payload once to the coordinator's relay and downloads the 2 others'. Per replica: sent = 2 rounds ×
# p + the 16-byte start-up checksum (over the mesh), received = 2 × 2p + 16, where p is the payload the
# mesh run sends to each of its 2 peers (its sent = 2 × 2p + 16); round.bytes = 3p (up + down) in 2
# hops. The losses equal the mesh run's value for value (the same payloads applied in the same order),
# on threads and on child processes; the relay's own counters are stored as an event; re-timing is exact.
recv_of() { awk -v n="$1" '$1 == n && NF == 10 {print $6}' <<<"$2"; }
for run_name in sparse-mesh sparse-hub sparse-hub-local; do
  case "$run_name" in
    sparse-mesh) opts=(--set outer.topology=mesh) ;;
    sparse-hub) opts=(--set outer.topology=hub) ;;
    sparse-hub-local) opts=(--set outer.topology=hub --set cluster.mode=local) ;;
  esac
  out="$(run --set outer.algorithm=sparseloco --set outer.replicas=3 "${opts[@]}" --set run.name=$run_name)"
  grep -q "finished" <<<"$out" || fail "$run_name did not finish: $out"
  printf '%s\n' "$out" > "$work/$run_name.out"
  id="$("$tw" --db "$db" runs list | awk -v n="$run_name" '$2 == n {print $1}')"
  "$tw" --db "$db" runs export "$id" --format csv | awk -F, '$7 == "train.loss" || $7 == "val.loss" {print $2, $3, $7, $8}' \
    | sort > "$work/$run_name-loss.txt"
done
mesh_sent="$(sent_of replica-0 "$(cat "$work/sparse-mesh.out")")"
p=$(( (mesh_sent - 16) / 4 ))
[ "$p" -gt 0 ] && [ "$(( 4 * p + 16 ))" = "$mesh_sent" ] || fail "sparse mesh bytes are not 2·2p+16: $mesh_sent"
for run_name in sparse-hub sparse-hub-local; do
  out="$(cat "$work/$run_name.out")"
  for r in 0 1 2; do
    [ "$(sent_of replica-$r "$out")" = "$(( 2 * p + 16 ))" ] || fail "$run_name: replica-$r sent is not 2p+16 (p = $p): $out"
    [ "$(recv_of replica-$r "$out")" = "$(( 4 * p + 16 ))" ] || fail "$run_name: replica-$r received is not 2·2p+16 (p = $p): $out"
  done
  id="$("$tw" --db "$db" runs list | awk -v n="$run_name" '$2 == n {print $1}')"
  "$tw" --db "$db" runs export "$id" --format csv > "$work/h.csv"
  awk -F, -v want=$(( 3 * p )) '$7 == "round.bytes" {n++; if ($8 != want) bad = 1} $7 == "round.hops" {m++; if ($8 != 2) bad = 1}
       END {exit (bad || n != 6 || m != 6)}' "$work/h.csv" || fail "$run_name: round.bytes is not 3p / round.hops not 2: $(grep 'round\.' "$work/h.csv")"
  events="$(sqlite3 "$db" "select text from events where run_id = $id and kind = 'hub'")"
  [ "$events" = "hub relay: received $(( 6 * p )) B in 6 uploads, sent $(( 12 * p )) B in 12 payloads, refused 0" ] \
    || fail "$run_name: the relay's counters are not stored (p = $p): $events"
  exact_retime "$id" 6
  [ "$(wc -l < "$work/$run_name-loss.txt")" -ge 60 ] || fail "$run_name: too few losses stored"
  cmp -s "$work/sparse-mesh-loss.txt" "$work/$run_name-loss.txt" \
    || fail "$run_name: losses differ from the mesh's: $(diff "$work/sparse-mesh-loss.txt" "$work/$run_name-loss.txt" | head -5)"
done
}

case_layout_errors() {
# Layout errors name the problem and exit 1.
set +e
err="$(run --set outer.algorithm=ddp --set cluster.mode=local --set cluster.nodes=1 2>&1)"; rc=$?
[ "$rc" -eq 1 ] && grep -q "too few nodes: the layout needs 2" <<<"$err" || fail "too few nodes not reported ($rc): $err"
err="$(run --set cluster.stages=3 2>&1)"; rc=$?
[ "$rc" -eq 1 ] && grep -q "cluster.stages 3 exceeds model.n_layer 2" <<<"$err" || fail "stages > layers not reported: $err"
err="$(run --set outer.algorithm=gossip 2>&1)"; rc=$?
[ "$rc" -eq 1 ] && grep -q "outer.algorithm: unknown value \"gossip\"" <<<"$err" || fail "unknown algorithm not reported: $err"
err="$(run --set outer.algorithm=sparseloco --set outer.topology=ring 2>&1)"; rc=$?
[ "$rc" -eq 1 ] && grep -q "outer.topology \"ring\" does not apply to sparseloco: its payloads are sparse" <<<"$err" \
  || fail "a ring for sparse payloads not refused by name: $err"
err="$(run --set outer.algorithm=diloco --set outer.topology=hub 2>&1)"; rc=$?
[ "$rc" -eq 1 ] && grep -q "outer.topology \"hub\" does not apply to diloco: a hub relays whole payloads" <<<"$err" \
  || fail "a hub for dense payloads not refused by name: $err"
set -e
}

case_node_killed() {
# A node killed mid-run with a quorum of both replicas (cluster.min_replicas = 2; with fewer the
# survivor would go on, tests/app/faults_test.sh): the run is marked failed with the reason within
# the heartbeat timeout, and every metric stored before the kill is still there.
"$tw" --db "$db" run "$work/micro.toml" --data-root "$work" --set outer.algorithm=diloco --set cluster.mode=local --set train.steps=1000000 --set outer.inner_steps=50 \
    --set cluster.heartbeat_timeout_s=2 --set cluster.min_replicas=2 --set run.name=killed > "$work/killed.log" 2>&1 &
coord=$!
id="$(wait_rows killed 20)" || fail "the run to kill never stored metrics"
victim="$(pgrep -P "$coord" | tail -1)"
before="$("$tw" --db "$db" runs show "$id" | awk '$1 == "train.loss" {print $2}')"
t0=$(date +%s.%N)
kill -KILL "$victim"
set +e; wait "$coord"; rc=$?; set -e
elapsed=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')
[ "$rc" -eq 1 ] || fail "killed run exited $rc: $(cat "$work/killed.log")"
awk -v e="$elapsed" 'BEGIN {exit !(e < 2 + 6)}' || fail "failure took ${elapsed}s to notice"
show="$("$tw" --db "$db" runs show "$id")"
grep -q "failed" <<<"$show" || fail "killed run not marked failed: $show"
# Whichever notices first: the coordinator (the node's heartbeats stopped) or a peer waiting for
# it on the data plane (the member fell silent); both name the lost node and the quorum.
grep -q "quorum lost" <<<"$show" || fail "killed run's reason does not name the quorum: $show"
grep -Eq "sent no heartbeat for|is lost: silent for" <<<"$show" ||
  fail "killed run's reason does not name the missing heartbeats or the silent member: $show"
after="$(awk '$1 == "train.loss" {print $2}' <<<"$show")"
[ "$after" -ge "$before" ] || fail "metrics stored before the kill were lost ($before → $after)"
[ -z "$(pgrep -P "$coord" || true)" ] || fail "node processes outlived the coordinator"
}

case_ctrl_c() {
# Ctrl-C: the coordinator stops the nodes, marks the run interrupted, and no child survives.
"$tw" --db "$db" run "$work/micro.toml" --data-root "$work" --set outer.algorithm=ddp --set cluster.mode=local --set train.steps=1000000 --set run.name=ctrl-c \
    > "$work/ctrlc.log" 2>&1 &
coord=$!
id="$(wait_rows ctrl-c 10)" || fail "the run to interrupt never stored metrics"
kids="$(pgrep -P "$coord" | tr '\n' ' ')"
kill -INT "$coord"
set +e; wait "$coord"; rc=$?; set -e
[ "$rc" -eq 130 ] || fail "interrupted run exited $rc: $(cat "$work/ctrlc.log")"
show="$("$tw" --db "$db" runs show "$id")"
grep -q "interrupted" <<<"$show" || fail "run not marked interrupted"
for k in $kids; do kill -0 "$k" 2>/dev/null && fail "node process $k outlived the interrupted run"; done
echo "ok: Ctrl-C left the run interrupted and no node process"
}

run_cases "$@"
echo "run_test: ok (${ran_cases[*]})"
