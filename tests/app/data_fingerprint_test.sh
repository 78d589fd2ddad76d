#!/usr/bin/env bash
# The same data everywhere: two `thinwire node` processes with their own data roots
# (cluster.mode = "remote"). With the same corpus as the coordinator the run finishes, and every
# node's data hashes are stored with it. Then one document of node 1's corpus differs (its cache
# removed, so it prepares the data again): the run fails before any step, exit 1, naming
# replica-1 and what differs, and no train.loss is stored for it.
# Usage: data_fingerprint_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"
sql() { sqlite3 "$db" "$1"; }

# The coordinator's root and each node's hold their own copy of the same corpus.
for r in coord n0 n1; do micro_corpus "$work/$r/corpus"; done

pick_ports P0; pick_ports P1
start_loopback_node "$P0" "$work/n0" "$work/node0.log"
start_loopback_node "$P1" "$work/n1" "$work/node1.log"

{ printf '[run]\nthreads = 1\n'
  micro_tables "" train.eval_every=5 train.steps=10
  cat <<TOML
[outer]
replicas = 2
inner_steps = 5
algorithm = "diloco"
[cluster]
mode = "remote"
endpoints = ["tcp://127.0.0.1:$P0", "tcp://127.0.0.1:$P1"]
TOML
} > "$work/coord/micro.toml"
run() { (cd "$work" && "$tw" --db "$db" run "$work/coord/micro.toml" --data-root "$work/coord" "$@"); }

# Same corpus everywhere: the run finishes; the coordinator and both nodes stored the same hashes.
run --set run.name=same > "$work/same.out" 2>&1 || fail "the run on the same data failed: $(cat "$work/same.out")"
grep -q "finished" "$work/same.out" || fail "the run on the same data did not finish: $(cat "$work/same.out")"
id="$(sql "select id from runs where name = 'same'")"
[ "$(sql "select count(*) from metrics where run_id = $id and name = 'train.loss'")" -gt 0 ] \
  || fail "the run on the same data stored no train.loss"
hashes="$(sql "select node, text from events where run_id = $id and kind = 'data' order by node")"
[ "$(wc -l <<<"$hashes")" -eq 3 ] || fail "expected data events of the coordinator and both nodes: $hashes"
grep -Eq "^replica-1\|data tokenizer [0-9a-f]{16}, train [0-9a-f]{16}, val [0-9a-f]{16}$" <<<"$hashes" \
  || fail "replica-1's data event does not hold its hashes: $hashes"
[ "$(cut -d'|' -f2 <<<"$hashes" | sort -u | wc -l)" -eq 1 ] || fail "the hashes differ on the same data: $hashes"

# One document differs on node 1's machine.
sed -i '3s/the quick brown fox/the slow red fox/' "$work/n1/corpus/doc12.txt"
rm -rf "$work/n1/cache"
set +e
run --set run.name=differ > "$work/differ.out" 2>&1; rc=$?
set -e
[ "$rc" -ne 0 ] || fail "the run on differing data exited 0: $(cat "$work/differ.out")"
grep -q "failed" "$work/differ.out" || fail "the run on differing data was not reported failed: $(cat "$work/differ.out")"
grep -q "replica-1: its data differ from the coordinator's: .* here, .* at the coordinator" "$work/differ.out" \
  || fail "the failure does not name replica-1 and what differs: $(cat "$work/differ.out")"
id="$(sql "select id from runs where name = 'differ'")"
[ -n "$id" ] || fail "the failed run was not stored"
[ "$(sql "select status from runs where id = $id")" = failed ] || fail "the run's status is not failed"
sql "select reason from runs where id = $id" | grep -q "^replica-1: .*differ" \
  || fail "the stored reason does not name replica-1: $(sql "select reason from runs where id = $id")"
n="$(sql "select count(*) from metrics where run_id = $id and name = 'train.loss'")"
[ "$n" -eq 0 ] || fail "$n train.loss rows were stored: a step ran on differing data"
# Node 1's own hashes are stored with the run, and they are not the coordinator's.
mine="$(sql "select text from events where run_id = $id and kind = 'data' and node = 'replica-1'")"
ref="$(sql "select text from events where run_id = $id and kind = 'data' and node = 'coordinator'")"
[ -n "$mine" ] && [ -n "$ref" ] && [ "$mine" != "$ref" ] || fail "data events: replica-1 '$mine', coordinator '$ref'"
for i in 0 1; do kill -0 "${pids[$i]}" 2>/dev/null || fail "node $i died"; done
echo "data_fingerprint_test: ok"
