#!/usr/bin/env bash
# SkipPipe as a node run through the CLI: `thinwire run` of a [skippipe] layout on thread
# nodes and on child processes gives the same losses and bytes to the last digit, the stage-sync bytes
# are (N − 1)·4·P_s per step, the full-pipeline variant is a config setting, `runs retime` on the
# recorded network reproduces every node's recorded clock, the `skippipe` alias runs the same path,
# and a bad [skippipe] key is refused with the key named. Micro model on a small text folder.
# Usage: skippipe_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"

micro_corpus "$work/corpus"
{ printf '[run]\nname = "skippipe"\n'
  micro_tables "" model.n_layer=3 train.steps=8 train.eval_every=4 train.eval_batches=2
  cat <<TOML
[network]
profile = "home-20m"
[skippipe]
stages = 3
replicas = 2
micro_batches = 2
path_stages = 2
max_swaps = 1
block_s = [1e-3, 2e-3]
head_s = [2e-3, 3e-3]
TOML
} > "$work/skip.toml"
run() {
  local o rc=0
  o="$(cd "$work" && "$tw" --db "$db" "$@" 2>&1)" || rc=$?
  printf '%s\n' "$o"
  [ "$rc" -eq 0 ] || printf '%s exited %s:\n%s\n' "$*" "$rc" "$o" >&2
  return "$rc"
}
col() { awk -v n="$1" -v c="$2" '$1 == n && NF == 10 {print $c}' <<<"$3"; }  # final table: node, column

threads="$(run run skip.toml)"
grep -q "finished" <<<"$threads" || fail "threads run did not finish: $threads"
grep -q "SkipPipe: mean iteration" <<<"$threads" || fail "no SkipPipe summary: $threads"
grep -q "val.loss.path_0_2" <<<"$threads" || fail "no partial-model loss: $threads"
# The stages of node 0 are assembled into the whole model, kept with the run.
grep -q "final model (from replica-0.0, replica-0.1, replica-0.2) kept" <<<"$threads" || fail "no whole model kept: $threads"
local_run="$(run run skip.toml --set cluster.mode=local)"
grep -q "finished" <<<"$local_run" || fail "child-process run did not finish: $local_run"
for n in replica-0.0 replica-1.0 replica-0.1 replica-1.2; do
  for c in 3 4 7 8 9; do  # train loss, val loss, intra and stage bytes, simulated time
    [ "$(col $n $c "$threads")" = "$(col $n $c "$local_run")" ] ||
      fail "$n column $c differs between threads and child processes: $(col $n $c "$threads") vs $(col $n $c "$local_run")"
  done
done
# Stage sync: every holder of a visited stage sends (N − 1)·4·P_s bytes per step; with L = 2 of 3
# stage 0 is visited every step. P_0 = 200·32 (tied embedding) + 32 (final norm) + one block
# (2·32 + 4·32² + 3·96·32 = 13376): 19808 → 8 steps × 4 × 19808 = 633856.
[ "$(col replica-0.0 7 "$threads")" = "633856" ] || fail "stage-0 sync bytes $(col replica-0.0 7 "$threads"), expected 633856"

# The full-pipeline baseline is a setting (and the alias's --full): every path visits all stages.
full="$(run skippipe skip.toml --full)"
grep -q '"skippipe-full"' <<<"$full" || fail "the alias's --full run is not named skippipe-full: $full"
grep -q "trained on: " <<<"$full" || fail "no summary for the full run: $full"
ratio_full="$(sed -n 's/.*full pipeline \([0-9.]*\) s.*/\1/p' <<<"$full")"
trained_full="$(sed -n 's/.*trained on: \([0-9.]*\) s.*/\1/p' <<<"$full")"
[ "$ratio_full" = "$trained_full" ] || fail "the full run did not train on the full pipeline's schedule: $trained_full vs $ratio_full"

# Re-timing on the recorded network reproduces every node's recorded clock (the schedules replayed).
for id in 1 2; do
  # --rounds prints every node's final clock at full precision (%.17g): recorded, then re-timed.
  rt="$(run runs retime $id --network home-20m --rounds)"
  grep -q "SkipPipe" <<<"$rt" || fail "retime of run $id is not the SkipPipe replay: $rt"
  n=$(awk '$1 ~ /^replica-/ && $2 == "final"' <<<"$rt" | wc -l)
  [ "$n" -eq 6 ] || fail "retime of run $id lists $n nodes: $rt"
  awk '$1 ~ /^replica-/ && $2 == "final" && $3 != $4 {bad = 1} END {exit bad}' <<<"$rt" ||
    fail "retimed clocks differ from the recorded ones: $rt"
  other="$(run runs retime $id --network datacenter --rounds)"
  awk '$1 == "replica-0.0" && $2 == "final" && $3 != $4 {changed = 1} END {exit !changed}' <<<"$other" ||
    fail "another network re-times to the same clock: $other"
done

# Errors name the key; the alias refuses a layout without [skippipe].
bad="$(cd "$work" && "$tw" --db "$db" run skip.toml --set skippipe.path_stages=5 2>&1)" && fail "path_stages 5 of 3 accepted"
grep -q "skippipe.path_stages 5 exceeds stages 3" <<<"$bad" || fail "error does not name the key: $bad"
bad="$(cd "$work" && "$tw" --db "$db" run skip.toml --set skippipe.block_s=[1] 2>&1)" && fail "block_s of one entry accepted"
grep -q "skippipe.block_s" <<<"$bad" || fail "error does not name skippipe.block_s: $bad"
bad="$(cd "$work" && "$tw" --db "$db" skippipe skip.toml --set skippipe.stages=0 2>&1)" && fail "alias ran a non-SkipPipe layout"
grep -q "not a SkipPipe layout" <<<"$bad" || fail "alias error: $bad"
echo "skippipe CLI test passed"
