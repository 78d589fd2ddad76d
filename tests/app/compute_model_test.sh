#!/usr/bin/env bash
# The compute model through the CLI: under [compute] model = "flops" a step's compute is its
# FLOPs over the node's rate, so the same layout run twice gives the same simulated clocks to the last
# bit, on threads and on `thinwire node` child processes alike (DiLoCo replicas, a compressed pipeline
# replica beside a full one, SkipPipe); a step's train.compute_s is the hand-counted FLOPs over the
# rate; a replica at node_speed 0.5 computes exactly twice as long; re-timing reproduces the clocks;
# bad [compute] values are refused naming the key. Micro model on a small text folder.
# Usage: compute_model_test.sh PATH_TO_THINWIRE [CASE...] (diloco, half_speed, pipeline, skippipe,
# refusals; all of them when none is named)
source "$(dirname "$0")/harness.sh"
shift

micro_corpus "$work/corpus"
source "$(dirname "$0")/flops_micro.sh"
flops_micro_layout 10
# Every record's node, step, outer step, name and simulated clock (%.17g: exact), sorted; and the
# values the compute model sets, which must not depend on the machine either.
clocks() {
  csv "$1" | awk -F, 'NR > 1 {print $2, $3, $4, $7, $6}
                      NR > 1 && ($7 == "train.compute_s" || $7 == "clock.compute_s" || $7 == "round.compute_s") {print $2, $3, $7, "value", $8}' \
    | sort
}
same_clocks() {  # run names a and b
  local a b
  a="$(clocks "$1")"; b="$(clocks "$2")"
  [ "$(wc -l <<<"$a")" -gt 40 ] || fail "$1: too few records to compare: $a"
  [ "$a" = "$b" ] || fail "$1 and $2 differ in simulated time: $(diff <(echo "$a") <(echo "$b") | head -20)"
}

case_diloco() {
# DiLoCo, 2 replicas: twice on threads, twice on child processes; all four alike.
for name in diloco-t1 diloco-t2; do
  out="$(run --set run.name=$name)"
  grep -q "finished" <<<"$out" || fail "$name did not finish: $out"
done
for name in diloco-p1 diloco-p2; do
  out="$(run --set run.name=$name --set cluster.mode=local)"
  grep -q "finished" <<<"$out" || fail "$name did not finish: $out"
done
same_clocks diloco-t1 diloco-t2
same_clocks diloco-p1 diloco-p2
same_clocks diloco-t1 diloco-p1

# The micro model (d 32, 2 layers, f 96, V 200, T 32, untied), a step of 4 × 32 = 128 tokens. Per token:
#   block forward  2·(4·32² + 3·96·32) + 4·32·32 = 2·(4,096 + 9,216) + 4,096 = 30,720; 2 blocks 61,440
#   head forward   2·32·200 + 4·200 = 13,600; forward 75,040
#   backward       2·(61,440 + 12,800) + 2·200 = 148,880
# 128 · 223,920 = 28,661,760, plus AdamW 18 · P, P = 2·6,400 + 2·13,376 + 32 = 39,584: 712,512.
# 29,374,272 FLOPs at 1e9 FLOP/s: 0.029374272 s per step, on every step of every node.
csv diloco-t1 | awk -F, '$7 == "train.compute_s" {n++; if (($8 - 0.029374272)^2 > 1e-24) bad = 1}
                         END {exit (bad || n != 40)}' \
  || fail "train.compute_s is not 29,374,272 FLOPs / 1e9 FLOP/s on every step: $(csv diloco-t1 | grep train.compute_s | head -3)"
grep -q ",train.real_compute_s," <<<"$(csv diloco-t1)" || fail "the measured compute seconds are not stored beside the modelled"
# train.compute_s sums to the node's compute clock: 20 steps.
show="$("$tw" --db "$db" runs show "$(id_of diloco-t1)")"
grep -q "finished" <<<"$show" || fail "diloco-t1 not finished: $show"

# Re-timing on the recorded network reproduces every recorded clock (printed with %.17g).
rt="$("$tw" --db "$db" runs retime "$(id_of diloco-t1)" --network home-20m --rounds)"
awk 'NF == 4 && $1 ~ /^replica-/ && $4 !~ /%/ {n++; if ($3 != $4) bad = 1} END {exit (bad || n < 4)}' <<<"$rt" \
  || fail "retime of a flops run differs from its recorded clocks: $rt"
}

case_half_speed() {
# Replica 1 at half speed: each of its steps takes exactly twice replica 0's, so does the total.
out="$(run --set run.name=half --set 'compute.node_speed=[1.0, 0.5]')"
grep -q "finished" <<<"$out" || fail "half-speed run did not finish: $out"
csv half | awk -F, '$7 == "train.compute_s" {v[$2 "," $3] = $8; t[$2] += $8}
                    END {n = 0; for (k in v) if (k ~ /^replica-0,/) {split(k, p, ","); n++; if (v["replica-1," p[2]] != 2 * v[k]) bad = 1}
                         exit (bad || n != 20 || t["replica-1"] != 2 * t["replica-0"])}' \
  || fail "replica 1 at node_speed 0.5 does not compute exactly twice as long: $(csv half | grep train.compute_s | head -4)"
# The fast replica waits for the slow one at every round.
csv half | awk -F, '$7 == "round.exposed_comm_s" && $2 == "replica-0" && $8 > 0 {n++} END {exit n < 2}' \
  || fail "the fast replica did not wait for the slow one"
}

case_pipeline() {
# A compressed pipeline replica (2 stages, rank 8) beside a full one, SparseLoCo per stage: every
# forward, backward and optimizer step of a stage node is modelled; twice alike, on threads and processes.
pipe=(--set cluster.stages=2 --set pipeline.replicas=1 --set pipeline.micro_batches=2 --set pipeline.rank=8
      --set outer.algorithm=sparseloco)
out="$(run "${pipe[@]}" --set run.name=pipe-t)"
grep -q "finished" <<<"$out" || fail "pipeline run did not finish: $out"
out="$(run "${pipe[@]}" --set run.name=pipe-p --set cluster.mode=local)"
grep -q "finished" <<<"$out" || fail "pipeline run on processes did not finish: $out"
same_clocks pipe-t pipe-p
# 2 micro-batches · 2 ops + the optimizer step = 5 segments per step per stage node.
[ "$(csv pipe-t | awk -F, '$7 == "clock.compute_s" && $2 ~ /^replica-1\./' | wc -l)" -eq $((2 * 20 * 5)) ] \
  || fail "stage nodes did not store 5 compute segments per step: $(csv pipe-t | awk -F, '$7 == "clock.compute_s"' | head -3)"
rt="$("$tw" --db "$db" runs retime "$(id_of pipe-t)" --network home-20m --rounds)"
awk 'NF == 4 && $1 ~ /^replica-/ && $4 !~ /%/ {n++; if ($3 != $4) bad = 1} END {exit (bad || n < 6)}' <<<"$rt" \
  || fail "retime of a flops pipeline run differs from its recorded clocks: $rt"
}

case_skippipe() {
# SkipPipe: the scheduler's stage times come from the model; twice alike.
skip=(--set outer.algorithm=none --set outer.replicas=1 --set skippipe.stages=2 --set skippipe.replicas=2
      --set skippipe.micro_batches=2 --set train.steps=6 --set train.eval_every=3 --set train.eval_batches=2)
for name in skip-1 skip-2; do
  out="$(run "${skip[@]}" --set run.name=$name)"
  grep -q "finished" <<<"$out" || fail "$name did not finish: $out"
done
same_clocks skip-1 skip-2
rt="$("$tw" --db "$db" runs retime "$(id_of skip-1)" --network home-20m --rounds)"
awk '$1 ~ /^replica-/ && $2 == "final" {n++; if ($3 != $4) bad = 1} END {exit (bad || n != 4)}' <<<"$rt" \
  || fail "retime of a flops SkipPipe run differs from its recorded clocks: $rt"
# One block forward per micro-batch of 2 × 32 tokens: 64 · 30,720 FLOPs at 1e9 FLOP/s.
csv skip-1 | awk -F, '$7 == "skippipe.block_fwd_s" {n++; if (($8 - 64 * 30720 / 1e9)^2 > 1e-24) bad = 1} END {exit (bad || n < 1)}' \
  || fail "SkipPipe's block time is not the model's: $(csv skip-1 | grep skippipe.block)"
}

case_refusals() {
# Bad values are refused before anything runs, naming the key.
set +e
err="$(run --set 'compute.node_speed=[1.0]' 2>&1)"; rc=$?
[ "$rc" -eq 1 ] && grep -q "compute.node_speed has 1 entries for 2 replicas" <<<"$err" || fail "short node_speed not refused ($rc): $err"
err="$(run --set compute.hardware=tpu 2>&1)"; rc=$?
[ "$rc" -eq 1 ] && grep -q "compute.hardware: unknown value \"tpu\"" <<<"$err" || fail "unknown hardware not refused ($rc): $err"
err="$(run --set compute.model=measured 2>&1)"; rc=$?
[ "$rc" -eq 1 ] && grep -q "compute.peak_flops applies only with compute.model = \"flops\"" <<<"$err" \
  || fail "flops-only keys under measured not refused ($rc): $err"
set -e
}

run_cases "$@"
echo "compute_model_test: ok (${ran_cases[*]})"
