#!/usr/bin/env bash
# HDEE as a node run through the CLI: expert nodes on threads train, score the shared
# evaluation documents and send their log-probabilities up; the coordinator's combined figures
# equal what each expert computed from its own scores; the posterior stays within its bound; a
# one-domain layout's ensembles equal their single expert; child processes give the same numbers
# as threads; `--set train.steps` sets the budget; a Ctrl-C marks the run interrupted; a run whose
# coordinator is SIGKILLed resumes with each expert from its own checkpoint, to the figures of an
# uninterrupted run; the alias
# refuses a layout without [hdee]. Micro model on a micro corpus in the Brown layout.
# Usage: hdee_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"

micro_brown "$work/cache"
layout() {  # $1: domains, $2: their genres
  micro_tables "" 'data.corpus="brown"' data.val_fraction=0.25 model.seq_len=16 train.steps=12 train.eval_every=0 \
    train.eval_batches=2 train.log_every=4
  cat <<TOML
[hdee]
domains = $1
domain_genres = $2
homogeneous_d_ff = 64
hetero_size_d_ff = [32, 96]
hetero_steps_steps = [1, 2]
TOML
}
layout '["news", "fiction"]' '["ab", "kl"]' > "$work/hdee.toml"
run() { "$tw" --db "$db" run "$work/hdee.toml" --data-root "$work" "$@"; }
last_id() { "$tw" --db "$db" runs list | awk '$1 ~ /^[0-9]+$/ {id = $1} END {print id}'; }
csv_of() { "$tw" --db "$db" runs export "$1" --format csv > "$work/$1.csv"; echo "$work/$1.csv"; }
value() { awk -F, -v n="$2" -v k="$3" '$2 == n && $7 == k {v = $8} END {print v}' "$1"; }  # node, metric

# data prepare states each expert's passes over its own domain (docs/budgets.md): hetero_steps'
# fiction expert, 16 steps × 4 × 16 tokens, over the train tokens of genres k and l it printed.
prep="$("$tw" data prepare "$work/hdee.toml" --data-root "$work")" || fail "data prepare of the HDEE layout failed: $prep"
kl="$(awk '$1 == "genre" && ($2 == "k:" || $2 == "l:") {t += $6} END {print t}' <<<"$prep")"
want="$(awk -v t="$kl" 'BEGIN {printf "%.2f passes over its %d training tokens", 16 * 4 * 16 / t, t}')"
grep -q "expert hetero_steps.fiction: 16 steps, .* $want" <<<"$prep" || fail "data prepare's passes (want '$want'): $prep"

# Threads, one compute thread each (as child processes below).
out="$(run --set run.threads=1 --set run.name=hdee-threads)"
grep -q "run [0-9]* finished" <<<"$out" || fail "the threads run did not finish: $out"
grep -q "^domain fiction (genres k l)" <<<"$out" || fail "no fiction table: $out"
grep -q "hetero_steps  d_ff 64/64 .*steps 8/16" <<<"$out" || fail "hetero_steps not planned as 8/16 steps: $out"
threads="$(csv_of "$(last_id)")"
nodes="homogeneous.news homogeneous.fiction hetero_size.news hetero_size.fiction hetero_steps.news hetero_steps.fiction"
# Each expert keeps its own model, with its own MLP width, and exports under its name.
for n in $nodes; do
  [ -s "$db.d/run-$(last_id)/model-$n.safetensors" ] || fail "expert $n kept no model: $(ls "$db.d/run-$(last_id)" 2>&1)"
done
"$tw" --db "$db" export "$(last_id)" --out "$work/expert" > "$work/export.log" 2>&1 && fail "export of an HDEE run chose an expert"
grep -q "name one with --expert" "$work/export.log" || fail "export did not name the experts: $(cat "$work/export.log")"
"$tw" --db "$db" export "$(last_id)" --expert hetero_size.fiction --out "$work/expert" > /dev/null || fail "export --expert failed"
grep -q '"intermediate_size": 96' "$work/expert/config.json" || fail "the expert's own d_ff is not exported: $(cat "$work/expert/config.json")"
for n in $nodes; do
  [ -n "$(value "$threads" "$n" val.loss)" ] || fail "$n stored no val.loss"
done
# The coordinator's per-expert figures are the experts' own sums over their scores, to the last bit.
for ens in homogeneous hetero_size hetero_steps; do
  for e in news fiction; do
    for d in news fiction; do
      mine="$(value "$threads" "$ens.$e" "hdee.eval_nll.$d")"
      theirs="$(value "$threads" hdee "hdee.$ens.expert_$e.$d")"
      [ -n "$mine" ] && [ "$mine" = "$theirs" ] || fail "$ens.$e on $d: node says $mine, coordinator $theirs"
    done
    # posterior ≤ min_e [NLL_e − log(prior_e) / T] (T = 16), and not below the better expert by more
    # than the per-window choice allows (≥ 0 here: it never beats both on every window by more)
    awk -F, -v ens="$ens" -v d="$e" '
      $2 == "hdee" && $7 == "hdee." ens ".posterior." d {post = $8}
      $2 == "hdee" && $7 == "hdee." ens ".expert_news." d {a = $8}
      $2 == "hdee" && $7 == "hdee." ens ".expert_fiction." d {b = $8}
      $2 == "hdee" && $7 == "hdee." ens ".prior.news" {pa = $8}
      $2 == "hdee" && $7 == "hdee." ens ".prior.fiction" {pb = $8}
      END {
        ba = a - log(pa) / 16; bb = b - log(pb) / 16; bound = ba < bb ? ba : bb
        if (post == "" || post > bound + 1e-9) { print "posterior " post " above " bound; exit 1 }
      }' "$threads" || fail "$ens on $e: the posterior breaks its bound"
  done
done
[ "$(value "$threads" hdee hdee.homogeneous.steps.news)" = "12" ] || fail "homogeneous steps are not train.steps"
show="$("$tw" --db "$db" runs show "$(last_id)")"
grep -q "^hdee.hetero_size.posterior.news " <<<"$show" || fail "runs show lacks the figures: $show"
grep -q "^domain_genres = \[ 'ab', 'kl' \]" <<<"$show" || fail "[hdee] not in the resolved config: $show"
"$tw" --db "$db" report "$(last_id)" --out "$work/rep" > /dev/null || fail "report failed"
grep -q "^| run [0-9]* hdee-threads | hetero_steps | fiction | " "$work/rep/report.md" || fail "the report lacks the HDEE table: $(cat "$work/rep/report.md")"

# The same layout on child processes: every stored figure equal to the threads run's.
out="$(run --set run.threads=1 --set cluster.mode=local --set run.name=hdee-local)"
grep -q "run [0-9]* finished" <<<"$out" || fail "the child-process run did not finish: $out"
local_csv="$(csv_of "$(last_id)")"
pick() { awk -F, '$2 == "hdee" || $7 == "val.loss" || $7 == "train.loss" || $7 ~ /^hdee.eval_nll/ {print $2, $3, $7, $8}' "$1" | sort; }
[ "$(pick "$threads")" = "$(pick "$local_csv")" ] || fail "child processes differ from threads: $(diff <(pick "$threads") <(pick "$local_csv") | head)"
[ "$(pick "$threads" | wc -l)" -gt 100 ] || fail "too few figures compared"

# One domain: each ensemble is one expert, and both rules are that expert alone.
layout '["news"]' '["ab"]' | sed 's/^hetero_size_d_ff.*/hetero_size_d_ff = [64]/; s/^hetero_steps_steps.*/hetero_steps_steps = [1]/' \
  > "$work/one.toml"
out="$("$tw" --db "$db" hdee "$work/one.toml" --data-root "$work" --set train.steps=6)"
grep -q "run [0-9]* finished" <<<"$out" || fail "the one-domain run did not finish: $out"
one="$(csv_of "$(last_id)")"
[ "$(value "$one" hdee hdee.homogeneous.steps.news)" = "6" ] || fail "--set train.steps did not set the steps"
for ens in homogeneous hetero_size hetero_steps; do
  x="$(value "$one" hdee "hdee.$ens.expert_news.news")"
  [ "$(value "$one" hdee "hdee.$ens.logprob_mean.news")" = "$x" ] || fail "$ens: logprob_mean is not the expert's $x"
  awk -v p="$(value "$one" hdee "hdee.$ens.posterior.news")" -v x="$x" 'BEGIN {d = p - x; exit !(d < 1e-9 && d > -1e-9)}' \
    || fail "$ens: posterior is not the expert's $x"
  [ "$(value "$one" hdee "hdee.$ens.prior.news")" = "1" ] || fail "$ens: a lone expert's prior is not 1"
done

# Ctrl-C during training: the run ends interrupted, no run is left "running".
"$tw" --db "$db" run "$work/hdee.toml" --data-root "$work" --set train.steps=100000 --set run.name=hdee-stop \
  > "$work/stop.log" 2>&1 &
pid=$!
for _ in $(seq 600); do grep -q "step" "$work/stop.log" && break; sleep 0.1; done
kill -INT "$pid"
wait "$pid" && fail "an interrupted run exited 0"
list="$("$tw" --db "$db" runs list)"
grep "hdee-stop" <<<"$list" | grep -q interrupted || fail "the stopped run is not interrupted: $("$tw" --db "$db" runs list)"
grep -q running <<<"$list" && fail "a run is left running"

# Checkpoints and resume: every expert checkpoints every 50 steps (and its last step);
# the coordinator is SIGKILLed once a checkpoint is stored, the run shows interrupted, and --resume
# goes on with each expert from its own latest checkpoint (experts train different step counts and
# never meet, so there is no step common to all). The figures equal an uninterrupted run's and no
# (node, step, metric) is stored twice.
py=/usr/bin/python3
ck=(--set train.steps=300 --set train.ckpt_every=50 --set run.threads=1)
run "${ck[@]}" --set run.name=hdee-ck-ref > "$work/ck-ref.log" 2>&1 || fail "the uninterrupted run failed: $(tail "$work/ck-ref.log")"
ref="$(last_id)"
"$tw" --db "$db" run "$work/hdee.toml" --data-root "$work" "${ck[@]}" --set run.name=hdee-ck > "$work/ck.log" 2>&1 &
pid=$!
ck_rows() { "$py" -c "import sqlite3,sys
try: print(sqlite3.connect(sys.argv[1]).execute('SELECT COUNT(*) FROM metrics m JOIN runs r ON r.id = m.run_id WHERE r.name = ? AND m.name = \"ckpt.bytes\"', (sys.argv[2],)).fetchone()[0])
except sqlite3.Error: print(0)" "$db" "$1"; }
for _ in $(seq 1 600); do [ "$(ck_rows hdee-ck)" -ge 3 ] && break; sleep 0.05; done
kill -KILL "$pid"; wait "$pid" 2>/dev/null || true
id="$("$tw" --db "$db" runs list | awk '$2 == "hdee-ck" {print $1}')"
[ "$("$tw" --db "$db" runs list | awk -v i="$id" '$1 == i {print $3}')" = interrupted ] ||
  fail "the killed HDEE run is not interrupted: $("$tw" --db "$db" runs list)"
out="$("$tw" --db "$db" run --resume "$id" --data-root "$work" 2>&1)" || fail "the HDEE resume failed: $out"
grep -q "run $id resumes: each expert from its own latest checkpoint" <<<"$out" || fail "no per-expert resume: $out"
grep -Eq "^  [^ ]+ +at step [1-9][0-9]*$" <<<"$out" || fail "no expert resumed from a checkpoint: $out"
grep -q "run $id finished" <<<"$out" || fail "the resumed HDEE run did not finish: $out"
figures() { "$py" -c "import sqlite3,sys
c = sqlite3.connect(sys.argv[1])
for r in c.execute('SELECT node, step, name, value FROM metrics WHERE run_id = ? AND (name IN (\"train.loss\", \"val.loss\") OR node = \"hdee\") ORDER BY node, step, name', (int(sys.argv[2]),)): print(*r)" "$db" "$1"; }
twice() { "$py" -c "import sqlite3,sys
c = sqlite3.connect(sys.argv[1])
for r in c.execute('SELECT node, step, name FROM metrics WHERE run_id = ? GROUP BY node, step, name HAVING COUNT(*) > 1', (int(sys.argv[2]),)): print(*r)" "$db" "$1"; }
[ -z "$(twice "$id")" ] || fail "the resumed HDEE run stored rows twice: $(twice "$id" | head)"
want="$(figures "$ref")" got="$(figures "$id")"
[ "$(wc -l <<<"$want")" -gt 1500 ] || fail "too few figures to compare: $(wc -l <<<"$want")"
[ "$want" = "$got" ] || fail "the resumed HDEE run differs from the uninterrupted one: $(diff <(echo "$want") <(echo "$got") | head -20)"

# The alias wants an [hdee] section.
sed '/^\[hdee\]/,$d' "$work/hdee.toml" > "$work/plain.toml"
"$tw" --db "$db" hdee "$work/plain.toml" --data-root "$work" > "$work/plain.log" 2>&1 && fail "hdee ran a layout without [hdee]"
grep -q "needs an \[hdee\] section" "$work/plain.log" || fail "no reason given: $(cat "$work/plain.log")"
echo "ok"
