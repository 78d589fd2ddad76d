#!/usr/bin/env bash
# Ctrl-C is honoured in the middle of a long evaluation (train.eval_batches = 1e6, hours of work):
# a DDP run on threads and on child processes, and a two-stage pipeline on threads, each sent SIGINT
# while it evaluates, exits 130 within a few seconds (seen: 0.3–0.7 s) and is stored interrupted
# "stopped on request", not failed.
# Usage: signals_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"
at_exit 'stop_children; pkill -KILL -f -- "--data-root $work" 2>/dev/null'
micro_corpus "$work/corpus"
{ micro_tables; printf '[outer]\nalgorithm = "ddp"\nreplicas = 2\n'; } > "$work/micro.toml"

# Runs NAME with the settings, waits until NODE (one that reports losses) has stored 4 steps — it evaluates after the 5th for
# hours — sends SIGINT, and checks the exit and the stored status.
interrupt_in_eval() {
  local name="$1" node="$2"; shift 2
  (cd "$work" && exec "$tw" --db "$db" run micro.toml --set train.eval_batches=1000000 --set train.eval_every=5 \
     --set run.name="$name" "$@" > "$work/$name.log" 2>&1) &
  local pid=$! n=0
  for _ in $(seq 1 600); do
    n="$(sqlite3 "$db" "SELECT COUNT(*) FROM metrics m JOIN runs r ON r.id = m.run_id WHERE r.name = '$name'
                        AND m.node = '$node' AND m.name = 'train.loss'" 2>/dev/null || echo 0)"
    [ "$n" -ge 4 ] && break
    kill -0 "$pid" 2>/dev/null || fail "$name ended before its evaluation: $(tail -5 "$work/$name.log")"
    sleep 0.1
  done
  [ "$n" -ge 4 ] || fail "$name never reached step 4"
  sleep 1  # well into the evaluation
  local t0=$SECONDS rc
  kill -INT "$pid"
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && fail "$name: no exit 10 s after Ctrl-C during its evaluation"
  set +e; wait "$pid"; rc=$?; set -e
  [ "$rc" -eq 130 ] || fail "$name exited $rc after Ctrl-C, want 130: $(tail -5 "$work/$name.log")"
  local st
  st="$(sqlite3 "$db" "SELECT status || ': ' || reason FROM runs WHERE name = '$name'")"
  [ "$st" = "interrupted: stopped on request" ] || fail "$name is stored '$st', want 'interrupted: stopped on request'"
  echo "$name: exit 130 within $((SECONDS - t0)) s of Ctrl-C"
}
interrupt_in_eval ddp-threads replica-0 --set cluster.mode=threads
interrupt_in_eval ddp-local replica-0 --set cluster.mode=local
interrupt_in_eval pipe-threads replica-0.1 --set outer.algorithm=none --set outer.replicas=1 --set cluster.stages=2 \
  --set pipeline.micro_batches=2 --set model.tie_embeddings=false
echo "signals: ok"
