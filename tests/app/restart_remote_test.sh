#!/usr/bin/env bash
# A restarted node on a remote cluster (cluster.restart_lost, docs/faults.md "Restarted nodes"):
# three `thinwire node` processes the test starts itself run three one-node DiLoCo replicas; one
# node process is SIGKILLed mid-run and, a second later, started again on the same endpoint, as its
# operator would. The coordinator greets it again, the survivors admit it at a round boundary, the
# run finishes, and after its first round the restarted replica holds the others' global weights.
# Usage: restart_remote_test.sh PATH_TO_THINWIRE
set -euo pipefail
tw="$1"
work="$(mktemp -d)"
export THINWIRE_DATA_ROOT="$work"  # the default data root: never the user's own cache
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log; do [ -f "$f" ] && { echo "== $f" >&2; tail -5 "$f" >&2; }; done; exit 1; }
db="$work/runs.db"

source "$(dirname "$0")/micro_corpus.sh"
micro_corpus "$work/corpus"
source "$(dirname "$0")/ports.sh"
ports=()
for i in 0 1 2; do
  for _ in $(seq 1 20); do
    p="$(pick_base)"
    [[ " ${ports[*]} " == *" $p "* ]] || break
  done
  ports+=("$p")
  start_loopback_node "$p" "$work" "$work/node$i.log"
done

{ micro_tables; cat <<TOML
[outer]
replicas = 3
inner_steps = 10
algorithm = "diloco"
[network]
profile = "home-20m"
[cluster]
mode = "remote"
endpoints = ["tcp://127.0.0.1:${ports[0]}", "tcp://127.0.0.1:${ports[1]}", "tcp://127.0.0.1:${ports[2]}"]
heartbeat_timeout_s = 2
restart_lost = 1
TOML
} > "$work/micro.toml"

"$tw" --db "$db" run "$work/micro.toml" --data-root "$work" --set train.steps=1500 --set run.name=remote-restart \
  > "$work/run.log" 2>&1 &
sub=$!
stored() {  # train.loss rows of replica-1 stored so far
  /usr/bin/python3 -c "import sqlite3,sys
try: print(sqlite3.connect(sys.argv[1]).execute(\"select count(*) from metrics where node = 'replica-1' and name = 'train.loss'\").fetchone()[0])
except Exception: print(0)" "$db"
}
for _ in $(seq 1 600); do [ "$(stored)" -ge 20 ] && break; sleep 0.1; done
[ "$(stored)" -ge 20 ] || fail "the run never stored replica-1's steps: $(tail -5 "$work/run.log")"
kill -KILL "${pids[1]}"; wait "${pids[1]}" 2>/dev/null || true
sleep 1
start_loopback_node "${ports[1]}" "$work" "$work/node1-again.log"
set +e; wait "$sub"; rc=$?; set -e
[ "$rc" -eq 0 ] || fail "the run exited $rc: $(tail -20 "$work/run.log")"

id="$("$tw" --db "$db" runs list | awk '$2 == "remote-restart" {print $1}')"
show="$("$tw" --db "$db" runs show "$id")"
grep -q "finished" <<<"$show" || fail "the run is not finished: $show"
grep -q "replica-1 was lost and answers again at tcp://127.0.0.1:${ports[1]} (restart 1 of 1)" <<<"$show" ||
  fail "the coordinator did not take the restarted node back: $show"
k="$(grep -o "took the state after the round at step [0-9]* from replica 0" <<<"$show" | grep -o "step [0-9]*" | grep -o "[0-9]*")"
[ -n "$k" ] || fail "the restarted replica took no state: $show"
c="$("$tw" --db "$db" runs export "$id" --format csv)"
value() { awk -F, -v n="$1" -v s="$2" -v m="$3" '$2 == n && $3 == s && $7 == m {print $8}' <<<"$c"; }
h0="$(value replica-0 $((k + 10)) round.state_hash)"
for n in replica-1 replica-2; do
  [ -n "$h0" ] && [ "$h0" = "$(value $n $((k + 10)) round.state_hash)" ] ||
    fail "after its first round (step $((k + 10))) $n holds '$(value $n $((k + 10)) round.state_hash)', replica-0 '$h0'"
done
[ -z "$(value replica-0 $((k + 10)) round.group_mask)" ] || fail "the round after the rejoin is not among all three replicas"
[ "$(value replica-0 1500 round.members)" = "" ] || fail "the last round does not count every replica"
echo "restart_remote_test: ok (rejoined after the round at step $k)"
