#!/usr/bin/env bash
# Budgets and seeds through the binary:
#  * train.tokens_per_param sets the steps by the rule of core/token_budget.h, counted here by hand for
#    the micro test model, and `data prepare` states the passes over the training tokens it implies;
#  * run.seeds runs each variant once per seed in the layout's group, each run storing its seed;
#  * `runs compare --group` and `report --group` give each point's mean ± sample standard deviation over
#    its seeds, checked against the same figures computed from the store by Python's statistics module.
# Usage: budget_seeds_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"
micro_corpus "$work/corpus"
{ micro_tables; cat <<'TOML'; } > "$work/seeds.toml"
[run]
name = "seeds"
seeds = [1, 2, 3]
[outer]
algorithm = "diloco"
replicas = 2
inner_steps = 5
[variants]
lr5 = ["outer.lr=0.5"]
lr9 = ["outer.lr=0.9"]
TOML

# The micro test model (d 32, 2 layers, SwiGLU 96, tied 200-piece vocabulary): per block 2·32 + 3·32² +
# 32² + 3·96·32 = 13,376; N = 200·32 + 2·13,376 + 32 = 33,184. One token per parameter over 2 replicas
# × batch 4 × 32 tokens = 256 a step: ⌈129.6⌉ = 130 steps, already whole rounds of 5.
out="$(cd "$work" && "$tw" --db "$db" train --set data.corpus=corpus --set data.cache_dir=cache --set data.vocab_size=200 \
  --set model.d_model=32 --set model.n_layer=2 --set model.n_head=2 --set model.seq_len=32 --set train.batch_size=4 \
  --set outer.algorithm=diloco --set outer.replicas=2 --set outer.inner_steps=5 --set train.tokens_per_param=1 \
  --set train.eval_every=0 --set run.name=budget 2>&1)" || fail "the budget run failed: $out"
steps="$($py -c "import sqlite3; print(sqlite3.connect('$db').execute(\"select max(step) from metrics m join runs r on r.id = m.run_id where r.name = 'budget' and m.name = 'train.loss'\").fetchone()[0])")"
[ "$steps" = "130" ] || fail "tokens_per_param 1 ran $steps steps, not 130"
prep="$("$tw" data prepare --set data.corpus=corpus --set data.cache_dir=cache --set data.vocab_size=200 \
  --set model.d_model=32 --set model.n_layer=2 --set model.n_head=2 --set model.seq_len=32 --set train.batch_size=4 \
  --set outer.algorithm=diloco --set outer.replicas=2 --set outer.inner_steps=5 --set train.tokens_per_param=1)" ||
  fail "data prepare failed: $prep"
train_tokens="$(grep -o 'train [0-9]* tokens' <<<"$prep" | awk '{print $2}')"
want="$(awk -v t="$train_tokens" 'BEGIN {printf "%.2f epochs", 130 * 256 / t}')"
grep -q "budget: 130 steps x 256 tokens = .* (N = 33184), $want" <<<"$prep" || fail "data prepare's budget line (want $want): $prep"

# Seeds: 2 variants × 3 seeds, one group, names shared across seeds.
out="$(cd "$work" && "$tw" --db "$db" run seeds.toml 2>&1)" || fail "the seeded runs failed: $out"
rows="$($py -c "
import sqlite3
for name, seed in sqlite3.connect('$db').execute(\"select name, seed from runs where name like 'seeds-%' order by id\"):
    print(name, seed)")"
[ "$rows" = "$(printf 'seeds-lr5 1\nseeds-lr5 2\nseeds-lr5 3\nseeds-lr9 1\nseeds-lr9 2\nseeds-lr9 3')" ] || fail "runs and seeds: $rows"
# The expected figures: each run's last val.loss (largest step, any node), mean and sample stdev per point.
expect="$($py -c "
import sqlite3, statistics as st
db = sqlite3.connect('$db')
for name in ('seeds-lr5', 'seeds-lr9'):
    v = [db.execute(\"select value from metrics where run_id = ? and name = 'val.loss' order by step desc limit 1\", (i,)).fetchone()[0]
         for (i,) in db.execute('select id from runs where name = ? order by id', (name,))]
    print(f'{name} {st.mean(v):.4f} ± {st.stdev(v):.4f} [{min(v):.4f}, {max(v):.4f}]')")"
cmp="$("$tw" --db "$db" runs compare --group seeds)" || fail "runs compare --group failed"
got="$(awk '/^  seeds-lr[59] \(runs/ {n = $1} /^    last val loss/ {print n, $4, $5, $6, $7, $8}' <<<"$cmp")"
[ "$got" = "$expect" ] || fail "runs compare's spread: got
$got
expected
$expect
from
$cmp"
grep -q "seeds 1,2,3; n = 3" <<<"$cmp" || fail "runs compare does not list the seeds: $cmp"
grep -Eq "against seeds-lr5: [-+][0-9.]+, (beyond|within) the spread" <<<"$cmp" || fail "no verdict against the first point: $cmp"
"$tw" --db "$db" report --group seeds --out "$work/rep" > /dev/null || fail "report --group seeds failed"
for name in seeds-lr5 seeds-lr9; do
  m="$(awk -v n="$name" '$1 == n {print $2, $3, $4}' <<<"$expect")"
  grep -q "^| $name | .* | 1, 2, 3 | $m |" "$work/rep/report.md" || fail "the report's row for $name lacks $m: $(grep -A4 'Over seeds' "$work/rep/report.md")"
done
echo "budget_seeds_test: ok"
