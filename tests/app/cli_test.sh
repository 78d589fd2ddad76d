#!/usr/bin/env bash
# CLI integration test: trains a micro model on a small text folder through `thinwire train` (a
# one-node run through the coordinator), checks the run store, checkpoints and resume, and checks
# that config errors name the key and exit non-zero.
# Usage: cli_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"
micro_corpus "$work/corpus"

common=(--data-root "$work" --set data.corpus="$work/corpus" --set data.cache_dir="$work/cache" --set data.vocab_size=200
        --set model.d_model=32 --set model.n_layer=2 --set model.n_head=2 --set model.seq_len=32
        --set train.batch_size=4 --set train.warmup_steps=2 --set train.eval_every=10 --set run.threads=1)

out="$("$tw" --db "$work/runs.db" train "${common[@]}" --set train.steps=20 --set run.name=cli-micro)"
grep -q "run 1 finished after" <<<"$out" || fail "train did not finish: $out"
grep -Eq "^  replica-0 +20 " <<<"$out" || fail "train did not run 20 steps on one node: $out"
grep -q "unigram baseline" <<<"$out" || fail "no unigram baseline printed"

list="$("$tw" --db "$work/runs.db" runs list)"
grep -Eq "^ +1 +cli-micro +finished +.* 20 " <<<"$list" || fail "runs list lacks the finished run: $list"

# show / compare / export
show="$("$tw" --db "$work/runs.db" runs show 1)"
grep -q 'run 1 "cli-micro" (run)' <<<"$show" || fail "runs show: $show"
grep -Eq "^train.loss +20 +20 " <<<"$show" || fail "runs show lacks 20 train.loss points: $show"
"$tw" --db "$work/runs.db" train "${common[@]}" --set train.steps=5 --set train.lr=0.01 --set run.name=other >/dev/null
cmp_out="$("$tw" --db "$work/runs.db" runs compare 1 2)"
grep -Eq "^train.lr +.* 0.01$" <<<"$cmp_out" || fail "runs compare does not show the lr difference: $cmp_out"
csv="$("$tw" --db "$work/runs.db" runs export 1 --format csv)"
[ "$(grep -c ',train.loss,' <<<"$csv")" -eq 20 ] || fail "csv export lacks 20 train.loss rows"
"$tw" --db "$work/runs.db" runs export 2 --sqlite "$work/one.db" 2>/dev/null
[ "$("$tw" --db "$work/one.db" runs list | tail -n +2 | wc -l)" -eq 1 ] || fail "sqlite export is not one run"

# Resume: a second run with a checkpoint continues from it.
"$tw" --db "$work/runs.db" train "${common[@]}" --set train.steps=10 --set train.ckpt_path="$work/c.ckpt" >/dev/null
out="$("$tw" --db "$work/runs.db" train "${common[@]}" --set train.steps=15 --set train.ckpt_path="$work/c.ckpt" \
       --set train.resume=true)"
grep -Eq "^  replica-0 +15 " <<<"$out" || fail "resume did not reach step 15: $out"
events="$(/usr/bin/python3 -c 'import sqlite3, sys
for k, t in sqlite3.connect(sys.argv[1]).execute("select kind, text from events where run_id = 4"): print(k, t)' "$work/runs.db")"
grep -q "resume resumed from .*c.ckpt at step 10" <<<"$events" || fail "run 4 did not resume from step 10: $events"
# The resumed run stored steps 11..15 only: the first ten are run 3's.
[ "$("$tw" --db "$work/runs.db" runs export 4 --format csv | grep -c ',train.loss,')" -eq 5 ] ||
    fail "the resumed run stored other than steps 11-15"
# A checkpoint outside the data root is refused before anything runs.
set +e
err="$("$tw" --db "$work/runs.db" train "${common[@]}" --set train.steps=2 --set train.ckpt_path=/etc/tw.ckpt 2>&1)"
rc=$?
set -e
[ "$rc" -ne 0 ] && grep -q "train.ckpt_path" <<<"$err" || fail "a checkpoint outside the data root was not refused: $err"
[ ! -e /etc/tw.ckpt ] || fail "a checkpoint was written outside the data root"

# A file with replicas goes through the coordinator, as `thinwire run` does (tests/app/run_test.sh
# checks those runs' bytes, re-timing and failures).
out="$("$tw" --db "$work/runs.db" train "${common[@]}" --set train.steps=20 --set outer.algorithm=diloco \
       --set outer.replicas=2 --set outer.inner_steps=10 --set run.name=diloco-via-train)"
grep -Eq "^  replica-1 +20 " <<<"$out" || fail "train with replicas did not run them through the coordinator: $out"

# Bad config: exit 1 and every problem named.
set +e
err="$("$tw" --db "$work/runs.db" train --set model.d_modle=3 --set train.lr=-1 2>&1)"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "bad config exited $rc"
grep -q "model.d_modle: unknown key" <<<"$err" || fail "unknown key not named: $err"
grep -q "train.lr: value -1 is out of range" <<<"$err" || fail "range error not named: $err"
echo "cli_test: ok"
