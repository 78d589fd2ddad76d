# Sourced by the CLI integration tests: writes a small corpus of 30 "documents" of varied
# sentences into folder $1 (enough for a 200-piece tokenizer and a micro model).
micro_corpus() {
  mkdir -p "$1"
  for i in $(seq 10 39); do
    for j in $(seq 1 40); do
      echo "Document $i line $j: the quick brown fox $((i * j % 7)) jumps over the lazy dog while it rains $((j % 5)) times."
    done > "$1/doc$i.txt"
  done
}
