#!/usr/bin/env bash
# Training that survives its network (docs/faults.md), through the CLI:
#  * a replica child process SIGKILLed mid-run: the run finishes, the node and the lost member are
#    stored as events, and the survivors' rounds after the loss count two members;
#  * a scheduled kill with rejoin on threads: the replica is out of the rounds it missed, takes the
#    state from replica 0 (recovery bytes on both sides) and holds the same global weights as the
#    others after its first round (the agreed state's hash, recorded on every replica); the same in
#    child processes, where the process is SIGKILLed and a fresh one rejoins: losses to the bit;
#  * the quorum: below cluster.min_replicas the run fails naming it;
#  * a seeded churn schedule run twice under the flops clock: identical losses;
#  * a straggler past outer.round_deadline_s is left out of that round and told how late it was;
#  * a spare takes the place of a replica killed for good: scheduled on threads, and with a replica
#    process SIGKILLed for real; after its first round it holds the others' global weights;
#  * a replica process SIGKILLed for real with cluster.restart_lost: the coordinator restarts it,
#    the members admit it at a round boundary, and after its first round it holds their global
#    weights; its tokens go on from the killed process's, and no step is stored twice; the same
#    over the hub with SparseLoCo, and for a two-node replica, restarted as a whole;
#  * a node of a two-node replica SIGKILLed: the replica leaves as a whole, the others go on;
#  * a fault schedule for two-node replicas (kill and rejoin, slow, disconnect): every node of the
#    replica follows it, deterministic on threads and equal in child processes; a two-node replica
#    past the deadline: both its nodes hold the round's weights;
#  * a fault schedule with pipeline replicas (slow, pause, a pipeline killed for good): every holder
#    drops it by the schedule, deterministic on threads and equal in child processes;
#  * a compressed pipeline killed by the schedule rejoins: it takes each stage's state from replica 0
#    and holds replica 0's stage weights and T_fixed after its first round back; the same for a full
#    replica killed and back and for pipelines cut off; seeded churn in a heterogeneous run, twice:
#    identical losses. In child processes each of these kills SIGKILLs the pipeline's (or the full
#    replica's) processes and fresh ones rejoin, to the threads run's figures;
#  * a pipeline straggling past outer.round_deadline_s is left out of the rounds it is late for and
#    takes replica 0's state after each;
#  * a run resumed after its coordinator was SIGKILLed, whose pipeline (or one-node replica) is then
#    killed by the schedule in child processes: the fresh processes rejoin, and the run ends as an
#    uninterrupted one;
#  * a stage node of a pipeline replica SIGKILLed: the pipeline leaves as a whole, the full replica
#    and the other pipeline redo their stage rounds between the two of them and finish; the same
#    with compressed pipelines (heterogeneous SparseLoCo), whose T_fixed stays alike on every node.
#    With cluster.restart_lost the compressed pipeline's processes are restarted, admitted at a
#    round boundary, and after their first round back hold replica 0's stage weights and T_fixed.
# Micro model, DiLoCo on home-20m under the flops clock (flops_micro.sh).
# Usage: faults_test.sh PATH_TO_THINWIRE [CASE...]: the cases below by name (case_NAME); every case,
# in this file's order, when none is named (each in a test of its own in the suite, cli.faults.NAME).
source "$(dirname "$0")/harness.sh"
shift
# Names each case as it starts, with the seconds so far: a run that hangs shows where in ctest's output.
section() { echo "[$SECONDS s] $*"; }

micro_corpus "$work/corpus"
source "$(dirname "$0")/flops_micro.sh"
flops_micro_layout 10
three=(--set outer.replicas=3 --set cluster.heartbeat_timeout_s=2)
# metric NAME of node NODE at step STEP in run RUN (csv: run,node,step,outer,wall,sim,name,value).
value() { awk -F, -v n="$2" -v s="$3" -v m="$4" '$2 == n && $3 == s && $7 == m {print $8}' <<<"$1"; }
rows() { awk -F, -v n="$2" -v m="$3" '$2 == n && $7 == m' <<<"$1" | wc -l; }
# Run RUN's rows whose metric matches REGEX as "node step [sim] metric value", sorted (sim when WITH_SIM is 1).
figures() { csv "$1" | awk -F, -v re="$2" -v sim="$3" '$7 ~ re {if (sim) print $2, $3, $6, $7, $8; else print $2, $3, $7, $8}' | sort; }
# PREFIX-a and PREFIX-b (threads) and PREFIX-local (child processes) stored the same figures, more than LEAST rows.
same_everywhere() {  # prefix, metric regex, with sim, least
  local a other
  a="$(figures "$1-a" "$2" "$3")"
  [ "$(wc -l <<<"$a")" -gt "$4" ] || fail "$1: too few rows: $(wc -l <<<"$a")"
  for other in b local; do
    [ "$a" = "$(figures "$1-$other" "$2" "$3")" ] ||
      fail "$1-a and $1-$other differ: $(diff <(echo "$a") <(figures "$1-$other" "$2" "$3") | head)"
  done
}
# Runs the layout with the given settings as PREFIX-a and PREFIX-b on threads and PREFIX-local in
# child processes, for same_everywhere; WHAT names the case when a run fails.
three_ways() {  # prefix, what, settings...
  local prefix="$1" what="$2"; shift 2
  run "$@" --set run.name="$prefix-a" > /dev/null || fail "$what run a failed"
  run "$@" --set run.name="$prefix-b" > /dev/null || fail "$what run b failed"
  run "$@" --set run.name="$prefix-local" --set cluster.mode=local > /dev/null || fail "$what in child processes failed"
}

# Run RUN's losses, membership masks and state hashes as "node step metric value", sorted.
pick() { csv "$1" | awk -F, '$7 == "train.loss" || $7 == "val.loss" || $7 == "round.group_mask" || $7 == "round.state_hash" {print $2, $3, $7, $8}' | sort; }
# A run of NAME in child processes with STEPS steps and the extra arguments; once it has stored 20
# steps, SIGKILLs its NTH node process (nodes start in role order, so pids ascend with it); the run
# must still exit 0. Prints the run id.
kill_mid_run() {
  local name="$1" nth="$2" steps="$3"; shift 3
  (cd "$work" && timeout -k 10 "$run_limit" "$tw" --db "$db" run micro.toml "${three[@]}" "$@" --set cluster.mode=local --set train.steps="$steps" \
     --set run.name="$name" > "$work/$name.log" 2>&1) &
  local sub=$! id coord victim rc
  id="$(wait_rows "$name" 20)" || fail "$name never stored metrics: $(cat "$work/$name.log")"
  coord="$(pgrep -P "$sub" -f "run micro.toml" || echo "$sub")"  # the timeout, then the coordinator
  coord="$(pgrep -P "$coord" -f "run micro.toml" || echo "$coord")"
  victim="$(pgrep -P "$coord" | sort -n | sed -n "${nth}p")"
  [ -n "$victim" ] || fail "$name: no node process $nth to kill"
  kill -KILL "$victim"
  set +e; wait "$sub"; rc=$?; set -e
  [ "$rc" -eq 0 ] || fail "$name exited $rc: $(tail -20 "$work/$name.log")"
  echo "$id"
}
# A full replica and two 2-stage pipeline replicas; the same with compressed boundaries under SparseLoCo.
pipes=(--set cluster.stages=2 --set pipeline.replicas=2 --set pipeline.micro_batches=2)
hetero=("${pipes[@]}" --set outer.algorithm=sparseloco --set pipeline.rank=8)
# The simulated clock of NODE's train.loss row at STEP in the csv rows C (c, node, step).
sim() { awk -F, -v n="$2" -v s="$3" '$2 == n && $3 == s && $7 == "train.loss" {print $6}' <<<"$1"; }
# $1 name, $2 the run's node count, $3 the nodes the schedule kills, $4 the metrics compared (regex),
# then the run's settings (with "kill 2 at 215 rejoin 225" and checkpoints every 40 steps): the
# reference on threads, then child processes whose coordinator is SIGKILLed after the first
# checkpoint every node holds, resumed.
resume_then_restart() {
  local name="$1" nodes="$2" killed="$3" re="$4"; shift 4
  run "${three[@]}" "$@" --set run.name="$name-ref" > /dev/null || fail "$name: the reference run failed"
  (cd "$work" && exec "$tw" --db "$db" run micro.toml "${three[@]}" "$@" --set cluster.mode=local \
     --set run.name="$name" > "$work/$name.log" 2>&1) &
  local sub=$! id at out show n a
  id="$(wait_rows "$name" 1)" || fail "$name never stored metrics: $(cat "$work/$name.log")"
  ckpt_all() {  # the latest step every node checkpointed ("" while none)
    /usr/bin/python3 -c "import sqlite3,sys
r = sqlite3.connect(sys.argv[1]).execute('SELECT step FROM metrics WHERE run_id = ? AND name = \"ckpt.bytes\" GROUP BY step HAVING COUNT(DISTINCT node) = ? ORDER BY step DESC', (int(sys.argv[2]), int(sys.argv[3]))).fetchone()
print(r[0] if r else '')" "$db" "$id" "$nodes"
  }
  for _ in $(seq 1 600); do [ -n "$(ckpt_all)" ] && break; sleep 0.05; done
  kill -KILL "$sub"; wait "$sub" 2>/dev/null || true
  at="$(ckpt_all)"
  [ -n "$at" ] && [ "$at" -lt 210 ] || fail "$name: the coordinator was killed after step ${at:-?}, not before the kill at 215"
  out="$(cd "$work" && "$tw" --db "$db" run --resume "$id" 2>&1)" || fail "$name: the resume failed: $out"
  show="$("$tw" --db "$db" runs show "$id")"
  for n in $killed; do
    grep -q "killed $n's process and started a fresh one, rejoining after the round at step 230" <<<"$show" ||
      fail "$name: $n's process was not killed and restarted after the resume at $at: $show"
  done
  a="$(figures "$name-ref" "$re" 1)"
  [ "$(wc -l <<<"$a")" -gt 500 ] || fail "$name: too few rows"
  [ "$a" = "$(figures "$name" "$re" 1)" ] ||
    fail "$name differs from the uninterrupted run: $(diff <(echo "$a") <(figures "$name" "$re" 1) | head -5)"
}
# The resumed runs' steps, checkpoints and schedule.
ks=(--set train.steps=300 --set run.threads=1 --set train.ckpt_every=40 --set 'faults.events=["kill 2 at 215 rejoin 225"]')

case_rejoin() {
section "a scheduled kill and rejoin (threads)"
# --- a scheduled kill and rejoin (threads) -------------------------------------------------------
out="$(run "${three[@]}" --set train.steps=40 --set run.name=rejoin --set 'faults.events=["kill 2 at 15 rejoin 25"]')" ||
  fail "rejoin run failed: $out"
grep -q "finished" <<<"$out" || fail "rejoin run did not finish: $out"
c="$(csv rejoin)"
# Replica 2 trains steps 1..15, is away for the rounds at 20 and 30, and trains 31..40 again.
[ "$(rows "$c" replica-2 train.loss)" -eq 25 ] || fail "replica-2 trained $(rows "$c" replica-2 train.loss) steps, not 25"
[ "$(rows "$c" replica-0 train.loss)" -eq 40 ] || fail "replica-0 did not train every step"
for s in 20 30; do
  [ "$(value "$c" replica-0 $s round.group_mask)" = "3" ] || fail "round at $s: group mask $(value "$c" replica-0 $s round.group_mask), want 3 (replicas 0, 1)"
  [ "$(value "$c" replica-1 $s round.members)" = "2" ] || fail "round at $s: replica-1 counts $(value "$c" replica-1 $s round.members) members"
done
[ -z "$(value "$c" replica-0 40 round.group_mask)" ] || fail "the round at 40 is not among every replica"
h0="$(value "$c" replica-0 40 round.state_hash)"; h2="$(value "$c" replica-2 40 round.state_hash)"
[ -n "$h0" ] && [ "$h0" = "$h2" ] && [ "$h0" = "$(value "$c" replica-1 40 round.state_hash)" ] ||
  fail "after its first round the joiner's global weights differ: $h0 / $h2"
sent="$(value "$c" replica-0 40 bytes.outer.recovery.sent)"; recv="$(value "$c" replica-2 40 bytes.outer.recovery.recv)"
[ -n "$sent" ] && [ "$sent" = "$recv" ] || fail "recovery bytes: replica-0 sent '$sent', replica-2 received '$recv'"
show="$("$tw" --db "$db" runs show "$(id_of rejoin)")"
grep -q "kill 2 at 15 rejoin 25: the worker stops" <<<"$show" || fail "no fault event: $show"
grep -q "took the state after the round at step 30 from replica 0" <<<"$show" || fail "no rejoin event: $show"
}

case_rejoin_processes() {
section "the same scheduled kill in child processes: the process is killed for "
# --- the same scheduled kill in child processes: the process is killed for real and a fresh one
# rejoins; one compute thread per node on both sides, so the losses are the threads run's to the bit.
one=(--set run.threads=1 --set train.steps=40 --set 'faults.events=["kill 2 at 15 rejoin 25"]')
run "${three[@]}" "${one[@]}" --set run.name=rejoin-threads > /dev/null || fail "rejoin-threads failed"
out="$(run "${three[@]}" "${one[@]}" --set cluster.mode=local --set run.name=rejoin-processes)" ||
  fail "rejoin run in child processes failed: $out"
show="$("$tw" --db "$db" runs show "$(id_of rejoin-processes)")"
grep -q "killed replica-2's process and started a fresh one, rejoining after the round at step 30" <<<"$show" ||
  fail "the process was not killed and restarted: $show"
grep -q "a fresh process rejoins after the round at step 30" <<<"$show" || fail "no fresh process: $show"
a="$(pick rejoin-threads)"; b="$(pick rejoin-processes)"
[ "$a" = "$b" ] || fail "a kill in child processes differs from one on threads: $(diff <(echo "$a") <(echo "$b") | head -5)"
[ "$(grep -c "^replica-2 .* train.loss" <<<"$b")" -eq 25 ] || fail "the restarted replica-2 did not train 25 steps in all"
}

case_spare() {
section "a spare takes the place of a replica killed for good (threads)"
# --- a spare takes the place of a replica killed for good (threads) -------------------------------
out="$(run "${three[@]}" --set cluster.spares=1 --set train.steps=40 --set run.name=spare --set 'faults.events=["kill 2 at 15"]')" ||
  fail "spare run failed: $out"
c="$(csv spare)"
# Replica 2 trains steps 1..15 and is gone; the round at 20 runs among 0 and 1; spare-0 then takes
# replica 2's place with the state after that round and trains 21..40, in the rounds at 30 and 40.
[ "$(rows "$c" replica-2 train.loss)" -eq 15 ] || fail "replica-2 trained $(rows "$c" replica-2 train.loss) steps, not 15"
[ "$(rows "$c" spare-0 train.loss)" -eq 20 ] || fail "spare-0 trained $(rows "$c" spare-0 train.loss) steps, not 20"
[ "$(value "$c" replica-0 20 round.group_mask)" = "3" ] || fail "spare run: round at 20 has mask $(value "$c" replica-0 20 round.group_mask), want 3"
[ -z "$(value "$c" replica-0 30 round.group_mask)" ] || fail "spare run: the round at 30 is not among three places"
h0="$(value "$c" replica-0 30 round.state_hash)"; hs="$(value "$c" spare-0 30 round.state_hash)"
[ -n "$h0" ] && [ "$h0" = "$hs" ] || fail "after its first round the spare's global weights differ: $h0 / $hs"
sent="$(value "$c" replica-0 40 bytes.outer.recovery.sent)"; recv="$(value "$c" spare-0 40 bytes.outer.recovery.recv)"
[ -n "$sent" ] && [ "$sent" = "$recv" ] || fail "spare recovery bytes: replica-0 sent '$sent', spare-0 received '$recv'"
grep -q "spare-0 takes replica 2's place with the state after the round at step 20 from replica 0" \
  <<<"$("$tw" --db "$db" runs show "$(id_of spare)")" || fail "no spare event"
# A spare never needed stands by to the end and the run finishes.
out="$(run "${three[@]}" --set cluster.spares=1 --set train.steps=20 --set run.name=idle-spare)" || fail "idle spare run failed: $out"
grep -q "spare-0 was not needed" <<<"$("$tw" --db "$db" runs show "$(id_of idle-spare)")" || fail "no idle-spare event"
}

case_quorum() {
section "the quorum"
# --- the quorum ----------------------------------------------------------------------------------
set +e; out="$(run "${three[@]}" --set train.steps=40 --set run.name=quorum --set cluster.min_replicas=3 --set 'faults.events=["kill 1 at 12"]')"; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "a run below its quorum finished: $out"
grep -q "quorum lost: 2 replica(s) left" <<<"$out" || fail "the quorum failure is not named: $out"
[ "$("$tw" --db "$db" runs list | awk '$2 == "quorum" {print $3}')" = "failed" ] || fail "quorum run not marked failed"
}

case_churn() {
section "seeded churn, twice: identical losses"
# --- seeded churn, twice: identical losses ---------------------------------------------------------
churn=(--set outer.replicas=4 --set train.steps=60 --set faults.churn.mtbf_steps=15 --set faults.churn.down_steps=10
       --set faults.churn.seed=3 --set cluster.min_replicas=2)
run "${churn[@]}" --set run.name=churn-a > /dev/null || fail "churn run a failed"
run "${churn[@]}" --set run.name=churn-b > /dev/null || fail "churn run b failed"
a="$(csv churn-a | awk -F, '$7 == "train.loss" || $7 == "val.loss" || $7 == "round.group_mask" {print $2, $3, $7, $8}' | sort)"
b="$(csv churn-b | awk -F, '$7 == "train.loss" || $7 == "val.loss" || $7 == "round.group_mask" {print $2, $3, $7, $8}' | sort)"
[ "$a" = "$b" ] || fail "the churn runs differ: $(diff <(echo "$a") <(echo "$b") | head -5)"
grep -q "round.group_mask" <<<"$a" || fail "the churn took no replica away"
}

case_deadline() {
section "a straggler past the deadline"
# --- a straggler past the deadline -----------------------------------------------------------------
# Replica 1's steps 11..20 take 3× 0.029374272 s: it reaches the round at 20 0.58748544 s after the others.
out="$(run "${three[@]}" --set train.steps=30 --set run.name=late --set outer.round_deadline_s=0.3 \
        --set 'faults.events=["slow 1 at 10 until 20 x 3"]')" || fail "deadline run failed: $out"
c="$(csv late)"
[ "$(value "$c" replica-0 20 round.group_mask)" = "5" ] || fail "round at 20: mask $(value "$c" replica-0 20 round.group_mask), want 5 (replicas 0, 2)"
# (To a few µs: the ring's chunks differ by a few bytes between positions, so the round at 10 ends a
# few bytes' time apart on home-20m's 20 Mb/s.)
awk -v l="$(value "$c" replica-1 20 round.late_s)" 'BEGIN {d = l - 0.58748544; exit !(d * d < 1e-10)}' ||
  fail "replica-1 was $(value "$c" replica-1 20 round.late_s) s late, want 0.58748544"
# The round at 10 counts everyone; replica 1 stays behind by the time it lost (its clock never runs
# backwards), so at 30 it is late again and left out again.
[ -z "$(value "$c" replica-0 10 round.group_mask)" ] || fail "the round at 10 should count every replica"
[ "$(value "$c" replica-0 30 round.group_mask)" = "5" ] || fail "round at 30: replica 1 still behind should be left out"
[ -n "$(value "$c" replica-1 20 bytes.outer.recovery.recv)" ] || fail "the late replica did not take the round's state"
grep -q "were left out" <<<"$("$tw" --db "$db" runs show "$(id_of late)")" || fail "no late event"
}

case_sigkill() {
section "a replica process killed for real"
# --- a replica process killed for real -------------------------------------------------------------
id="$(kill_mid_run sigkill 3 1500)"  # replica-2
show="$("$tw" --db "$db" runs show "$id")"
grep -q "finished" <<<"$show" || fail "the run with a killed replica is not finished: $show"
grep -q "replica(s) go on" <<<"$show" || fail "no node-lost event: $show"
grep -q "the round is redone among replicas 0, 1" <<<"$show" || fail "no member-lost event: $show"
c="$("$tw" --db "$db" runs export "$id" --format csv)"
[ "$(rows "$c" replica-0 train.loss)" -eq 1500 ] || fail "replica-0 did not finish its steps"
n2="$(awk -F, '$2 == "replica-0" && $7 == "round.members" && $8 == 2' <<<"$c" | wc -l)"
[ "$n2" -ge 1 ] || fail "no round counted two members after the kill"
awk -F, '$2 == "replica-0" && $7 == "round.group_mask" && $8 != 3 {bad = 1} END {exit bad}' <<<"$c" ||
  fail "a round after the kill is not among replicas 0 and 1"
}

case_sigkill_spare() {
section "a replica process killed for real, and a spare process taking its plac"
# --- a replica process killed for real, and a spare process taking its place -----------------------
# (Enough steps that the kill lands mid-run even when the store lags behind a loaded machine.)
id="$(kill_mid_run sigkill-spare 3 1200 --set cluster.spares=1)"  # replica-2 (then spare-0)
show="$("$tw" --db "$db" runs show "$id")"
grep -q "finished" <<<"$show" || fail "the run with a spare is not finished: $show"
grep -q "spare-0 takes replica 2's place" <<<"$show" || fail "the spare did not take replica 2's place: $show"
c="$("$tw" --db "$db" runs export "$id" --format csv)"
first="$(awk -F, '$2 == "spare-0" && $7 == "round.state_hash" {print $3}' <<<"$c" | sort -n | head -1)"
[ -n "$first" ] || fail "the spare took part in no round"
h0="$(value "$c" replica-0 "$first" round.state_hash)"; hs="$(value "$c" spare-0 "$first" round.state_hash)"
[ "$h0" = "$hs" ] || fail "after its first round (step $first) the spare's global weights differ: $h0 / $hs"
[ -z "$(value "$c" replica-0 1200 round.group_mask)" ] || fail "the last round is not among three places"
[ "$(rows "$c" spare-0 train.loss)" -ge 10 ] || fail "the spare trained $(rows "$c" spare-0 train.loss) steps"
}

case_restart_lost() {
section "a replica process killed for real and restarted by its coordinator (cl"
# --- a replica process killed for real and restarted by its coordinator (cluster.restart_lost) -----
# The fresh process says it is up; the members admit it after the first round all of them heard it
# by, and the round's lowest member sends it the state. It trains on from that round with the
# tokens its replica had, and after its first round holds the others' global weights.
id="$(kill_mid_run restart-lost 2 1200 --set cluster.restart_lost=1)"  # replica-1
show="$("$tw" --db "$db" runs show "$id")"
grep -q "finished" <<<"$show" || fail "the run with a restarted replica is not finished: $show"
grep -q "replica-1 was lost; started a fresh process (restart 1 of 1)" <<<"$show" || fail "no restart event: $show"
grep -q "replica-1: a fresh process after a loss" <<<"$show" || fail "the fresh process did not say it waits: $show"
k="$(grep -o "took the state after the round at step [0-9]* from replica 0" <<<"$show" | grep -o "step [0-9]*" | grep -o "[0-9]*")"
[ -n "$k" ] || fail "the restarted replica took no state: $show"
c="$("$tw" --db "$db" runs export "$id" --format csv)"
next=$((k + 10))
h0="$(value "$c" replica-0 $next round.state_hash)"
for n in replica-1 replica-2; do
  [ -n "$h0" ] && [ "$h0" = "$(value "$c" $n $next round.state_hash)" ] ||
    fail "after its first round (step $next) $n holds '$(value "$c" $n $next round.state_hash)', replica-0 '$h0'"
done
[ -z "$(value "$c" replica-0 $next round.group_mask)" ] || fail "the round at $next is not among all three replicas"
[ "$(value "$c" replica-0 $k round.group_mask)" = "5" ] || fail "the round at $k is not among replicas 0 and 2"
sent="$(value "$c" replica-0 1200 bytes.outer.recovery.sent)"; recv="$(value "$c" replica-1 1200 bytes.outer.recovery.recv)"
[ -n "$sent" ] && [ "$sent" = "$recv" ] || fail "restart recovery bytes: replica-0 sent '$sent', replica-1 received '$recv'"
steps="$(awk -F, '$2 == "replica-1" && $7 == "train.loss" {print $3}' <<<"$c" | sort -n)"
[ -z "$(uniq -d <<<"$steps")" ] || fail "replica-1 stored a step twice: $(uniq -d <<<"$steps" | head -3)"
[ "$(awk -v k="$k" '$1 > k' <<<"$steps" | wc -l)" -eq $((1200 - k)) ] || fail "the fresh replica-1 did not train every step after $k"
last="$(awk -v k="$k" '$1 <= k' <<<"$steps" | tail -1)"  # the killed process's last step
t_last="$(value "$c" replica-1 "$last" train.tokens)"; t_next="$(value "$c" replica-1 $((k + 1)) train.tokens)"
per="$(value "$c" replica-0 1 train.tokens)"
[ "$((t_next - t_last))" -eq "$per" ] || fail "the fresh process's tokens go on from $t_next, not from $t_last + $per"
# Its wall clock counts from the run's start, as its peers' do: its first row comes after the killed
# process's last.
w_last="$(awk -F, -v s="$last" '$2 == "replica-1" && $3 == s && $7 == "train.loss" {print $5}' <<<"$c")"
w_next="$(awk -F, -v s=$((k + 1)) '$2 == "replica-1" && $3 == s && $7 == "train.loss" {print $5}' <<<"$c")"
awk -v a="$w_last" -v b="$w_next" 'BEGIN {exit !(b > a)}' || fail "the fresh process's wall time $w_next is not after the killed one's $w_last"
}

case_restart_hub() {
# The same over the hub relay with SparseLoCo (the fresh process's error feedback starts at zero):
# after its first round the restarted replica holds the others' global weights.
section "the same over the hub with SparseLoCo"
id="$(kill_mid_run restart-hub 2 1200 --set cluster.restart_lost=1 --set outer.algorithm=sparseloco --set outer.topology=hub)"
show="$("$tw" --db "$db" runs show "$id")"
k="$(grep -o "took the state after the round at step [0-9]* from replica 0" <<<"$show" | grep -o "step [0-9]*" | grep -o "[0-9]*")"
[ -n "$k" ] || fail "over the hub the restarted replica took no state: $show"
c="$("$tw" --db "$db" runs export "$id" --format csv)"
h0="$(value "$c" replica-0 $((k + 10)) round.state_hash)"
[ -n "$h0" ] && [ "$h0" = "$(value "$c" replica-1 $((k + 10)) round.state_hash)" ] ||
  fail "over the hub, after its first round the restarted replica-1's global weights differ from replica-0's '$h0'"
}

case_restart_group() {
# A node of a two-node replica SIGKILLed with cluster.restart_lost: the replica leaves as a whole,
# both its processes are restarted, its leader is admitted, and after its first round both its
# nodes hold replica 0's weights.
section "a node of a two-node replica SIGKILLed and the replica restarted as a whole"
id="$(kill_mid_run restart-group 6 1200 --set cluster.nodes_per_replica=2 --set cluster.restart_lost=1)"  # replica-2.1
show="$("$tw" --db "$db" runs show "$id")"
grep -q "finished" <<<"$show" || fail "the run with a restarted two-node replica is not finished: $show"
# The leader leaves with its replica, or on a loaded machine is itself counted lost first: restarted either way.
grep -Eq "replica-2.0 (leaves with its replica|was lost); started a fresh process" <<<"$show" || fail "the leader was not restarted: $show"
k="$(grep -o "took the state after the round at step [0-9]* from replica 0" <<<"$show" | grep -o "step [0-9]*" | grep -o "[0-9]*")"
[ -n "$k" ] || fail "the restarted two-node replica took no state: $show"
c="$("$tw" --db "$db" runs export "$id" --format csv)"
h0="$(value "$c" replica-0.0 $((k + 10)) round.weights_hash)"
for n in replica-0.1 replica-2.0 replica-2.1; do
  [ -n "$h0" ] && [ "$h0" = "$(value "$c" $n $((k + 10)) round.weights_hash)" ] ||
    fail "after its first round (step $((k + 10))) $n holds '$(value "$c" $n $((k + 10)) round.weights_hash)', replica-0.0 '$h0'"
done
[ "$(awk -F, '$2 == "replica-2.1" && $7 == "train.loss" && $3 > '"$k"'' <<<"$c" | wc -l)" -eq $((1200 - k)) ] ||
  fail "the fresh replica-2.1 did not train every step after $k"
}

case_group_leave() {
section "a node of a two-node replica killed for real: the replica leaves as a "
# --- a node of a two-node replica killed for real: the replica leaves as a whole -------------------
# (Enough steps that the kill lands mid-run even when the store lags behind a loaded machine.)
id="$(kill_mid_run group-leave 6 1200 --set cluster.nodes_per_replica=2)"  # replica-2.1 (0.0, 0.1, 1.0, 1.1, 2.0, 2.1)
show="$("$tw" --db "$db" runs show "$id")"
grep -q "finished" <<<"$show" || fail "the run with a lost group node is not finished: $show"
grep -q "replica 2 leaves the run as a whole" <<<"$show" || fail "no leave event: $show"
c="$("$tw" --db "$db" runs export "$id" --format csv)"
[ "$(rows "$c" replica-0.0 train.loss)" -eq 1200 ] || fail "replica-0.0 did not finish its steps"
[ "$(rows "$c" replica-1.1 train.loss)" -eq 1200 ] || fail "replica-1.1 did not finish its steps"
awk -F, '$2 == "replica-0.0" && $7 == "round.group_mask" && $8 == 3 {n++} END {exit !(n >= 1)}' <<<"$c" ||
  fail "no round among replicas 0 and 1 after replica 2 left"
}

case_pipe_leave() {
section "a stage node of a pipeline replica killed for real: the pipeline leave"
# --- a stage node of a pipeline replica killed for real: the pipeline leaves as a whole -------------
id="$(kill_mid_run pipe-leave 5 1000 "${pipes[@]}")"  # replica-2.1 (replica-0, 1.0, 1.1, 2.0, 2.1)
show="$("$tw" --db "$db" runs show "$id")"
grep -q "finished" <<<"$show" || fail "the run with a lost stage node is not finished: $show"
grep -q "replica 2 leaves the run as a whole" <<<"$show" || fail "no leave event from replica-2.0: $show"
grep -q "node-lost .*replica-2.1" <<<"$show" || fail "no node-lost event for replica-2.1: $show"
grep -q "member-lost .*the round is redone among replicas 0, 1" <<<"$show" || fail "no round redone among 0, 1: $show"
! grep -q "replica 1 leaves the run" <<<"$show" || fail "the healthy pipeline left the run: $show"
c="$("$tw" --db "$db" runs export "$id" --format csv)"
[ "$(rows "$c" replica-0 train.loss)" -eq 1000 ] || fail "replica-0 did not finish its steps"
[ "$(rows "$c" replica-1.0 train.lr)" -eq 1000 ] || fail "replica-1.0 did not finish its steps"
[ "$(rows "$c" replica-1.1 train.loss)" -eq 1000 ] || fail "replica-1.1 did not finish its steps"
[ "$(rows "$c" replica-2.0 train.lr)" -lt 1000 ] || fail "replica-2.0 trained to the end: it did not leave"
# The last round is among replicas 0 and 1 only, on every holder of each stage, and they agree.
for n in replica-0 replica-1.0 replica-1.1; do
  [ "$(value "$c" $n 1000 round.group_mask | sort -u)" = "3" ] || fail "$n: the last round is not among replicas 0 and 1"
done
[ "$(value "$c" replica-0 1000 round.members)" = "2" ] || fail "the last round does not count two members"
h0="$(value "$c" replica-0 1000 round.stage0_hash)"; h1="$(value "$c" replica-1.0 1000 round.stage0_hash)"
[ -n "$h0" ] && [ "$h0" = "$h1" ] || fail "stage 0 after the last round: replica-0 $h0, replica-1.0 $h1"
h0="$(value "$c" replica-0 1000 round.stage1_hash)"; h1="$(value "$c" replica-1.1 1000 round.stage1_hash)"
[ -n "$h0" ] && [ "$h0" = "$h1" ] || fail "stage 1 after the last round: replica-0 $h0, replica-1.1 $h1"
}

case_group_schedule() {
section "a fault schedule for replicas of two nodes (Gloo groups): every node o"
# --- a fault schedule for replicas of two nodes (Gloo groups): every node of the replica follows it;
# a killed replica's nodes are rebuilt, the leader takes a live peer's state and its other node the
# leader's weights over their group; a disconnected one trains on alone. Deterministic on threads,
# and child processes (both of replica 2's processes SIGKILLed and restarted, meeting in a fresh Gloo
# group) give the same numbers. -------------------------------------------------------------------
grp=(--set cluster.nodes_per_replica=2 --set train.steps=50 --set run.threads=1
     --set 'faults.events=["kill 2 at 15 rejoin 25", "slow 1 at 5 until 12 x 2", "disconnect 1 at 32 rejoin 35"]')
three_ways group "group schedule" "${three[@]}" "${grp[@]}"
c="$(csv group-a)"
for n in replica-2.0 replica-2.1; do
  [ "$(rows "$c" $n train.loss)" -eq 35 ] || fail "$n trained $(rows "$c" $n train.loss) steps, not 35 (1..15, 31..50)"
done
# Rounds at 20 and 30 without replica 2, at 40 without replica 1 (away), at 50 with all three.
for sm in 20:3 30:3 40:5; do
  [ "$(value "$c" replica-0.0 "${sm%:*}" round.group_mask)" = "${sm#*:}" ] || fail "round at ${sm%:*}: mask $(value "$c" replica-0.0 "${sm%:*}" round.group_mask), want ${sm#*:}"
done
h0="$(value "$c" replica-0.0 50 round.state_hash)"
[ -n "$h0" ] && [ "$h0" = "$(value "$c" replica-1.0 50 round.state_hash)" ] && [ "$h0" = "$(value "$c" replica-2.0 50 round.state_hash)" ] ||
  fail "after the last round the leaders' global weights differ"
# The rebuilt non-leader took its leader's (trained) weights: its first step back is no fresh model's.
awk -v a="$(value "$c" replica-2.1 1 train.loss)" -v b="$(value "$c" replica-2.1 31 train.loss)" 'BEGIN {exit !(b < 0.6 * a)}' ||
  fail "replica-2.1 after its rejoin trains from fresh weights: loss $(value "$c" replica-2.1 31 train.loss) at 31, $(value "$c" replica-2.1 1 train.loss) at 1"
show="$("$tw" --db "$db" runs show "$(id_of group-a)")"
grep -q "replica-2.1 .*kill 2 at 15 rejoin 25: the worker stops" <<<"$show" || fail "no fault event on the non-leader: $show"
grep -q "replica-1.0 .*rejoin .*took the state after the round at step 40" <<<"$show" || fail "the disconnected leader took no state: $show"
same_everywhere group '^(train[.]loss|round[.]state_hash|val[.]loss)$' 0 250
show="$("$tw" --db "$db" runs show "$(id_of group-local)")"
for n in replica-2.0 replica-2.1; do
  grep -q "killed $n's process and started a fresh one, rejoining after the round at step 30" <<<"$show" ||
    fail "$n's process was not killed and restarted: $show"
done
}

case_group_deadline() {
section "a straggling two-node replica past the deadline: replica 1 (4x slow fr"
# --- a straggling two-node replica past the deadline: replica 1 (4x slow from step 10 to 20) is left
# out of the rounds at 20 and 30; its leader takes the donor's state before its group's broadcast,
# so both its nodes hold the round's weights (round.weights_hash, every node, equal to replica
# 0's). Threads twice and child processes agree. ----------------------------------------------------
gl=(--set cluster.nodes_per_replica=2 --set train.steps=30 --set run.threads=1 --set outer.round_deadline_s=0.3
    --set 'faults.events=["slow 1 at 10 until 20 x 3"]')
three_ways group-late "group deadline" "${three[@]}" "${gl[@]}"
c="$(csv group-late-a)"
[ -z "$(value "$c" replica-0.0 10 round.group_mask)" ] || fail "group deadline: the round at 10 should count every replica"
for s in 20 30; do
  [ "$(value "$c" replica-0.0 $s round.group_mask)" = "5" ] || fail "group deadline: round at $s: mask $(value "$c" replica-0.0 $s round.group_mask), want 5"
  awk -v l="$(value "$c" replica-1.0 $s round.late_s)" 'BEGIN {exit !(l > 0.3)}' || fail "group deadline: replica 1 not late at $s"
  h0="$(value "$c" replica-0.0 $s round.weights_hash)"
  for n in replica-0.1 replica-1.0 replica-1.1 replica-2.1; do
    [ -n "$h0" ] && [ "$h0" = "$(value "$c" $n $s round.weights_hash)" ] || fail "group deadline: after the round at $s $n holds other weights than replica-0.0"
  done
done
same_everywhere group-late '^(train[.]loss|val[.]loss|round[.](state|weights)_hash|round[.]late_s|round[.]group_mask)$' 0 150
}

case_pipe_schedule() {
section "a fault schedule in a run with pipeline replicas (a full replica, two "
# --- a fault schedule in a run with pipeline replicas (a full replica, two 2-stage pipelines): a slow
# and a paused pipeline, and one killed for good at 25. Every holder drops it from the round at 30 by
# the schedule (the clock pays the heartbeat timeout), the stage hashes agree, and the run is
# deterministic on threads and equal in child processes. -------------------------------------------
pf=(--set cluster.stages=2 --set pipeline.replicas=2 --set pipeline.micro_batches=2 --set train.steps=40 --set run.threads=1
    --set 'faults.events=["slow 1 at 5 until 15 x 3", "kill 2 at 25", "pause 1 at 32 until 34"]')
three_ways pipe-sched "pipeline schedule" "${three[@]}" "${pf[@]}"
c="$(csv pipe-sched-a)"
[ "$(rows "$c" replica-2.0 train.lr)" -eq 25 ] && [ "$(rows "$c" replica-2.1 train.loss)" -eq 25 ] ||
  fail "the killed pipeline trained $(rows "$c" replica-2.0 train.lr) / $(rows "$c" replica-2.1 train.loss) steps, not 25"
[ "$(rows "$c" replica-1.1 train.loss)" -eq 40 ] || fail "the slow pipeline did not finish"
[ -z "$(value "$c" replica-0 20 round.members)" ] || fail "the round at 20 is not among all three"
for s in 30 40; do
  for n in replica-0 replica-1.0 replica-1.1; do
    [ "$(value "$c" $n $s round.group_mask | sort -u)" = "3" ] || fail "$n: the round at $s is not among replicas 0 and 1"
  done
  [ "$(value "$c" replica-0 $s round.stage1_hash)" = "$(value "$c" replica-1.1 $s round.stage1_hash)" ] ||
    fail "stage 1 after the round at $s differs between replica-0 and replica-1.1"
done
# The round at 30 pays the 2 s heartbeat timeout: replica 0's clock from step 30 to 31 exceeds it.
awk -v a="$(sim "$c" replica-0 30)" -v b="$(sim "$c" replica-0 31)" 'BEGIN {exit !(b - a > 2)}' ||
  fail "the round at 30 did not pay the heartbeat timeout: clock $(sim "$c" replica-0 30) → $(sim "$c" replica-0 31)"
show="$("$tw" --db "$db" runs show "$(id_of pipe-sched-a)")"
grep -q "replica-2.1 .*kill 2 at 25: the stage node stops" <<<"$show" || fail "no kill event on replica-2.1: $show"
grep -q "replica-1.0 .*slow 1 at 5 until 15 x 3: its steps take 3x" <<<"$show" || fail "no slow event: $show"
same_everywhere pipe-sched '^(train[.]loss|val[.]loss|round[.]stage.*)$' 1 120
show="$("$tw" --db "$db" runs show "$(id_of pipe-sched-local)")"
for n in replica-2.0 replica-2.1; do
  grep -q "killed $n's process (kill 2 at 25)" <<<"$show" || fail "$n's process was not killed for good: $show"
done
}

case_pipe_rejoin() {
section "a pipeline replica killed by the schedule rejoins (heterogeneous Spars"
# --- a pipeline replica killed by the schedule rejoins (heterogeneous SparseLoCo, rank 8): replica
# 0 hands each of its stage nodes that stage's state after the round at 30; after its first round
# back (40) it holds replica 0's stage weights and T_fixed. Threads twice and child processes agree.
pr=("${pipes[@]}" --set outer.algorithm=sparseloco --set pipeline.rank=8 --set train.steps=50 --set run.threads=1
    --set 'faults.events=["kill 2 at 15 rejoin 25"]')
three_ways pipe-rejoin "pipeline rejoin" "${three[@]}" "${pr[@]}"
c="$(csv pipe-rejoin-a)"
[ "$(rows "$c" replica-2.0 train.lr)" -eq 35 ] && [ "$(rows "$c" replica-2.1 train.loss)" -eq 35 ] ||
  fail "the rejoining pipeline trained $(rows "$c" replica-2.0 train.lr) / $(rows "$c" replica-2.1 train.loss) steps, not 35"
for s in 20 30; do
  [ "$(value "$c" replica-0 $s round.group_mask | sort -u)" = "3" ] || fail "pipeline rejoin: the round at $s is not among replicas 0 and 1"
done
[ -z "$(value "$c" replica-0 40 round.group_mask)" ] || fail "pipeline rejoin: the round at 40 is not among every replica"
for k in stage0:replica-2.0 stage1:replica-2.1; do
  h0="$(value "$c" replica-0 40 "round.${k%%:*}_hash")"; h2="$(value "$c" "${k#*:}" 40 "round.${k%%:*}_hash")"
  [ -n "$h0" ] && [ "$h0" = "$h2" ] || fail "after its first round back ${k#*:} holds other ${k%%:*} weights: $h0 / $h2"
done
t0="$(value "$c" replica-0 40 round.t_fixed_hash)"
[ -n "$t0" ] && [ "$t0" = "$(value "$c" replica-2.0 40 round.t_fixed_hash)" ] && [ "$t0" = "$(value "$c" replica-2.1 40 round.t_fixed_hash)" ] ||
  fail "after its first round back the pipeline's T_fixed differs from replica 0's"
sent="$(value "$c" replica-0 50 bytes.outer.recovery.sent)"
recv=$(( $(value "$c" replica-2.0 50 bytes.outer.recovery.recv) + $(value "$c" replica-2.1 50 bytes.outer.recovery.recv) ))
[ -n "$sent" ] && [ "$sent" -eq "$recv" ] || fail "pipeline recovery bytes: replica-0 sent '$sent', the stage nodes received $recv"
show="$("$tw" --db "$db" runs show "$(id_of pipe-rejoin-a)")"
grep -q "replica-2.1 .*rejoin .*took stage 1's state after the round at step 30 from replica 0" <<<"$show" ||
  fail "no rejoin event on replica-2.1: $show"
same_everywhere pipe-rejoin '^(train[.]loss|val[.]loss|round[.]stage.*|round[.]t_fixed_hash|bytes[.]outer[.]recovery[.].*)$' 1 150
show="$("$tw" --db "$db" runs show "$(id_of pipe-rejoin-local)")"
for n in replica-2.0 replica-2.1; do
  grep -q "killed $n's process and started a fresh one, rejoining after the round at step 30" <<<"$show" ||
    fail "$n's process was not killed and restarted: $show"
  grep -q "$n .*start .*a fresh process rejoins after the round at step 30" <<<"$show" || fail "$n: no fresh process rejoined: $show"
done
}

case_pipe_mixed() {
section "a full replica killed and back, and pipelines cut off, in a run with p"
# --- a full replica killed and back, and pipelines cut off, in a run with pipeline replicas
# (heterogeneous SparseLoCo; replicas 0 and 1 full, 2 and 3 rank-8 pipelines): the full replica
# takes every stage from replica 0 after the round at 30 (a fresh AdamW); the cut-off pipeline
# trains on alone and takes replica 0's state after the round at 30 too; a pipeline cut off for
# good trains to the end outside the rounds. Threads twice and child processes agree. -------------
pd=(--set outer.replicas=4 --set cluster.heartbeat_timeout_s=2 "${pipes[@]}" --set outer.algorithm=sparseloco
    --set pipeline.rank=8 --set train.steps=50 --set run.threads=1
    --set 'faults.events=["kill 1 at 15 rejoin 25", "disconnect 3 at 12 rejoin 28", "disconnect 2 at 42"]')
three_ways pipe-mixed "mixed pipeline schedule" "${pd[@]}"
c="$(csv pipe-mixed-a)"
[ "$(rows "$c" replica-1 train.loss)" -eq 35 ] || fail "the killed full replica trained $(rows "$c" replica-1 train.loss) steps, not 35"
for n in replica-2.1 replica-3.1; do
  [ "$(rows "$c" $n train.loss)" -eq 50 ] || fail "$n (cut off, not killed) trained $(rows "$c" $n train.loss) steps, not 50"
done
for sm in 20:5 30:5 50:11; do  # masks: {0, 2}, {0, 2}, {0, 1, 3}
  [ "$(value "$c" replica-0 "${sm%%:*}" round.group_mask | sort -u)" = "${sm#*:}" ] ||
    fail "the round at ${sm%%:*} has mask $(value "$c" replica-0 "${sm%%:*}" round.group_mask | sort -u | tr '\n' ' '), want ${sm#*:}"
done
[ -z "$(value "$c" replica-0 40 round.group_mask)" ] || fail "the round at 40 is not among every replica"
for s in 40 50; do
  for n in replica-1 replica-3.0; do
    [ "$(value "$c" $n $s round.stage0_hash)" = "$(value "$c" replica-0 $s round.stage0_hash)" ] ||
      fail "$n's stage 0 after the round at $s differs from replica 0's"
  done
  [ "$(value "$c" replica-3.1 $s round.stage1_hash)" = "$(value "$c" replica-0 $s round.stage1_hash)" ] &&
    [ "$(value "$c" replica-3.1 $s round.t_fixed_hash)" = "$(value "$c" replica-0 $s round.t_fixed_hash)" ] ||
    fail "replica-3.1's stage 1 or T_fixed after the round at $s differs from replica 0's"
done
[ -z "$(value "$c" replica-2.0 50 round.stage0_hash)" ] || fail "the pipeline cut off for good took part in the round at 50"
show="$("$tw" --db "$db" runs show "$(id_of pipe-mixed-a)")"
grep -q "replica-1 .*rejoin .*took stage 1's state after the round at step 30 from replica 0" <<<"$show" ||
  fail "no rejoin event on the full replica: $show"
grep -q "replica-3.0 .*disconnect 3 at 12 rejoin 28: cut off; the pipeline trains on alone" <<<"$show" ||
  fail "no disconnect event on replica-3.0: $show"
same_everywhere pipe-mixed '^(train[.]loss|val[.]loss|round[.]stage.*|round[.]t_fixed_hash|bytes[.]outer[.]recovery[.].*)$' 1 200
grep -q "killed replica-1's process and started a fresh one, rejoining after the round at step 30" <<<"$("$tw" --db "$db" runs show "$(id_of pipe-mixed-local)")" ||
  fail "the full replica's process was not killed and restarted"
}

case_pipe_churn() {
section "seeded churn in a heterogeneous run (every replica but 0), twice on th"
# --- seeded churn in a heterogeneous run (every replica but 0), twice on threads and once in child
# processes, where every kill SIGKILLs and restarts the pipeline's processes: identical losses ------
# Every run of this case takes the product's default heartbeat timeout, 5 s: in child processes its
# schedule starts eight fresh processes mid-run, two at a time, and each loads LibTorch, its data and
# its model before it says a word to its peers, which on a machine busy with other tests can take
# longer than 2 s. The schedule, not silence, takes replicas out and brings them back here, so the
# timeout only moves the simulated clock (a loss is charged one timeout), alike on threads and in
# child processes.
pc=(--set outer.replicas=4 --set cluster.heartbeat_timeout_s=5 --set cluster.stages=2 --set pipeline.replicas=3
    --set pipeline.micro_batches=2 --set outer.algorithm=sparseloco --set pipeline.rank=8 --set train.steps=100
    --set run.threads=1 --set faults.churn.mtbf_steps=20 --set faults.churn.down_steps=10 --set faults.churn.seed=3)
run "${pc[@]}" --set run.name=pipe-churn-a > /dev/null || fail "pipeline churn run a failed"
run "${pc[@]}" --set run.name=pipe-churn-b > /dev/null || fail "pipeline churn run b failed"
a="$(figures pipe-churn-a '^(train[.]loss|val[.]loss|round[.]stage.*|round[.]t_fixed_hash)$' 1)"
[ "$(wc -l <<<"$a")" -gt 300 ] || fail "pipeline churn: too few rows"
[ "$a" = "$(figures pipe-churn-b '^(train[.]loss|val[.]loss|round[.]stage.*|round[.]t_fixed_hash)$' 1)" ] ||
  fail "pipeline churn runs differ"
[ "$("$tw" --db "$db" runs show "$(id_of pipe-churn-a)" | grep -c "rejoin .*took stage")" -ge 4 ] || fail "pipeline churn: too few rejoins"
run "${pc[@]}" --set run.name=pipe-churn-local --set cluster.mode=local > /dev/null || fail "pipeline churn in child processes failed"
[ "$a" = "$(figures pipe-churn-local '^(train[.]loss|val[.]loss|round[.]stage.*|round[.]t_fixed_hash)$' 1)" ] ||
  fail "pipeline churn in child processes differs from threads"
[ "$("$tw" --db "$db" runs show "$(id_of pipe-churn-local)" | grep -c "process and started a fresh one")" -ge 8 ] ||
  fail "pipeline churn in child processes: too few processes restarted"
}

case_pipe_deadline() {
section "a straggling pipeline past outer.round_deadline_s (heterogeneous Spars"
# --- a straggling pipeline past outer.round_deadline_s (heterogeneous SparseLoCo, rank 8): replica 2
# runs 4x slow from step 12, arrives more than 0.9 simulated s after the first at every round from
# 20 on (it never catches up: its clock stays behind), and is left out of each; replica 1's pipeline
# is on time. After each such round both its stage nodes hold replica 0's agreed stage states (the
# hashes they record after taking the state). Threads twice and child processes agree. ------------
pl=("${pipes[@]}" --set outer.algorithm=sparseloco --set pipeline.rank=8 --set train.steps=50 --set run.threads=1
    --set 'faults.events=["slow 2 at 12 until 25 x 4"]' --set outer.round_deadline_s=0.9)
three_ways pipe-late "pipeline deadline" "${three[@]}" "${pl[@]}"
c="$(csv pipe-late-a)"
[ -z "$(value "$c" replica-0 10 round.group_mask)$(value "$c" replica-2.0 10 round.late_s)" ] ||
  fail "pipeline deadline: the round at 10 is not among every replica"
for s in 20 30 40 50; do
  [ "$(value "$c" replica-0 $s round.group_mask | sort -u)" = "3" ] || fail "pipeline deadline: the round at $s is not among replicas 0 and 1"
  for n in replica-2.0 replica-2.1; do
    awk -v l="$(value "$c" $n $s round.late_s)" 'BEGIN {exit !(l > 0.9)}' ||
      fail "pipeline deadline: $n's lateness at $s is '$(value "$c" $n $s round.late_s)', not past 0.9 s"
  done
  for k in stage0:replica-2.0 stage1:replica-2.1; do
    h0="$(value "$c" replica-0 $s "round.${k%%:*}_hash")"
    [ -n "$h0" ] && [ "$h0" = "$(value "$c" "${k#*:}" $s "round.${k%%:*}_hash")" ] ||
      fail "pipeline deadline: after the round at $s ${k#*:} holds other ${k%%:*} state than replica 0"
  done
done
[ "$(rows "$c" replica-1.0 round.late_s)" -eq 0 ] || fail "pipeline deadline: the on-time pipeline was left out"
[ "$(rows "$c" replica-2.1 train.loss)" -eq 50 ] || fail "pipeline deadline: the late pipeline did not train on"
sent="$(value "$c" replica-0 50 bytes.outer.recovery.sent)"
recv=$(( $(value "$c" replica-2.0 50 bytes.outer.recovery.recv) + $(value "$c" replica-2.1 50 bytes.outer.recovery.recv) ))
[ -n "$sent" ] && [ "$sent" -eq "$recv" ] || fail "pipeline deadline recovery bytes: replica-0 sent '$sent', the late nodes received $recv"
grep -q "replica-0 .*late .*round at step 20: replica(s) 2 arrived more than 0.9 simulated s after the first" <<<"$("$tw" --db "$db" runs show "$(id_of pipe-late-a)")" ||
  fail "pipeline deadline: no late event"
same_everywhere pipe-late '^(train[.]loss|val[.]loss|round[.]stage.*|round[.]late_s|bytes[.]outer[.]recovery[.].*)$' 1 150
}

case_hetero_leave() {
section "a stage-0 node of a compressed pipeline killed for real (heterogeneous"
# --- a stage-0 node of a compressed pipeline killed for real (heterogeneous SparseLoCo, rank 8,
# AD1/AD2/AD6): the pipeline leaves as a whole, the others redo their stage rounds among replicas
# 0 and 1, and T_fixed stays alike on every node left (stage 0's holders compare it in their round,
# the other pipeline's stage 1 with its stage 0 after replaying the round among two members) --------
id="$(kill_mid_run hetero-leave 4 1000 "${hetero[@]}")"  # replica-2.0 (replica-0, 1.0, 1.1, 2.0, 2.1)
show="$("$tw" --db "$db" runs show "$id")"
grep -q "finished" <<<"$show" || fail "the compressed run with a lost stage node is not finished: $show"
grep -q "node-lost .*replica-2.0" <<<"$show" || fail "no node-lost event for replica-2.0: $show"
grep -q "replica 2 leaves the run as a whole" <<<"$show" || fail "no leave event from replica-2.1: $show"
grep -q "member-lost .*the round is redone among replicas 0, 1" <<<"$show" || fail "no round redone among 0, 1: $show"
c="$("$tw" --db "$db" runs export "$id" --format csv)"
for n in replica-0 replica-1.1; do
  [ "$(rows "$c" $n train.loss)" -eq 1000 ] || fail "$n did not finish its steps"
  [ "$(value "$c" $n 1000 round.group_mask | sort -u)" = "3" ] || fail "$n: the last round is not among replicas 0 and 1"
done
t0="$(value "$c" replica-0 1000 round.t_fixed_hash)"
[ -n "$t0" ] && [ "$t0" = "$(value "$c" replica-1.0 1000 round.t_fixed_hash)" ] &&
  [ "$t0" = "$(value "$c" replica-1.1 1000 round.t_fixed_hash)" ] ||
  fail "T_fixed after the last round differs: replica-0 $t0, replica-1.0 $(value "$c" replica-1.0 1000 round.t_fixed_hash), replica-1.1 $(value "$c" replica-1.1 1000 round.t_fixed_hash)"
h0="$(value "$c" replica-0 1000 round.stage1_hash)"; h1="$(value "$c" replica-1.1 1000 round.stage1_hash)"
[ -n "$h0" ] && [ "$h0" = "$h1" ] || fail "stage 1 after the last round: replica-0 $h0, replica-1.1 $h1"
}

case_hetero_restart() {
section "a compressed pipeline's stage node SIGKILLed and the pipeline restarted as a whole"
# --- the same kill with cluster.restart_lost: both of the pipeline's processes are started afresh,
# stage 0's holders admit it at a round boundary once they have heard both nodes are up, each stage
# node takes its stage's state (and T_fixed) from replica 0, and after its first round back it holds
# replica 0's stage weights and T_fixed; it trains every step from there. ---------------------------
id="$(kill_mid_run hetero-restart 4 1000 "${hetero[@]}" --set cluster.restart_lost=1)"  # replica-2.0
show="$("$tw" --db "$db" runs show "$id")"
grep -q "finished" <<<"$show" || fail "the run with a restarted pipeline is not finished: $show"
grep -q "replica-2.0 was lost; started a fresh process (restart 1 of 1)" <<<"$show" || fail "stage 0 was not restarted: $show"
grep -q "replica-2.1 leaves with its replica; started a fresh process" <<<"$show" || fail "stage 1 was not restarted: $show"
k="$(grep -o "took stage 0's state after the round at step [0-9]* from replica 0" <<<"$show" | grep -o "step [0-9]*" | grep -o "[0-9]*")"
[ -n "$k" ] || fail "the restarted pipeline's stage 0 took no state: $show"
grep -q "took stage 1's state after the round at step $k from replica 0" <<<"$show" ||
  fail "the restarted pipeline's stage 1 did not take the state after the round at $k: $show"
c="$("$tw" --db "$db" runs export "$id" --format csv)"
next=$((k + 10))
[ "$(value "$c" replica-0 "$k" round.group_mask | sort -u)" = "3" ] || fail "the round at $k is not among replicas 0 and 1"
[ -z "$(value "$c" replica-0 $next round.group_mask)" ] || fail "the round at $next is not among all three replicas"
for sn in 0:replica-2.0 1:replica-2.1; do
  h0="$(value "$c" replica-0 $next "round.stage${sn%%:*}_hash")"
  [ -n "$h0" ] && [ "$h0" = "$(value "$c" "${sn#*:}" $next "round.stage${sn%%:*}_hash")" ] ||
    fail "after its first round back (step $next) ${sn#*:} holds other stage ${sn%%:*} weights than replica 0"
done
t0="$(value "$c" replica-0 $next round.t_fixed_hash)"
for n in replica-1.0 replica-2.0 replica-2.1; do
  [ -n "$t0" ] && [ "$t0" = "$(value "$c" $n $next round.t_fixed_hash)" ] || fail "T_fixed at $next: replica-0 $t0, $n $(value "$c" $n $next round.t_fixed_hash)"
done
[ "$(awk -F, '$2 == "replica-2.1" && $7 == "train.loss" && $3 > '"$k"'' <<<"$c" | wc -l)" -eq $((1000 - k)) ] ||
  fail "the fresh pipeline did not train every step after $k"
sent="$(value "$c" replica-0 1000 bytes.outer.recovery.sent)"
recv=$(( $(value "$c" replica-2.0 1000 bytes.outer.recovery.recv) + $(value "$c" replica-2.1 1000 bytes.outer.recovery.recv) ))
[ -n "$sent" ] && [ "$sent" -eq "$recv" ] || fail "pipeline restart recovery bytes: replica-0 sent '$sent', the fresh nodes received $recv"
}

case_resume_pipe() {
section "a resumed run whose pipeline is then killed by the schedule in child processes"
# --- a resumed run whose replica is then killed by the schedule in child processes: the fresh
# processes are configured to rejoin a live run (not to load a checkpoint), a pipeline's number their
# stage rounds from the step the run resumed at (rejoin_origin_step), and the run ends with the
# figures of an uninterrupted run on threads. -----------------------------------------------------
resume_then_restart pipe-resume 5 "replica-2.0 replica-2.1" '^(train[.]loss|val[.]loss|round[.]stage.*|round[.]t_fixed_hash)$' \
  "${pipes[@]}" --set outer.algorithm=sparseloco --set pipeline.rank=8 "${ks[@]}"
}

case_resume_replica() {
section "a resumed run whose one-node replica is then killed by the schedule in child processes"
resume_then_restart one-resume 3 replica-2 '^(train[.]loss|val[.]loss|round[.]state_hash|bytes[.]outer[.]recovery[.].*)$' "${ks[@]}"
}

run_cases "$@"
echo "faults_test: ok (${ran_cases[*]})"
