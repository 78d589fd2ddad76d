#!/usr/bin/env bash
# bad data inputs are named errors and failed runs. `thinwire run` (and `thinwire train`)
# on an empty llm.c shard, a 10-token shard, a truncated shard, a shard with an id beyond the
# vocabulary, a binary file and a folder holding a binary file as the corpus, and a shard too short
# for one replica's part: each exits 1 naming the key, the file and the reason, prints no stack
# trace, and the run store holds the run as failed with that reason, never "running". Thread nodes
# and child-process nodes both. A good shard pair finishes, so the layout itself is not the problem.
# Usage: bad_inputs_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"

# shard FILE N [ID]: an llm.c shard of N tokens (ids cycling below 150, or all ID when given).
shard() {
  "$py" - "$@" <<'PY'
import struct, sys
path, n = sys.argv[1], int(sys.argv[2])
toks = [int(sys.argv[3])] * n if len(sys.argv) > 3 else [i % 150 for i in range(n)]
with open(path, "wb") as f:
    f.write(struct.pack("<256i", 20240520, 1, n, *([0] * 253)))
    f.write(struct.pack("<%dH" % n, *toks))
PY
}
shard "$work/empty.bin" 0
shard "$work/ten.bin" 10
shard "$work/good.bin" 3000
shard "$work/forty.bin" 40
shard "$work/oov.bin" 3000 7000
head -c 1500 "$work/good.bin" > "$work/truncated.bin"
head -c 4096 /dev/urandom > "$work/random.dat"
mkdir -p "$work/texts"
printf 'A plain line of text.\n' > "$work/texts/a.txt"
printf '\x89PNG\r\n\x1a\n\0\0\0\rIHDR' > "$work/texts/b.png"

# seq_len 32: a window needs 33 tokens, a batch of 4 needs 129.
micro_tables "vocab_size = 200" data.corpus= "data.train_shard=\"$work/good.bin\"" "data.val_shard=\"$work/good.bin\"" \
  "data.cache_dir=\"$work/cache\"" train.warmup_steps=1 train.eval_every=2 train.steps=2 > "$work/micro.toml"

# The store as the checks read it (the CLI's `runs list` takes a second to start; sqlite does not):
# "FAILED RUNNING LAST-ID LAST-STATUS" and the last run's reason.
store_counts() {
  "$py" - "$db" <<'PY2'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
count = lambda s: db.execute("select count(*) from runs where status = ?", (s,)).fetchone()[0]
last = db.execute("select id, status from runs order by id desc limit 1").fetchone() or (0, "none")
print(count("failed"), count("running"), last[0], last[1])
PY2
}
last_reason() { "$py" -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(
    "select reason from runs order by id desc limit 1").fetchone()[0])' "$db"; }

# expect_failure LABEL EXPECTED-TEXT ARGS...: thinwire fails with exit 1 naming EXPECTED-TEXT, no
# stack trace, and one more run is stored, as failed with that reason; none is left running.
# EXPECTED-TEXT is a fixed string, or an extended regex with match=-E.
expect_failure() {
  local label="$1" want="$2"; shift 2
  local failed running id status out rc
  read -r failed running id status <<<"$(store_counts)"
  set +e
  out="$("$tw" --db "$db" "$@" --data-root "$work" 2>&1)"; rc=$?
  set -e
  [ "$rc" -eq 1 ] || fail "$label: exit $rc, not 1: $out"
  grep -q "${match:--F}" -- "$want" <<<"$out" || fail "$label: the output does not say \"$want\": $out"
  if grep -Eq "frame #|Exception raised from|terminate called|Aborted|core dumped" <<<"$out"; then
    fail "$label: a stack trace or an abort: $out"
  fi
  local before_failed=$failed
  read -r failed running id status <<<"$(store_counts)"
  [ "$failed" -eq $((before_failed + 1)) ] && [ "$status" = "failed" ] ||
    fail "$label: the last run (id $id) is $status, $failed failed in all (before: $before_failed)"
  [ "$running" -eq 0 ] || fail "$label: $running run(s) left running"
  grep -q "${match:--F}" -- "$want" <<<"$(last_reason)" || fail "$label: the stored reason lacks \"$want\": $(last_reason)"
}

run_file="$work/micro.toml"
# The layout is sound: with the good shards the run finishes.
out="$("$tw" --db "$db" run "$run_file" --data-root "$work" 2>&1)" || fail "the good shards did not run: $out"
grep -q "finished" <<<"$out" || fail "the good shards did not finish: $out"

expect_failure "empty shard (threads)" \
  "data.train_shard $work/empty.bin: 0 tokens (empty), a training window needs 33 (model.seq_len + 1)" \
  run "$run_file" --set "data.train_shard=\"$work/empty.bin\""
expect_failure "10-token shard (child processes)" \
  "data.train_shard $work/ten.bin: 10 tokens, a training window needs 33 (model.seq_len + 1)" \
  run "$run_file" --set "data.train_shard=\"$work/ten.bin\"" --set cluster.mode=local
expect_failure "10-token validation shard (thinwire train)" \
  "data.val_shard $work/ten.bin: 10 tokens, a validation window needs 33" \
  train "$run_file" --set "data.val_shard=\"$work/ten.bin\""
expect_failure "40 tokens, a batch needs 129" \
  "data.train_shard $work/forty.bin: 40 tokens hold 1 training windows of model.seq_len 32, one batch needs 4 (train.batch_size): 129 tokens" \
  run "$run_file" --set "data.train_shard=\"$work/forty.bin\""
expect_failure "truncated shard" \
  "data.train_shard: shard $work/truncated.bin: header says 3000 tokens (6000 bytes) but the body has 476 bytes (truncated)" \
  run "$run_file" --set "data.train_shard=\"$work/truncated.bin\""
expect_failure "ids beyond the vocabulary" \
  "data.train_shard $work/oov.bin: token id 7000 at position 0 is not below model.vocab_size 200" \
  run "$run_file" --set "data.train_shard=\"$work/oov.bin\"" --set cluster.mode=local
# Two replicas with batches of one: the whole shard fills a batch, a replica's half does not fill a
# window (whichever replica reports first is named).
match=-E expect_failure "a replica's part" \
  "data\.train_shard $work/forty\.bin: part [01] of 2 gets 20 of its 40 tokens, a training window needs 33 " \
  run "$run_file" --set "data.train_shard=\"$work/forty.bin\"" --set train.batch_size=1 --set outer.algorithm=ddp \
  --set outer.replicas=2 --set cluster.mode=local

# Corpora: the shard keys cleared, a binary file and a folder holding one binary file.
corpus_file="$work/corpus.toml"
grep -v "_shard" "$run_file" > "$corpus_file"
expect_failure "binary corpus file (threads)" \
  "data.corpus $work/random.dat: not text: at byte" \
  run "$corpus_file" --set "data.corpus=\"$work/random.dat\""
expect_failure "folder with a binary file (child processes)" \
  "data.corpus $work/texts/b.png: not text: at byte 0, byte 0x89, invalid in UTF-8" \
  run "$corpus_file" --set "data.corpus=\"$work/texts\"" --set cluster.mode=local
expect_failure "text too short for the tokenizer" \
  "data.corpus $work/texts/a.txt: 22 bytes of training text, too little to learn a tokenizer of data.vocab_size 200" \
  run "$corpus_file" --set "data.corpus=\"$work/texts/a.txt\""

pgrep -f -- "--data-root $work" >/dev/null && fail "node processes outlived their runs: $(pgrep -af -- "--data-root $work")"
# The CLI's view of the store: 10 failed runs and the finished one, none running.
list="$("$tw" --db "$db" runs list)"
[ "$(awk '$1 ~ /^[0-9]+$/ && $3 == "failed"' <<<"$list" | wc -l)" -eq 10 ] || fail "runs list lacks 10 failed runs: $list"
[ "$(awk '$1 ~ /^[0-9]+$/ && $3 == "finished"' <<<"$list" | wc -l)" -eq 1 ] || fail "runs list lacks the finished run: $list"
! grep -q running <<<"$list" || fail "runs list shows a running run: $list"
echo "ok: 10 bad inputs failed by name, none left running"
