#!/usr/bin/env bash
# Corpora in the layouts researchers have: the micro model trains a few steps on a one-document-
# per-line text file and on a JSON Lines file with its own text field, and each run says how its
# corpus was read; `data prepare` says it too, with the warnings (a BPE tokenizer trained on fewer
# than 20 tokens per piece, a budget of more than 4 epochs). A JSONL line without the field and a
# Parquet file are errors that name the file (and the line, or how to convert), exit 1.
# Usage: data_formats_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"

# 300 one-line documents of varied sentences, no blank line; the same documents as JSONL under "body".
for i in $(seq 1 300); do
  echo "Document $i says the quick brown fox $((i % 7)) jumps over the lazy dog while it rains $((i % 5)) times."
done > "$work/lines.txt"
awk '{ printf "{\"id\": %d, \"body\": \"%s\"}\n", NR, $0 }' "$work/lines.txt" > "$work/docs.jsonl"

micro() {  # micro CORPUS [DATA.KEY=VALUE]: the micro model, 6 steps of batch 4
  micro_tables "" "data.corpus=\"$1\"" ${2:+"$2"} train.eval_every=3 train.steps=6
}
run() { "$tw" --db "$db" run "$@" --data-root "$work" 2>&1; }

micro lines.txt > "$work/lines.toml"
out="$(run "$work/lines.toml")" || fail "the one-per-line run failed: $out"
grep -q "read as one document per line (data.format \"auto\": its 300 lines hold no blank line), 300 documents" <<<"$out" \
  || fail "the run did not say how it read lines.txt: $out"
grep -q "finished" <<<"$out" || fail "the one-per-line run did not finish: $out"

micro docs.jsonl 'data.text_field="body"' > "$work/jsonl.toml"
out="$(run "$work/jsonl.toml")" || fail "the JSONL run failed: $out"
grep -q "read as JSON Lines (data.format \"auto\": its name ends in .jsonl), 300 documents" <<<"$out" \
  || fail "the run did not say how it read docs.jsonl: $out"
grep -q "finished" <<<"$out" || fail "the JSONL run did not finish: $out"
# No JSON syntax became training text: the tokenizer's pieces hold no "body" key or braces.
note="$(grep -l docs.jsonl "$work"/cache/data/*/reading.txt | head -1)"
[ -n "$note" ] || fail "no prepared data of docs.jsonl under $work/cache/data"
vocab="$(dirname "$note")/tokenizer.vocab"
[ -f "$vocab" ] || fail "no $vocab"
! grep -qE '^[^[:space:]]*(body|\{|\})' "$vocab" || fail "JSON syntax in the JSONL run's tokenizer: $(grep -E 'body|\{|\}' "$vocab" | head -3)"

# data prepare: the reading, and both warnings with their figures (about 5,000 train tokens are
# fewer than 20 x 400; 2000 steps x 128 tokens are many epochs).
out="$("$tw" data prepare "$work/lines.toml" --set train.steps=2000 --set data.vocab_size=400 --data-root "$work" 2>&1)" \
  || fail "data prepare failed: $out"
grep -q "read as one document per line" <<<"$out" || fail "data prepare did not say how it read lines.txt: $out"
grep -q "warning: the BPE tokenizer of 400 pieces was trained on [0-9]* tokens, fewer than 20 x its vocabulary (8000)" <<<"$out" \
  || fail "no tokenizer warning from data prepare: $out"
grep -q "warning: the budget of 0.256M tokens (2000 steps) is [0-9.]* epochs over the [0-9]* training tokens, more than 4" <<<"$out" \
  || fail "no epochs warning from data prepare: $out"
# A run says both warnings among its first lines too: 40 documents of about 25 tokens, 40 steps of 128.
head -40 "$work/lines.txt" > "$work/few.txt"
micro few.txt > "$work/few.toml"
out="$(run "$work/few.toml" --set train.steps=40 --set train.eval_every=20)" || fail "the short-corpus run failed: $out"
grep -q "warning: the BPE tokenizer of 200 pieces was trained on" <<<"$out" || fail "no tokenizer warning from the run: $out"
grep -q "warning: the budget of 0.00512M tokens (40 steps) is [0-9.]* epochs" <<<"$out" || fail "no epochs warning from the run: $out"

# A JSONL line without the field: exit 1, the file and the line named.
{ head -5 "$work/docs.jsonl"; echo '{"id": 6, "text": "no body here"}'; tail -n +6 "$work/docs.jsonl"; } > "$work/bad.jsonl"
micro bad.jsonl 'data.text_field="body"' > "$work/bad.toml"
set +e; out="$(run "$work/bad.toml")"; rc=$?; set -e
[ "$rc" = 1 ] || fail "a JSONL line without the field: exit $rc, expected 1: $out"
grep -q "data.corpus $work/bad.jsonl:6: no \"body\" field (data.text_field; its fields: id, text)" <<<"$out" \
  || fail "the bad JSONL line was not named: $out"

# A Parquet file: exit 1, what it is and how to convert it.
printf 'PAR1\x15\x04\x15' > "$work/table.parquet"
micro table.parquet > "$work/parquet.toml"
set +e; out="$(run "$work/parquet.toml")"; rc=$?; set -e
[ "$rc" = 1 ] || fail "a Parquet corpus: exit $rc, expected 1: $out"
grep -q "a Parquet file; thinwire reads text, JSON Lines or llm.c shards: convert it to JSON Lines, e.g. python3 -c" <<<"$out" \
  || fail "the Parquet corpus was not explained: $out"
echo "ok"
