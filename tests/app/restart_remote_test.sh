#!/usr/bin/env bash
# A restarted node on a remote cluster (cluster.restart_lost, docs/faults.md "Restarted nodes"):
# `thinwire node` processes the test starts itself run the layout; one node process is SIGKILLed
# mid-run and, a second later, started again on the same endpoint, as its operator would. The
# coordinator greets it again (and configures again the nodes of its replica that left the run with
# it), the survivors admit the replica at a round boundary, the run finishes, and after its first
# round the restarted replica holds the others' global weights. Three layouts on the same nodes:
#  * three one-node DiLoCo replicas, replica 1's node killed;
#  * three two-node DiLoCo replicas (Gloo groups), replica 2's second node killed: its first node,
#    which left the run with it, is configured again beside the restarted one;
#  * a full replica and two 2-stage pipelines of heterogeneous SparseLoCo (rank 8), replica 2's
#    stage-0 node killed: its stage-1 node is configured again, and after its first round back each
#    stage node holds replica 0's stage weights and T_fixed.
# Usage: restart_remote_test.sh PATH_TO_THINWIRE [CASE...] (replica, group, pipeline; all three in
# that order when none is named, each layout on the node processes the ones before it ran on)
source "$(dirname "$0")/harness.sh"
shift

micro_corpus "$work/corpus"
ports=()
# Starts node processes until there are N (node i listens on ports[i]).
nodes() {
  local p
  while [ ${#ports[@]} -lt "$1" ]; do
    pick_ports p
    ports+=("$p")
    start_loopback_node "$p" "$work" "$work/node$((${#ports[@]} - 1)).log"
  done
}

# Writes the layout for the first N nodes (started here if they are not yet) with extra TOML lines
# (stdin) under [outer]'s settings.
layout() {  # nodes
  local eps="" i
  nodes "$1"
  for ((i = 0; i < $1; i++)); do eps+="${eps:+, }\"tcp://127.0.0.1:${ports[$i]}\""; done
  { micro_tables "tie_embeddings = false"; cat <<TOML  # untied: the pipeline layout needs it
[outer]
replicas = 3
inner_steps = 10
algorithm = "diloco"
[network]
profile = "home-20m"
[cluster]
mode = "remote"
endpoints = [$eps]
heartbeat_timeout_s = 2
restart_lost = 1
TOML
  } > "$work/micro.toml"
}
# Runs the layout as NAME with STEPS steps and the settings; once NODE has stored 20 steps, SIGKILLs
# the node process at endpoint index VICTIM and a second later starts it again on its port; the
# run must finish. Sets id to the run's id (run in this shell: the restarted node is its child).
remote_restart() {  # name, steps, node to watch, victim index, settings...
  local name="$1" steps="$2" watch="$3" victim="$4"; shift 4
  "$tw" --db "$db" run "$work/micro.toml" --data-root "$work" --set train.steps="$steps" --set run.name="$name" "$@" \
    > "$work/$name.out" 2>&1 &
  local sub=$! rc
  stored() {  # train.loss rows of the watched node stored so far
    /usr/bin/python3 -c "import sqlite3,sys
try: print(sqlite3.connect(sys.argv[1]).execute('select count(*) from metrics m join runs r on r.id = m.run_id where r.name = ? and m.node = ? and m.name = \'train.loss\'', (sys.argv[2], sys.argv[3])).fetchone()[0])
except Exception: print(0)" "$db" "$name" "$watch"
  }
  for _ in $(seq 1 600); do [ "$(stored)" -ge 20 ] && break; sleep 0.1; done
  [ "$(stored)" -ge 20 ] || fail "$name never stored $watch's steps: $(tail -5 "$work/$name.out")"
  kill -KILL "${pids[$victim]}"; wait "${pids[$victim]}" 2>/dev/null || true
  sleep 1
  start_loopback_node "${ports[$victim]}" "$work" "$work/node$victim-again-$name.log"
  pids[$victim]="${pids[-1]}"; unset 'pids[-1]'
  set +e; wait "$sub"; rc=$?; set -e
  [ "$rc" -eq 0 ] || fail "$name exited $rc: $(tail -20 "$work/$name.out")"
  id="$("$tw" --db "$db" runs list | awk -v n="$name" '$2 == n {print $1}')"
}
# The round the restarted replica took the state after (from its `took ... step K` event).
rejoined_at() { grep -o "took \(stage 0's \)\?\(the \)\?state after the round at step [0-9]* from replica 0" <<<"$1" | grep -o "step [0-9]*" | grep -o "[0-9]*" | head -1; }
value() { awk -F, -v n="$2" -v s="$3" -v m="$4" '$2 == n && $3 == s && $7 == m {print $8}' <<<"$1"; }

# --- three one-node replicas ------------------------------------------------------------------------
case_replica() {
layout 3
remote_restart remote-restart 1500 replica-1 1
show="$("$tw" --db "$db" runs show "$id")"
grep -q "finished" <<<"$show" || fail "the run is not finished: $show"
grep -q "replica-1 was lost and answers again at tcp://127.0.0.1:${ports[1]} (restart 1 of 1)" <<<"$show" ||
  fail "the coordinator did not take the restarted node back: $(grep -E "process|lost|rejoin|status" <<<"$show" | head -20)"
k="$(rejoined_at "$show")"
[ -n "$k" ] || fail "the restarted replica took no state: $show"
c="$("$tw" --db "$db" runs export "$id" --format csv)"
h0="$(value "$c" replica-0 $((k + 10)) round.state_hash)"
for n in replica-1 replica-2; do
  [ -n "$h0" ] && [ "$h0" = "$(value "$c" $n $((k + 10)) round.state_hash)" ] ||
    fail "after its first round (step $((k + 10))) $n holds '$(value "$c" $n $((k + 10)) round.state_hash)', replica-0 '$h0'"
done
[ -z "$(value "$c" replica-0 $((k + 10)) round.group_mask)" ] || fail "the round after the rejoin is not among all three replicas"
[ "$(value "$c" replica-0 1500 round.members)" = "" ] || fail "the last round does not count every replica"
echo "restart_remote_test: replica ok (rejoined after the round at step $k)"
}

# --- three two-node replicas: replica-2.1 killed, replica-2.0 left with it ---------------------------
case_group() {
layout 6
remote_restart remote-group 1200 replica-2.1 5 --set cluster.nodes_per_replica=2
show="$("$tw" --db "$db" runs show "$id")"
grep -q "finished" <<<"$show" || fail "the group run is not finished: $show"
grep -q "replica-2.1 was lost and answers again at tcp://127.0.0.1:${ports[5]} (restart 1 of 1)" <<<"$show" ||
  fail "the coordinator did not take the restarted group node back: $show"
grep -q "replica-2.0 left with its replica and is configured again at tcp://127.0.0.1:${ports[4]}" <<<"$show" ||
  fail "the group's leader was not configured again: $show"
kg="$(rejoined_at "$show")"
[ -n "$kg" ] || fail "the restarted group took no state: $show"
c="$("$tw" --db "$db" runs export "$id" --format csv)"
h0="$(value "$c" replica-0.0 $((kg + 10)) round.weights_hash)"
for n in replica-1.1 replica-2.0 replica-2.1; do
  [ -n "$h0" ] && [ "$h0" = "$(value "$c" $n $((kg + 10)) round.weights_hash)" ] ||
    fail "group: after its first round (step $((kg + 10))) $n holds '$(value "$c" $n $((kg + 10)) round.weights_hash)', replica-0.0 '$h0'"
done
echo "restart_remote_test: group ok (rejoined after the round at step $kg)"
}

# --- a full replica and two compressed pipelines: replica-2.0 killed, replica-2.1 left with it ------
case_pipeline() {
layout 5
remote_restart remote-pipe 1000 replica-2.1 3 --set cluster.stages=2 --set pipeline.replicas=2 \
  --set pipeline.micro_batches=2 --set outer.algorithm=sparseloco --set pipeline.rank=8
show="$("$tw" --db "$db" runs show "$id")"
grep -q "finished" <<<"$show" || fail "the pipeline run is not finished: $show"
grep -q "replica-2.0 was lost and answers again at tcp://127.0.0.1:${ports[3]} (restart 1 of 1)" <<<"$show" ||
  fail "the coordinator did not take the restarted stage node back: $show"
grep -q "replica-2.1 left with its replica and is configured again at tcp://127.0.0.1:${ports[4]}" <<<"$show" ||
  fail "the pipeline's stage 1 was not configured again: $show"
kp="$(rejoined_at "$show")"
[ -n "$kp" ] || fail "the restarted pipeline took no state: $show"
grep -q "took stage 1's state after the round at step $kp from replica 0" <<<"$show" || fail "stage 1 took no state after $kp: $show"
c="$("$tw" --db "$db" runs export "$id" --format csv)"
for sn in 0:replica-2.0 1:replica-2.1; do
  h0="$(value "$c" replica-0 $((kp + 10)) "round.stage${sn%%:*}_hash")"
  [ -n "$h0" ] && [ "$h0" = "$(value "$c" "${sn#*:}" $((kp + 10)) "round.stage${sn%%:*}_hash")" ] ||
    fail "pipeline: after its first round back (step $((kp + 10))) ${sn#*:} holds other stage ${sn%%:*} weights than replica 0"
done
t0="$(value "$c" replica-0 $((kp + 10)) round.t_fixed_hash)"
[ -n "$t0" ] && [ "$t0" = "$(value "$c" replica-2.1 $((kp + 10)) round.t_fixed_hash)" ] || fail "pipeline: T_fixed differs after $((kp + 10))"
echo "restart_remote_test: pipeline ok (rejoined after the round at step $kp)"
}

run_cases "$@"
echo "restart_remote_test: ok (${ran_cases[*]})"
