#!/usr/bin/env bash
# A run's final model, as a user takes it out: every run kind keeps it in the store's run folder
# (runs show names it, runs delete removes it); `thinwire export` writes the Hugging Face Llama
# layout, which a Llama forward pass written in Python (tests/app/hf_llama_reference.py, Debian's
# PyTorch) reproduces to 1e-5 in its logits — tied and untied — and which a wrong RoPE base does not;
# `thinwire eval` recomputes the run's final validation loss from the kept model; `thinwire sample`
# is deterministic for a seed. Micro model on a micro corpus; threads.
# Usage: model_test.sh PATH_TO_THINWIRE
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/harness.sh"
micro_corpus "$work/corpus"
layout() {  # ALGORITHM, extra [model] lines, extra lines at the end
  { micro_tables "$2"
    printf '[outer]\nalgorithm = "%s"\nreplicas = 2\ninner_steps = 5\n[cluster]\nmode = "threads"\n%s\n' "$1" "$3"
  } > "$work/micro.toml"
}
run() { (cd "$work" && "$tw" --db "$db" run micro.toml "$@" 2>&1); }
last_id() { "$tw" --db "$db" runs list | awk '$1 ~ /^[0-9]+$/ {id = $1} END {print id}'; }
val_of() { sqlite3 "$db" "SELECT value FROM metrics WHERE run_id = $1 AND name = 'val.loss' ORDER BY step DESC LIMIT 1"; }
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-5 * (b < 0 ? -b : b)) }'; }
printf 'Document 77 line 1: the quick brown fox 3 jumps over the lazy dog while it rains 2 times.\n' > "$work/held.txt"

# DiLoCo, untied head: the global model is kept with its tokenizer and config.
layout diloco "tie_embeddings = false" ""
out="$(run)" || fail "the DiLoCo run failed: $out"
grep -q "final model (from replica-0) kept in $db.d/run-1" <<<"$out" || fail "no final model line: $out"
for f in model.safetensors tokenizer.model config.toml; do
  [ -s "$db.d/run-1/$f" ] || fail "the run folder lacks $f"
done
show="$("$tw" --db "$db" runs show 1)"
grep -qxF "  model    $db.d/run-1" <<<"$show" || fail "runs show does not name the model: $(head -12 <<<"$show")"

# eval recomputes the run's final validation loss from the kept model.
ev="$("$tw" --db "$db" eval 1 --data-root "$work")" || fail "eval failed: $ev"
got="$(sed -n 's/.*val loss \([0-9.]*\) nats.*/\1/p' <<<"$ev")"
close "$got" "$(val_of 1)" || fail "eval's loss $got is not the run's final val.loss $(val_of 1)"

# Export: the Python Llama reproduces thinwire's logits; a wrong RoPE base does not.
"$tw" --db "$db" export 1 --out "$work/hf1" > /dev/null || fail "export failed"
for f in model.safetensors config.json tokenizer.model; do [ -s "$work/hf1/$f" ] || fail "the export lacks $f"; done
grep -q '"tie_word_embeddings": false' "$work/hf1/config.json" || fail "untied model exported tied: $(cat "$work/hf1/config.json")"
"$tw" --db "$db" eval 1 --data "$work/held.txt" --logits-out "$work/logits1.safetensors" > /dev/null || fail "eval --data failed"
/usr/bin/python3 "$here/hf_llama_reference.py" "$work/hf1" "$work/logits1.safetensors" || fail "the Python Llama differs (untied)"
sed -i 's/"rope_theta": [0-9.e+]*/"rope_theta": 500000.0/' "$work/hf1/config.json"
/usr/bin/python3 "$here/hf_llama_reference.py" "$work/hf1" "$work/logits1.safetensors" > /dev/null &&
  fail "the reference passed with a wrong RoPE base: the comparison cannot see RoPE"
# The export refuses to replace files without --force, and never writes into the run's folder.
"$tw" --db "$db" export 1 --out "$work/hf1" > /dev/null 2>&1 && fail "export replaced files without --force"
"$tw" --db "$db" export 1 --out "$work/hf1" --force > /dev/null || fail "export --force failed"
"$tw" --db "$db" export 1 --out "$db.d/run-1" > /dev/null 2>&1 && fail "export wrote into the run's own folder"
"$tw" --db "$db" export 1 --out "$work/st" --format safetensors > /dev/null || fail "export --format safetensors failed"
[ "$(ls "$work/st")" = "model.safetensors" ] || fail "--format safetensors wrote: $(ls "$work/st")"

# Bits per byte follow from nats per token: total nats / ln 2 / bytes.
line="$("$tw" --db "$db" eval 1 --data "$work/held.txt")"
awk -v l="$line" 'BEGIN {
  split(l, w, " "); for (i in w) { if (w[i+1] == "nats/token") npt = w[i]; if (w[i+1] == "tokens;") n = w[i];
                                   if (w[i+1] == "bits/byte") bpb = w[i]; if (w[i+1] == "bytes") b = w[i] }
  want = npt * n / log(2) / b; d = want - bpb; if (d < 0) d = -d; exit !(d < 1e-4 * want) }' || fail "bits/byte is not nats·tokens/ln2/bytes: $line"

# Sampling: the same seed gives the same text, greedy twice the same.
s1="$("$tw" --db "$db" sample 1 --prompt "Document 5" --tokens 20 --temperature 1 --top-k 50 --seed 7)"
s2="$("$tw" --db "$db" sample 1 --prompt "Document 5" --tokens 20 --temperature 1 --top-k 50 --seed 7)"
[ "$s1" = "$s2" ] || fail "one seed, two texts: '$s1' / '$s2'"
others=0
for seed in 1 2 3 4 5; do
  [ "$("$tw" --db "$db" sample 1 --prompt "Document 5" --tokens 20 --temperature 1 --top-k 50 --seed $seed)" != "$s1" ] && others=$((others + 1))
done
[ "$others" -gt 0 ] || fail "five other seeds all gave the seed 7 text: sampling ignores the seed"
g1="$("$tw" --db "$db" sample 1 --prompt "Document 5" --tokens 10)"
[ "$g1" = "$("$tw" --db "$db" sample 1 --prompt "Document 5" --tokens 10)" ] || fail "greedy sampling differs"
grep -q "^Document 5" <<<"$g1" || fail "the sample does not continue the prompt: $g1"

# Tied embeddings, one node: kept and exported tied, reproduced by the Python Llama.
layout diloco "" ""
out="$(run --set outer.algorithm=none --set outer.replicas=1 --set run.name=one)" || fail "the one-node run failed: $out"
id="$(last_id)"
[ -s "$db.d/run-$id/model.safetensors" ] || fail "the one-node run kept no model: $out"
"$tw" --db "$db" export "$id" --out "$work/hf2" > /dev/null || fail "export of the tied model failed"
grep -q '"tie_word_embeddings": true' "$work/hf2/config.json" || fail "tied model exported untied"
"$tw" --db "$db" eval "$id" --data "$work/held.txt" --logits-out "$work/logits2.safetensors" > /dev/null
/usr/bin/python3 "$here/hf_llama_reference.py" "$work/hf2" "$work/logits2.safetensors" || fail "the Python Llama differs (tied)"

# Two pipeline replicas of two stages: the stages are assembled into the whole model, which evaluates to the
# run's final validation loss.
layout diloco "tie_embeddings = false" "stages = 2
[pipeline]
replicas = 2
micro_batches = 2"
out="$(run --set run.name=pipe)" || fail "the pipeline run failed: $out"
id="$(last_id)"
grep -q "final model (from replica-0.0, replica-0.1) kept" <<<"$out" || fail "the pipeline's stages were not assembled: $out"
ev="$("$tw" --db "$db" eval "$id" --data-root "$work")" || fail "eval of the pipeline's model failed: $ev"
close "$(sed -n 's/.*val loss \([0-9.]*\) nats.*/\1/p' <<<"$ev")" "$(val_of "$id")" || fail "pipeline: eval $ev, run $(val_of "$id")"

# runs delete removes the folder with the run.
"$tw" --db "$db" runs delete 1 --yes > /dev/null || fail "runs delete failed"
[ ! -e "$db.d/run-1" ] || fail "runs delete left the run's folder"
"$tw" --db "$db" eval 1 --data "$work/held.txt" > /dev/null 2>&1 && fail "eval of a deleted run"
echo "model_test: all passed"
