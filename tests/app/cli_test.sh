#!/usr/bin/env bash
# CLI integration test: trains a micro model on a small text folder through `thinwire train`,
# checks the run store, and checks that config errors name the key and exit non-zero.
# Usage: cli_test.sh PATH_TO_THINWIRE
set -euo pipefail
tw="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

source "$(dirname "$0")/micro_corpus.sh"
micro_corpus "$work/corpus"

common=(--set data.corpus="$work/corpus" --set data.cache_dir="$work/cache" --set data.vocab_size=200
        --set model.d_model=32 --set model.n_layer=2 --set model.n_head=2 --set model.seq_len=32
        --set train.batch_size=4 --set train.warmup_steps=2 --set train.eval_every=10 --set run.threads=1)

out="$("$tw" --db "$work/runs.db" train "${common[@]}" --set train.steps=20 --set run.name=cli-micro)"
grep -q "run 1 finished: 20 steps" <<<"$out" || fail "train did not finish: $out"
grep -q "unigram baseline" <<<"$out" || fail "no unigram baseline printed"

list="$("$tw" --db "$work/runs.db" runs list)"
grep -Eq "^ +1 +cli-micro +finished +.* 20 " <<<"$list" || fail "runs list lacks the finished run: $list"

# show / compare / export
show="$("$tw" --db "$work/runs.db" runs show 1)"
grep -q 'run 1 "cli-micro" (train)' <<<"$show" || fail "runs show: $show"
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
grep -q "run 4 finished: 15 steps" <<<"$out" || fail "resume did not reach step 15: $out"

# A file with replicas goes through the coordinator, as `thinwire run` does (tests/app/run_test.sh
# checks those runs' bytes, re-timing and failures).
out="$("$tw" --db "$work/runs.db" train "${common[@]}" --data-root "$work" --set train.steps=20 --set outer.algorithm=diloco \
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
