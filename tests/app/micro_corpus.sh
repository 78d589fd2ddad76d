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
