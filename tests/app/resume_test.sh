#!/usr/bin/env bash
# coordinator restarts and resume, through the CLI. For each algorithm a micro run on
# threads with train.ckpt_every is SIGKILLed (coordinator and nodes with it) once every node has a
# checkpoint; `runs list` must call it interrupted; `run --resume` must finish it as the same run,
# with per-step train.loss, val.loss and simulated clocks equal to an uninterrupted run of the same
# layout to the last bit, and no (node, step, metric) stored more often than uninterrupted. Then SIGTERM (a clean stop,
# interrupted, checkpoint where it stopped) and the resume's refusals (changed key, --force,
# finished run, no checkpoint). Pipeline runs too: one replica of 2 stages with dense boundaries
# (pipe), of 3 stages under GPipe with compressed boundaries (pipe3), and heterogeneous runs of a
# full replica and a compressed 2-stage pipeline replica under SparseLoCo (its later stage replays
# stage 0's rounds to follow T_fixed) and DiLoCo (stage 0 sends T_fixed), with the AD defaults, and
# under DiLoCo with the `reparam` constraint (the stage's AdamW steps Z); and
# SkipPipe (3 stages × 2 replicas, paths of 2 stages, a partial-model validation path); and a
# DiLoCo run of 3 replicas with a [faults] schedule (faults): the first checkpoint every node holds
# comes after replica 1's kill and rejoin, and the resumed run replays replica 2's kill and
# rejoin, its recovery bytes and the heartbeat wait the survivors' clocks pay for it; and the same
# with a spare (spares): replica 2 killed for good at 85, the spare takes its place at 90 and writes
# checkpoints; the resume goes back to the latest step every replica wrote before that (80), the
# spare stands by again, and the kill and the takeover replay to the uninterrupted rows.
# Usage: resume_test.sh PATH_TO_THINWIRE [CASE...]: a kill and resume of an algorithm (ddp, diloco,
# sparseloco, streaming_diloco, noloco, demo, none) or of pipe, pipe3, hetero_sparseloco,
# hetero_diloco, reparam_diloco, skippipe, faults, spares; stage_files (another stage's and a
# truncated stage file), sigterm_pipe, sigterm (with the refusals of a changed key and of a finished
# run), force, no_checkpoint. Every case in that order when none is named.
source "$(dirname "$0")/harness.sh"
shift

micro_corpus "$work/corpus"
# The micro model under the flops clock (simulated times are a function of the layout), run.threads
# = 1 per node; long enough to be killed mid-run, checkpoints every 40 steps.
layout() {  # case → $work/micro.toml
  local algo="$1" replicas=2 extra="" steps=600 cluster="" pipeline="" layers=2 more=""
  [ "$1" = none ] && replicas=1
  [ "$1" = streaming_diloco ] && extra="fragments = 2"  # at most one per layer; overlap τ = 1 by default
  case "$1" in
    pipe) algo=none replicas=1 steps=300 cluster="stages = 2" pipeline="micro_batches = 2" ;;
    pipe3) algo=none replicas=1 steps=300 cluster="stages = 3" layers=3  # a stage holds a block at least
      pipeline=$'micro_batches = 2\nschedule = "gpipe"\nrank = 8' ;;
    hetero_*) algo="${1#hetero_}" steps=300 cluster="stages = 2"
      pipeline=$'replicas = 1\nrank = 8\nmicro_batches = 2\nschedule = "1f1b"' ;;
    reparam_diloco) algo=diloco steps=300 cluster="stages = 2"  # Z, not W, is what the stage's AdamW steps
      pipeline=$'replicas = 1\nrank = 8\nmicro_batches = 2\nconstraint = "reparam"' ;;
    spares) algo=diloco replicas=3 steps=400  # replica 2 killed for good, the spare takes its place at 90
      cluster="spares = 1"
      more=$'[faults]\nevents = ["kill 2 at 85"]' ;;
    faults) algo=diloco replicas=3 steps=400  # a scheduled kill with rejoin, a slow and a paused replica
      more=$'[faults]\nevents = ["kill 1 at 25 rejoin 55", "slow 2 at 70 until 90 x 2", "kill 2 at 85 rejoin 115", "pause 0 at 125 until 130"]' ;;
    skippipe) algo=none replicas=1 steps=300 layers=3  # SkipPipe places its own 3 × 2 nodes
      more=$'[skippipe]\nstages = 3\nreplicas = 2\nmicro_batches = 2\npath_stages = 2\nmax_swaps = 1\neval_paths = [[0, 2]]' ;;
  esac
  { micro_tables "tie_embeddings = false" train.steps="$steps" train.ckpt_every=40 model.n_layer="$layers"; cat <<TOML; } > "$work/micro.toml"
[outer]
algorithm = "$algo"
replicas = $replicas
inner_steps = 10
$extra
[network]
profile = "home-20m"
[compute]
model = "flops"
hardware = "custom"
peak_flops = 1e9
[cluster]
mode = "threads"
$cluster
[pipeline]
$pipeline
[run]
threads = 1
$more
TOML
}
tw_run() { (cd "$work" && "$tw" --db "$1" "${@:2}"); }
# Rows of run $2 in database $1 as text: "node step name value sim_s" for the metrics compared.
rows() {
  "$py" - "$1" "$2" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for r in c.execute("SELECT node, step, name, value, sim_s FROM metrics WHERE run_id = ? AND name IN "
                   "('train.loss', 'val.loss', 'round.bytes', 'val.loss.path_0_2', 'bytes.outer.recovery.sent', "
                   "'bytes.outer.recovery.recv') ORDER BY node, name, step", (int(sys.argv[2]),)):
    print(*(repr(x) for x in r))
PY
}
counts() {  # database, run → "node step name count" of every (node, step, name) stored more than once
  "$py" -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print(*r) for r in c.execute('SELECT node, step, name, COUNT(*) \
FROM metrics WHERE run_id = ? GROUP BY node, step, name HAVING COUNT(*) > 1 ORDER BY node, step, name', (int(sys.argv[2]),))]" "$1" "$2"
}
complete_ckpt() {  # database, run → the latest step every node checkpointed ("" while none); spares:
  # every other node, and no spare (before a spare took a place: they stand by again on a resume)
  "$py" -c "import sqlite3,sys
try:
    c=sqlite3.connect(sys.argv[1]); r=c.execute('SELECT step FROM metrics WHERE run_id = ? AND name = \"ckpt.bytes\" GROUP BY step \
HAVING COUNT(DISTINCT node) = (SELECT COUNT(*) FROM run_nodes WHERE run_id = ? AND node NOT LIKE \"spare-%\") \
AND SUM(node LIKE \"spare-%\") = 0 ORDER BY step DESC', (int(sys.argv[2]),)*2).fetchone()
    print(r[0] if r else '')
except sqlite3.Error: print('')" "$1" "$2"
}
spare_ckpt() {  # database, run → whether a spare has written a checkpoint (it holds a place)
  "$py" -c "import sqlite3,sys
try: print(sqlite3.connect(sys.argv[1]).execute('SELECT COUNT(*) FROM metrics WHERE run_id = ? AND name = \"ckpt.bytes\" AND node LIKE \"spare-%\"', (int(sys.argv[2]),)).fetchone()[0])
except sqlite3.Error: print(0)" "$1" "$2"
}
status_of() { tw_run "$1" runs list | awk -v id="$2" '$1 == id {print $3}'; }

# A run of layout ALGO SIGKILLed once every node has a checkpoint, resumed to the uninterrupted rows.
kill_and_resume() {
  local algo="$1"
  layout "$algo"
  ref="$work/ref-$algo.db" db="$work/kill-$algo.db"
  # The uninterrupted reference (it also prepares the data, so the killed run starts training at once).
  tw_run "$ref" run micro.toml >"$work/ref.log" 2>&1 || fail "$algo: the reference run failed: $(tail -3 "$work/ref.log")"
  [ "$(status_of "$ref" 1)" = finished ] || fail "$algo: the reference run did not finish"
  (cd "$work" && exec "$tw" --db "$db" run micro.toml >"$work/kill.log" 2>&1) &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 1 600); do
    # spares: once the spare holds replica 2's place and has checkpointed, so the resume must go back
    # past its files to the latest step every replica wrote (80), and replay the kill and the takeover.
    [ -n "$(complete_ckpt "$db" 1)" ] && { [ "$algo" != spares ] || [ "$(spare_ckpt "$db" 1)" -gt 0 ]; } && break
    kill -0 "$pid" 2>/dev/null || fail "$algo: the run ended before any checkpoint: $(tail -3 "$work/kill.log")"
    sleep 0.05
  done
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null || true
  at="$(complete_ckpt "$db" 1)"
  [ -n "$at" ] || fail "$algo: no checkpoint before the kill"
  last="$(tw_run "$db" runs list | awk '$1 == 1 {print $5}')"
  total="$(sed -n 's/^steps = //p' "$work/micro.toml")"
  [ "$last" -lt "$total" ] || fail "$algo: the run finished before it was killed (step $last)"
  [ "$(status_of "$db" 1)" = interrupted ] || fail "$algo: a killed run is not shown interrupted: $(tw_run "$db" runs list)"
  out="$(tw_run "$db" runs show 1)"
  grep -q "interrupted: coordinator gone (process" <<<"$out" || fail "$algo: runs show does not say the coordinator is gone: $out"
  out="$(tw_run "$db" run --resume 1 2>&1)" || fail "$algo: resume failed: $out"
  grep -q "run 1 resumes at step $at" <<<"$out" || fail "$algo: resume did not start at the checkpoint of step $at: $out"
  grep -q "run 1 finished" <<<"$out" || fail "$algo: the resumed run did not finish: $out"
  [ "$(status_of "$db" 1)" = finished ] || fail "$algo: the resumed run is not stored finished"
  # Stage nodes record a row per compute segment and message (clock.*): as many as uninterrupted.
  [ "$(counts "$db" 1)" = "$(counts "$ref" 1)" ] || fail "$algo: the resumed run stored a (node, step, metric) twice: \
$(diff <(counts "$ref" 1) <(counts "$db" 1) | head -60)"
  want="$(rows "$ref" 1)" got="$(rows "$db" 1)"
  [ -n "$want" ] && [ "$want" = "$got" ] ||
    fail "$algo: resumed (from step $at of $last) differs from uninterrupted: $(diff <(echo "$want") <(echo "$got") | head -60)"
  echo "ok: $algo killed at step $last, resumed from $at, $(wc -l <<<"$got") rows equal to the uninterrupted run"
}
case_ddp() { kill_and_resume ddp; }
case_diloco() { kill_and_resume diloco; }
case_sparseloco() { kill_and_resume sparseloco; }
case_streaming_diloco() { kill_and_resume streaming_diloco; }
case_noloco() { kill_and_resume noloco; }
case_demo() { kill_and_resume demo; }
case_none() { kill_and_resume none; }
case_pipe() { kill_and_resume pipe; }
case_pipe3() { kill_and_resume pipe3; }
case_hetero_sparseloco() { kill_and_resume hetero_sparseloco; }
case_hetero_diloco() { kill_and_resume hetero_diloco; }
case_reparam_diloco() { kill_and_resume reparam_diloco; }
case_skippipe() { kill_and_resume skippipe; }
case_faults() { kill_and_resume faults; }
case_spares() { kill_and_resume spares; }

# A stage node's file is untrusted: another stage's or a truncated one fails the resume with a named
# error and nothing stored is lost; the files put back, the same run resumes to the uninterrupted rows.
case_stage_files() {
layout pipe
ref="$work/ref-pipe.db" db="$work/swap.db"
[ -f "$ref" ] || tw_run "$ref" run micro.toml >"$work/ref.log" 2>&1 || fail "swap: the reference run failed"
(cd "$work" && exec "$tw" --db "$db" run micro.toml >"$work/swap.log" 2>&1) &
pid=$!
pids+=("$pid")
for _ in $(seq 1 600); do
  [ -n "$(complete_ckpt "$db" 1)" ] && break
  sleep 0.05
done
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
at="$(complete_ckpt "$db" 1)"
[ -n "$at" ] || fail "swap: no checkpoint before the kill"
dir="$(ls -td "$work"/cache/checkpoints/run-1-* | head -1)"  # the newest run 1's: this one's
s0="$dir/replica-0.0.step-$at.ckpt" s1="$dir/replica-0.1.step-$at.ckpt"
[ -f "$s0" ] && [ -f "$s1" ] || fail "swap: no stage files of step $at in $dir"
cp "$s0" "$work/s0" && cp "$s1" "$work/s1"
cp "$work/s1" "$s0" && cp "$work/s0" "$s1"  # each stage node finds the other's file
out="$(tw_run "$db" run --resume 1 2>&1)" && fail "swap: a resume from the other stage's files was accepted"
grep -Eq "replica-0\.[01]\.step-$at\.ckpt does not fit this model" <<<"$out" || fail "swap: no named error: $out"
[ "$(status_of "$db" 1)" = failed ] || fail "swap: the refused resume left the run $(status_of "$db" 1)"
cp "$work/s0" "$s0" && head -c $(($(stat -c %s "$work/s1") / 2)) "$work/s1" >"$s1"
out="$(tw_run "$db" run --resume 1 2>&1)" && fail "swap: a resume from a truncated file was accepted"
grep -q "replica-0.1.step-$at.ckpt is truncated" <<<"$out" || fail "swap: no named error for a truncated file: $out"
cp "$work/s1" "$s1"
out="$(tw_run "$db" run --resume 1 2>&1)" || fail "swap: the files put back, resume failed: $out"
grep -q "run 1 resumes at step $at" <<<"$out" && grep -q "run 1 finished" <<<"$out" || fail "swap: $out"
[ "$(rows "$ref" 1)" = "$(rows "$db" 1)" ] || fail "swap: resumed after the refusals, the rows differ from the uninterrupted run"
echo "ok: another stage's and a truncated stage file refused by name; put back, run resumed from $at equal to uninterrupted"
}

# SIGTERM of a pipeline run: interrupted; the stage nodes between steps checkpoint where they stopped,
# one waiting for its peer does not, and the run resumes from the latest step both wrote.
case_sigterm_pipe() {
layout pipe
ref="$work/ref-pipe.db"
[ -f "$ref" ] || tw_run "$ref" run micro.toml >"$work/ref.log" 2>&1 || fail "pipeline SIGTERM: the reference run failed"
db="$work/term-pipe.db"
(cd "$work" && exec "$tw" --db "$db" run micro.toml >"$work/term-pipe.log" 2>&1) &
pid=$!
pids+=("$pid")
for _ in $(seq 1 600); do
  [ -n "$(complete_ckpt "$db" 1)" ] && break
  sleep 0.05
done
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 130 ] || fail "pipeline SIGTERM: exit code $rc, not 130: $(tail -3 "$work/term-pipe.log")"
[ "$(status_of "$db" 1)" = interrupted ] || fail "pipeline SIGTERM: the run is not stored interrupted"
at="$(complete_ckpt "$db" 1)"
out="$(tw_run "$db" run --resume 1 2>&1)" || fail "pipeline SIGTERM: resume failed: $out"
grep -q "run 1 resumes at step $at" <<<"$out" && grep -q "run 1 finished" <<<"$out" || fail "pipeline SIGTERM: $out"
[ "$(rows "$ref" 1)" = "$(rows "$db" 1)" ] || fail "pipeline SIGTERM: resumed from $at, the rows differ from the uninterrupted run:
$(diff <(rows "$ref" 1) <(rows "$db" 1) | head -20)"
echo "ok: a pipeline run stopped by SIGTERM resumed from $at equal to uninterrupted"
}

# SIGTERM: a clean stop, stored interrupted, a checkpoint where it stopped, which resume continues from.
case_sigterm() {
layout none
db="$work/term.db"
(cd "$work" && exec "$tw" --db "$db" run micro.toml >"$work/term.log" 2>&1) &
pid=$!
pids+=("$pid")
for _ in $(seq 1 600); do
  [ -n "$(complete_ckpt "$db" 1)" ] && break
  sleep 0.05
done
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 130 ] || fail "SIGTERM: exit code $rc, not 130: $(tail -3 "$work/term.log")"
[ "$(status_of "$db" 1)" = interrupted ] || fail "SIGTERM: the run is not stored interrupted"
stopped="$(tw_run "$db" runs list | awk '$1 == 1 {print $5}')"
at="$(complete_ckpt "$db" 1)"
[ "$at" = "$stopped" ] || fail "SIGTERM: the stop at step $stopped left no checkpoint there (latest common: $at)"

# A changed key is refused, naming it; the same file goes on.
out="$(tw_run "$db" run --resume 1 --set train.lr=0.002 2>&1)" && fail "a resume with another train.lr was accepted"
grep -q "train.lr" <<<"$out" || fail "the refused resume does not name train.lr: $out"
out="$(tw_run "$db" run --resume 1 micro.toml --set outer.inner_steps=5 2>&1)" && fail "a file with another key was accepted"
grep -q "outer.inner_steps" <<<"$out" || fail "the refused resume does not name outer.inner_steps: $out"
[ "$(status_of "$db" 1)" = interrupted ] || fail "a refused resume changed the run's status"
out="$(tw_run "$db" run --resume 1 micro.toml 2>&1)" && grep -q "run 1 resumes at step $at" <<<"$out" &&
  grep -q "run 1 finished" <<<"$out" || fail "resume with the same file failed: $out"
out="$(tw_run "$db" run --resume 1 2>&1)" && fail "a finished run was resumed"
grep -q "finished; there is nothing to resume" <<<"$out" || fail "resuming a finished run: $out"
}

# With --force a changed key is accepted, said and stored.
case_force() {
layout ddp
db="$work/force.db"
(cd "$work" && exec "$tw" --db "$db" run micro.toml >"$work/force.log" 2>&1) &
pid=$!
pids+=("$pid")
for _ in $(seq 1 600); do
  [ -n "$(complete_ckpt "$db" 1)" ] && break
  sleep 0.05
done
kill -TERM "$pid"
wait "$pid" || true
out="$(tw_run "$db" run --resume 1 --set train.lr=0.002 --force 2>&1)" || fail "--force did not resume: $out"
grep -q "train.lr: " <<<"$out" && grep -q "run 1 finished" <<<"$out" || fail "--force: $out"
out="$(tw_run "$db" runs show 1)"
grep -q "^lr = 0.002" <<<"$(sed -n '/^\[train\]/,/^\[outer\]/p' <<<"$out")" || fail "--force did not store the new train.lr: $out"
}

# No checkpoints (ckpt_every = 0): nothing to resume from, said so.
case_no_checkpoint() {
layout ddp
db="$work/none.db"
(cd "$work" && exec "$tw" --db "$db" run micro.toml --set train.ckpt_every=0 >"$work/none.log" 2>&1) &
pid=$!
pids+=("$pid")
for _ in $(seq 1 600); do  # until the run is stored and training (a loaded machine is slow to start it)
  [ "$(tw_run "$db" runs list 2>/dev/null | awk '$1 == 1 {print $5}')" -gt 0 ] 2>/dev/null && break
  sleep 0.05
done
kill -TERM "$pid"
wait "$pid" || true
out="$(tw_run "$db" run --resume 1 --set train.ckpt_every=0 2>&1)" && fail "a run without checkpoints was resumed"
grep -q "no checkpoint that every node wrote" <<<"$out" || fail "resume without checkpoints: $out"
}

run_cases "$@"
echo "resume_test: all passed (${ran_cases[*]})"
