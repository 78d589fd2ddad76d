#!/usr/bin/env bash
# Integration test of pipeline replicas through the CLI: a dense pipeline replica trains
# exactly like a full one, compressed boundaries send the formula's bytes, every holder of a stage
# holds the same θ_s after every round (full and pipeline replicas mixed, SparseLoCo per stage),
# NoLoCo routing, GPipe and the reparameterised constraint run, `thinwire sweep` records one run
# per grid point, and bad pipeline layouts are refused with the key named.
# Threads and `thinwire node` child processes alike. Micro model on a small text folder.
# Usage: pipeline_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"

micro_corpus "$work/corpus"
{ micro_tables "tie_embeddings = false" "data.corpus=\"$work/corpus\"" "data.cache_dir=\"$work/cache\"" train.eval_every=
  cat <<TOML
[outer]
algorithm = "sparseloco"
replicas = 2
inner_steps = 10
[network]
profile = "home-20m"
[cluster]
stages = 2
[pipeline]
replicas = 1
micro_batches = 2
TOML
} > "$work/micro.toml"
# Paths are under $work. A run that fails prints what it said on stderr too, so a test stopped by
# `set -e` inside a $(...) still shows why.
run() {
  local o rc=0
  o="$("$tw" --db "$db" run "$work/micro.toml" --data-root "$work" "$@" 2>&1)" || rc=$?
  printf '%s\n' "$o"
  [ "$rc" -eq 0 ] || printf 'run %s exited %s:\n%s\n' "$*" "$rc" "$o" >&2
  return "$rc"
}
col() { awk -v n="$1" -v c="$2" '$1 == n && NF == 10 {print $c}' <<<"$3"; }  # final table: node, column

# A dense pipeline replica (rank 0) is the full replica's training, split: same losses.
pipe="$(run --set run.name=dense-pipe)"
grep -q "finished" <<<"$pipe" || fail "dense pipeline did not finish: $pipe"
full="$(run --set cluster.stages=1 --set run.name=all-full)"
grep -q "finished" <<<"$full" || fail "full replicas did not finish: $full"
[ "$(col replica-1.1 3 "$pipe")" = "$(col replica-1 3 "$full")" ] || fail "dense pipeline loss differs: $pipe $full"
[ "$(col replica-0 4 "$pipe")" = "$(col replica-0 4 "$full")" ] || fail "val loss differs: $pipe $full"

# Rank 8, fp32 coordinates: per step stage 0 sends m forward payloads of b·T·(k·4 + 2) bytes (ids
# as uint16) and its squared gradient norm (8 bytes); stage 1 sends m of b·T·k·4 and 8. After each
# of the 2 rounds stage 0 also forwards the embedding's part of both replicas' SparseLoCo payloads
# (AD2: stage 1 replays the round to keep T_fixed), E bytes each: far less than the table (V·d·4).
out="$(run --set pipeline.rank=8 --set run.name=rank8)"
grep -q "finished" <<<"$out" || fail "rank-8 run did not finish: $out"
b=2 T=32 k=8 V=200 d=32
extra=$(( $(col replica-1.0 8 "$out") - 20 * (2 * b * T * (k * 4 + 2) + 8) ))
[ $((extra % 4)) -eq 0 ] && [ "$extra" -gt 0 ] && [ "$extra" -lt $((V * d * 4)) ] ||
    fail "stage 0 bytes beyond the activations ($extra) are not 2 rounds × 2 sparse embedding payloads: $out"
[ "$(col replica-1.1 8 "$out")" = "$((20 * (2 * b * T * k * 4 + 8)))" ] || fail "stage 1 bytes are not the formula's: $out"
id="$(sqlite3 "$db" "select max(id) from runs")"
# The same layout on `thinwire node` child processes (TCP loopback) trains identically.
local_out="$(run --set pipeline.rank=8 --set cluster.mode=local --set run.name=rank8-local)"
grep -q "finished" <<<"$local_out" || fail "rank-8 run on processes did not finish: $local_out"
[ "$(col replica-1.1 3 "$local_out")" = "$(col replica-1.1 3 "$out")" ] || fail "processes and threads differ: $local_out $out"
[ "$(col replica-1.0 8 "$local_out")" = "$(col replica-1.0 8 "$out")" ] || fail "stage bytes differ on processes: $local_out"
# Every holder of stage s reports the same hash of θ_s after every round.
bad="$(sqlite3 "$db" "select name, step, count(distinct value) from metrics where run_id = $id and name like 'round.stage%_hash' group by name, step having count(distinct value) != 1 or count(*) != 2")"
[ -z "$bad" ] || fail "holders of a stage disagree after a round: $bad"
bad="$(sqlite3 "$db" "select step from metrics where run_id = $id and name = 'round.t_fixed_hash' group by step having count(distinct value) != 1 or count(*) != 3")"
[ -z "$bad" ] || fail "nodes hold different frozen embeddings after a round: $bad"
rounds="$(sqlite3 "$db" "select count(distinct step) from metrics where run_id = $id and name = 'round.stage1_hash'")"
[ "$rounds" = 2 ] || fail "expected 2 rounds of stage hashes, got $rounds"

# Every replica a compressed pipeline with NoLoCo routing and GPipe, bf16 coordinates, all ADs.
out="$(run --set pipeline.replicas=-1 --set pipeline.rank=8 --set pipeline.routing=random --set pipeline.schedule=gpipe \
           --set pipeline.coord_dtype=bf16 --set 'pipeline.adaptations=["ad1","ad2","ad3","ad5","ad6"]' --set run.name=routed)"
grep -q "finished" <<<"$out" || fail "routed pipelines did not finish: $out"
[ "$(col replica-0.1 8 "$out")" = "$((20 * (2 * b * T * k * 2 + 8)))" ] || fail "bf16 backward bytes: $out"

# The reparameterised constraint (W = U·Z, Z trained) keeps every holder of a stage in step too.
out="$(run --set pipeline.rank=8 --set pipeline.constraint=reparam --set run.name=reparam)"
grep -q "finished" <<<"$out" || fail "reparam run did not finish: $out"
id="$(sqlite3 "$db" "select max(id) from runs")"
bad="$(sqlite3 "$db" "select name, step from metrics where run_id = $id and name like 'round.%hash' group by name, step having count(distinct value) != 1")"
[ -z "$bad" ] || fail "reparam: holders disagree after a round: $bad"

# NoLoCo per stage in groups of 2 among 4 replicas (two full, two compressed pipelines).
out="$(run --set outer.algorithm=noloco --set outer.replicas=4 --set outer.group_size=2 --set outer.momentum=0.5 \
           --set pipeline.replicas=2 --set pipeline.rank=8 --set run.name=noloco-groups)"
grep -q "finished" <<<"$out" || fail "noloco pipelines did not finish: $out"
# The per-stage rounds over the ring: DiLoCo (its default) with two full replicas and a
# compressed pipeline, each stage's three holders in a ring over the GroupCollective; NoLoCo's
# groups as rings. Every holder of a DiLoCo stage holds the same θ_s after every round.
out="$(run --set outer.algorithm=diloco --set outer.replicas=3 --set pipeline.rank=8 --set run.name=diloco-ring-stages)"
grep -q "finished" <<<"$out" || fail "diloco ring per stage did not finish: $out"
out="$(run --set outer.algorithm=noloco --set outer.replicas=4 --set outer.group_size=2 --set outer.momentum=0.5 \
           --set pipeline.replicas=2 --set pipeline.rank=8 --set outer.topology=ring --set run.name=noloco-ring-groups)"
grep -q "finished" <<<"$out" || fail "noloco ring groups did not finish: $out"
# (NoLoCo's groups hold different means by design; each group's agreement runs inside the round.)
id="$(sqlite3 "$db" "select id from runs where name = 'diloco-ring-stages'")"
bad="$(sqlite3 "$db" "select name, step from metrics where run_id = $id and name like 'round.%hash' group by name, step having count(distinct value) != 1")"
[ -z "$bad" ] || fail "diloco-ring-stages: holders disagree after a round: $bad"
for name in diloco-ring-stages noloco-ring-groups; do
  id="$(sqlite3 "$db" "select id from runs where name = '$name'")"
  hops="$(sqlite3 "$db" "select distinct cast(value as integer) from metrics where run_id = $id and name = 'round.hops'")"
  [ "$hops" = "$([ "$name" = diloco-ring-stages ] && echo 4 || echo 2)" ] || fail "$name: round.hops is $hops"
done

# Re-timing pipeline runs replays every stage node's segments and messages (and the full replicas'
# steps, the per-stage rounds, NoLoCo's groups, AD2's table): on the recorded network every node's
# clock after every round and at the end equals the recorded one bit for bit (%.17g round-trips a
# double); a faster network never gives a later clock, a slower one never an earlier one.
for name in dense-pipe rank8 rank8-local routed reparam noloco-groups diloco-ring-stages noloco-ring-groups; do
  id="$(sqlite3 "$db" "select id from runs where name = '$name'")"
  rt="$("$tw" --db "$db" runs retime "$id" --network home-20m --rounds)"
  awk 'NF == 4 && $1 ~ /^replica-/ && $4 !~ /%/ {n++; if ($3 != $4) bad = 1} END {exit (bad || n < 6)}' <<<"$rt" \
    || fail "$name: retime on the recorded network differs from the recorded clocks: $rt"
  fast="$("$tw" --db "$db" runs retime "$id" --network wan-1g)"
  slow="$("$tw" --db "$db" runs retime "$id" --network home-20m --outer-bandwidth-bps 1e6)"
  paste <(awk '$1 ~ /^replica-/ && NF == 4 {print $1, $2, $3}' <<<"$fast") \
        <(awk '$1 ~ /^replica-/ && NF == 4 {print $3}' <<<"$slow") |
    awk '{n++; if (!($3 <= $2 && $2 <= $4)) bad = 1} END {exit (bad || n < 2)}' ||
    fail "$name: wan-1g <= recorded (home-20m) <= 1 Mb/s outer does not hold: $fast $slow"
done

# `thinwire sweep`: a 2 × 2 grid records 4 runs in one group, each with its point's settings.
cat > "$work/sweep.toml" <<TOML
$(cat "$work/micro.toml")
[sweep]
"pipeline.rank" = [4, 8]
"outer.topk_k" = [32, 64]
TOML
out="$("$tw" --db "$db" sweep "$work/sweep.toml" --data-root "$work" --set train.steps=10 --set run.name=sw)"
grep -q "sweep: 4 points × 1 variant(s) = 4 runs" <<<"$out" || fail "sweep did not plan 4 runs: $out"
[ "$(sqlite3 "$db" "select count(*) from runs where name like 'sw-%' and status = 'finished'")" = 4 ] || fail "sweep did not record 4 finished runs"
[ "$(sqlite3 "$db" "select count(distinct group_name) from runs where name like 'sw-%'")" = 1 ] || fail "sweep runs are not one group"
for r in 4 8; do for k in 32 64; do
    cfg="$(sqlite3 "$db" "select config_toml from runs where name = 'sw-topk_k=$k,rank=$r'")"
    grep -q "^rank = $r$" <<<"$cfg" && grep -q "^topk_k = $k$" <<<"$cfg" || fail "sweep point rank=$r topk_k=$k has other settings"
done; done
err="$("$tw" --db "$db" sweep "$work/micro.toml" --data-root "$work" 2>&1 || true)"
grep -q "needs a \[sweep\] table" <<<"$err" || fail "sweep without [sweep] not refused: $err"

# Bad layouts name the key.
err="$(run --set model.tie_embeddings=true --set pipeline.micro_batches=3 2>&1 || true)"
grep -q "model.tie_embeddings must be false" <<<"$err" || fail "tied embeddings not refused: $err"
grep -q "batch_size 4 is not a multiple of pipeline.micro_batches 3" <<<"$err" || fail "micro-batches not refused: $err"
echo "pipeline_test: ok"
