#!/usr/bin/env bash
# Rounds among the survivors over the hub (outer.topology = "hub", docs/faults.md), through the CLI:
# a scheduled kill with rejoin on threads. The relay runs the rounds at 20 and 30 among replicas 0
# and 1 only (each round names its members), the replica that comes back takes the state from
# replica 0 and, after its first round, holds the same global weights as the others (the agreed
# state's hash, recorded on every replica). Then a replica child process SIGKILLed mid-run: the
# survivors find it lost (while waiting for the relay or on the data plane), redo the round among
# themselves through the relay, and the run finishes. A spare takes a lost replica's place over the
# relay, whose members are the replicas and the spares. SparseLoCo (the hub relays sparse payloads
# only; DiLoCo all-reduces) on the micro model under the flops clock (flops_micro.sh).
# Usage: hub_faults_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"

micro_corpus "$work/corpus"
source "$(dirname "$0")/flops_micro.sh"
flops_micro_layout 10
hub=(--set outer.algorithm=sparseloco --set outer.topology=hub --set outer.replicas=3
     --set cluster.heartbeat_timeout_s=2 --set train.steps=40)
# metric NAME of node NODE at step STEP in run RUN (csv: run,node,step,outer,wall,sim,name,value).
value() { awk -F, -v n="$2" -v s="$3" -v m="$4" '$2 == n && $3 == s && $7 == m {print $8}' <<<"$1"; }
rows() { awk -F, -v n="$2" -v m="$3" '$2 == n && $7 == m' <<<"$1" | wc -l; }

out="$(run "${hub[@]}" --set run.name=hub-rejoin --set 'faults.events=["kill 2 at 15 rejoin 25"]')" ||
  fail "the hub run with a kill and a rejoin failed: $out"
grep -q "finished" <<<"$out" || fail "the hub run did not finish: $out"
c="$(csv hub-rejoin)"
# Replica 2 trains steps 1..15, is away for the rounds at 20 and 30, and trains 31..40 again.
[ "$(rows "$c" replica-2 train.loss)" -eq 25 ] || fail "replica-2 trained $(rows "$c" replica-2 train.loss) steps, not 25"
[ "$(rows "$c" replica-0 train.loss)" -eq 40 ] || fail "replica-0 did not train every step"
for s in 20 30; do
  for n in replica-0 replica-1; do
    [ "$(value "$c" $n $s round.group_mask)" = "3" ] || fail "round at $s: $n's group mask is '$(value "$c" $n $s round.group_mask)', want 3 (replicas 0, 1)"
    [ "$(value "$c" $n $s round.members)" = "2" ] || fail "round at $s: $n counts '$(value "$c" $n $s round.members)' members, want 2"
  done
  # Through the relay, a round of 2: one payload up, one down (the bytes are those two members').
  [ "$(value "$c" replica-0 $s round.hops)" = "2" ] || fail "round at $s did not go through the relay"
done
[ -z "$(value "$c" replica-0 40 round.group_mask)" ] || fail "the round at 40 is not among every replica"
h0="$(value "$c" replica-0 40 round.state_hash)"; h1="$(value "$c" replica-1 40 round.state_hash)"
h2="$(value "$c" replica-2 40 round.state_hash)"
[ -n "$h0" ] && [ "$h0" = "$h2" ] && [ "$h0" = "$h1" ] ||
  fail "after its first round the joiner's global weights differ: $h0 / $h1 / $h2"
sent="$(value "$c" replica-0 40 bytes.outer.recovery.sent)"; recv="$(value "$c" replica-2 40 bytes.outer.recovery.recv)"
[ -n "$sent" ] && [ "$sent" = "$recv" ] || fail "recovery bytes: replica-0 sent '$sent', replica-2 received '$recv'"
show="$("$tw" --db "$db" runs show "$(id_of hub-rejoin)")"
grep -q "kill 2 at 15 rejoin 25: the worker stops" <<<"$show" || fail "no fault event: $show"
grep -q "took the state after the round at step 30 from replica 0" <<<"$show" || fail "no rejoin event: $show"
grep -q "hub relay: received" <<<"$show" || fail "no relay event: $show"

# --- a spare takes the place of a replica killed for good, through the relay ---------------------
# The relay's members are the replicas and the spares (mesh ranks 0..2 and 3): the round at 20 is
# among replicas 0 and 1; spare-0 then takes replica 2's place and uploads under its own rank.
out="$(run "${hub[@]}" --set cluster.spares=1 --set run.name=hub-spare --set 'faults.events=["kill 2 at 15"]')" ||
  fail "the hub run with a spare failed: $out"
c="$(csv hub-spare)"
[ "$(value "$c" replica-0 20 round.group_mask)" = "3" ] || fail "hub spare: the round at 20 is not among replicas 0, 1"
[ "$(rows "$c" spare-0 train.loss)" -eq 20 ] || fail "spare-0 trained $(rows "$c" spare-0 train.loss) steps, not 20"
for s in 30 40; do
  [ -z "$(value "$c" replica-0 $s round.group_mask)" ] || fail "hub spare: the round at $s is not among three places"
done
h0="$(value "$c" replica-0 30 round.state_hash)"; hs="$(value "$c" spare-0 30 round.state_hash)"
[ -n "$h0" ] && [ "$h0" = "$hs" ] || fail "hub spare: after its first round the spare's global weights differ: $h0 / $hs"
show="$("$tw" --db "$db" runs show "$(id_of hub-spare)")"
grep -q "spare-0 takes replica 2's place" <<<"$show" || fail "hub spare: no spare event: $show"
grep -q "hub relay: .* refused 0" <<<"$show" || fail "hub spare: the relay refused requests: $show"

# --- a replica process killed for real --------------------------------------------------------------
(cd "$work" && "$tw" --db "$db" run micro.toml "${hub[@]}" --set cluster.mode=local --set train.steps=3000 \
   --set run.name=hub-sigkill > "$work/sigkill.log" 2>&1) &
sub=$!
id="$(wait_rows hub-sigkill 100)" || fail "the run to kill never stored metrics: $(cat "$work/sigkill.log")"
coord="$(pgrep -P "$sub" -f "run micro.toml" || echo "$sub")"
victim="$(pgrep -P "$coord" | tail -1)"
[ -n "$victim" ] || fail "no node process to kill"
kill -KILL "$victim"
set +e; wait "$sub"; rc=$?; set -e
[ "$rc" -eq 0 ] || fail "the hub run with a killed replica exited $rc: $(tail -20 "$work/sigkill.log")"
show="$("$tw" --db "$db" runs show "$id")"
grep -q "finished" <<<"$show" || fail "the hub run with a killed replica is not finished: $show"
grep -q "the round is redone among replicas 0, 1" <<<"$show" || fail "no member-lost event: $show"
grep -q "hub relay: received .* refused 0" <<<"$show" || fail "the relay refused a request: $show"
c="$("$tw" --db "$db" runs export "$id" --format csv)"
[ "$(rows "$c" replica-0 train.loss)" -eq 3000 ] || fail "replica-0 did not finish its steps"
[ "$(awk -F, '$2 == "replica-0" && $7 == "round.members" && $8 == 2' <<<"$c" | wc -l)" -ge 1 ] ||
  fail "no round counted two members after the kill"
awk -F, '$2 == "replica-0" && $7 == "round.group_mask" && $8 != 3 {bad = 1} END {exit bad}' <<<"$c" ||
  fail "a round after the kill is not among replicas 0 and 1"
echo "hub_faults_test: ok"
