#!/usr/bin/env bash
# Time-budgeted rounds through the CLI (docs/time_budget.md): DiLoCo, 2 replicas on
# threads, replica 1 at node_speed 0.5, outer.round_time_s = four fast steps' modelled time. The slow
# replica runs 2 steps per round (half the train.loss rows), both replicas' clocks are equal at every
# round's end, the fast one no longer waits; with equal speeds and a budget of H steps the run is the
# plain run to the last bit (losses and clocks); a checkpointed run whose coordinator is SIGKILLed
# resumes after a common round, each replica at its own step, to the uninterrupted run's rows; bad
# settings are refused naming the key.
# Usage: time_budget_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"

micro_corpus "$work/corpus"
source "$(dirname "$0")/flops_micro.sh"
flops_micro_layout 4
four=0.117497088  # 4 × 0.029374272: exactly four fast steps (×4 is exact in binary)

out="$(run --set run.name=budget --set 'compute.node_speed=[1.0, 0.5]' --set outer.round_time_s=$four)" \
  || fail "budgeted run failed: $out"
grep -q "finished" <<<"$out" || fail "budgeted run did not finish: $out"
c="$(csv budget)"
n0="$(awk -F, '$7 == "train.loss" && $2 == "replica-0"' <<<"$c" | wc -l)"
n1="$(awk -F, '$7 == "train.loss" && $2 == "replica-1"' <<<"$c" | wc -l)"
[ "$n0" -eq 20 ] && [ "$n1" -eq 10 ] || fail "train.loss rows: replica-0 $n0 (want 20), replica-1 $n1 (want 10)"
# Five rounds each; at every round the two clocks (the records' simulated time) are equal.
awk -F, '$7 == "round.exposed_comm_s" {t[$2 "," $4] = $6; n[$2]++}
         END {for (k = 0; k < 5; k++) if (t["replica-0," k] == "" || t["replica-0," k] != t["replica-1," k]) bad = 1
              exit (bad || n["replica-0"] != 5 || n["replica-1"] != 5)}' <<<"$c" \
  || fail "round-end clocks differ or rounds missing: $(awk -F, '$7 == "round.exposed_comm_s"' <<<"$c")"
# Both replicas compute the round's budget: four fast or two slow steps, equal to rounding.
awk -F, '$7 == "round.compute_s" {v[$2 "," $4] = $8}
         END {for (k = 0; k < 5; k++) {d = v["replica-0," k] - v["replica-1," k]; if (d * d > 1e-24 || v["replica-0," k] - 0.117497088 > 1e-12 || 0.117497088 - v["replica-0," k] > 1e-12) bad = 1}
              exit bad}' <<<"$c" \
  || fail "round.compute_s is not the budget on both: $(awk -F, '$7 == "round.compute_s"' <<<"$c")"
# The slow replica's steps take exactly twice the fast one's.
awk -F, '$7 == "train.compute_s" && $2 == "replica-1" && $8 != 0.058748544 {bad = 1} END {exit bad}' <<<"$c" \
  || fail "replica-1's step is not 0.058748544 s"

# Re-timing on the recorded network reproduces every recorded clock (rounds at different steps).
rt="$("$tw" --db "$db" runs retime "$(id_of budget)" --network home-20m --rounds)"
awk 'NF == 4 && $1 ~ /^replica-/ && $4 !~ /%/ {n++; if ($3 != $4) bad = 1} END {exit (bad || n < 4)}' <<<"$rt" \
  || fail "retime of a budgeted run differs from its recorded clocks: $rt"

# Fixed H = 4 with the same slow node: every round the fast replica waits four fast steps longer than
# the slow one (which only waits for the exchange); with the budget both wait the same (the exchange).
out="$(run --set run.name=fixed --set 'compute.node_speed=[1.0, 0.5]')" || fail "fixed-H run failed: $out"
waits() {  # per round: replica-0's exposed time minus replica-1's
  awk -F, '$7 == "round.exposed_comm_s" {v[$2 "," $4] = $8}
           END {for (k = 0; k < 5; k++) printf "%.9f\n", v["replica-0," k] - v["replica-1," k]}'
}
[ "$(csv fixed | waits | sort -u)" = "0.117497088" ] || fail "fixed H: the fast replica should wait 4 fast steps more: $(csv fixed | waits)"
[ "$(waits <<<"$c" | sed 's/^-//' | sort -u)" = "0.000000000" ] || fail "budget: both should wait alike: $(waits <<<"$c")"

# Equal speeds, a budget of exactly H steps: the plain run to the last bit (weights are exactly 1).
rows() { csv "$1" | awk -F, 'NR > 1 && $7 !~ /real|wall/ {print $2, $3, $4, $6, $7, $8}' | sort; }
out="$(run --set run.name=plain)" || fail "plain run failed: $out"
out="$(run --set run.name=budget-equal --set outer.round_time_s=$four)" || fail "equal budget run failed: $out"
a="$(rows plain)"; b="$(rows budget-equal)"
[ "$(wc -l <<<"$a")" -gt 100 ] || fail "too few rows: $a"
[ "$a" = "$b" ] || fail "equal speeds with a budget of H steps differ from the plain run: $(diff <(echo "$a") <(echo "$b") | head)"

# Checkpoints and resume: with each replica running its own H, checkpoints are taken
# every K rounds on both (K rounds of the configured H cover train.ckpt_every steps: here 10 rounds,
# replica 0 at steps 40, 80, …, replica 1 at 20, 40, …). The coordinator SIGKILLed once both have one,
# the run resumes after the latest round both checkpointed, each replica at its own step, and every
# row equals the uninterrupted run's (losses, clocks, bytes), none stored twice.
py=/usr/bin/python3
ck=(--set 'compute.node_speed=[1.0, 0.5]' --set outer.round_time_s=$four --set train.steps=1200 --set train.ckpt_every=40)
out="$(run "${ck[@]}" --set run.name=ck-ref)" || fail "the uninterrupted checkpointed run failed: $out"
(cd "$work" && exec "$tw" --db "$db" run micro.toml "${ck[@]}" --set run.name=ck > "$work/ck.log" 2>&1) &
pid=$!
common() { "$py" -c "import sqlite3,sys
try: r = sqlite3.connect(sys.argv[1]).execute('SELECT m.outer_step FROM metrics m JOIN runs r ON r.id = m.run_id WHERE r.name = \"ck\" AND m.name = \"ckpt.bytes\" GROUP BY m.outer_step HAVING COUNT(DISTINCT m.node) = 2').fetchone(); print(r[0] if r else '')
except sqlite3.Error: print('')" "$db"; }
for _ in $(seq 1 600); do [ -n "$(common)" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
kill -KILL "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
[ -n "$(common)" ] || fail "no round both replicas checkpointed before the kill: $(tail -3 "$work/ck.log")"
id="$(id_of ck)"
[ "$("$tw" --db "$db" runs list | awk -v i="$id" '$1 == i {print $3}')" = interrupted ] ||
  fail "the killed budgeted run is not interrupted (did it finish first?): $("$tw" --db "$db" runs list)"
out="$(cd "$work" && "$tw" --db "$db" run --resume "$id" 2>&1)" || fail "the budgeted resume failed: $out"
grep -q "run $id resumes: after the latest round every replica checkpointed, each at its own step" <<<"$out" ||
  fail "no per-replica resume: $out"
s0="$(awk '$1 == "replica-0" && $2 == "at" {print $4}' <<<"$out")"; s1="$(awk '$1 == "replica-1" && $2 == "at" {print $4}' <<<"$out")"
[ -n "$s0" ] && [ "$s0" -gt 0 ] && [ "$s0" -eq $((2 * s1)) ] || fail "replica 0 should resume at twice replica 1's step: $out"
grep -q "run $id finished" <<<"$out" || fail "the resumed budgeted run did not finish: $out"
twice="$("$py" -c "import sqlite3,sys
for r in sqlite3.connect(sys.argv[1]).execute('SELECT node, step, name FROM metrics WHERE run_id = ? GROUP BY node, step, name HAVING COUNT(*) > 1', (int(sys.argv[2]),)): print(*r)" "$db" "$id")"
[ -z "$twice" ] || fail "the resumed budgeted run stored rows twice: $(head <<<"$twice")"
# (bytes.outer.sent is left out: a resumed node's counter adds its start-up weight check again,
# 8 bytes, docs/checkpoints.md "Limits".)
keep() { awk '$5 ~ /^(train.loss|val.loss|round.bytes|round.exposed_comm_s|train.compute_s)$/'; }
a="$(rows ck-ref | keep)"; b="$(rows ck | keep)"
[ "$(wc -l <<<"$a")" -gt 1000 ] || fail "too few rows: $(wc -l <<<"$a")"
[ "$a" = "$b" ] || fail "resumed from steps $s0 / $s1, the budgeted run differs from the uninterrupted one: $(diff <(echo "$a") <(echo "$b") | head)"

# Refusals, each naming the key.
for bad in "compute.model=measured" "outer.algorithm=noloco" "outer.algorithm=streaming_diloco" "train.steps=18"; do
  rc=0; o="$(run --set outer.round_time_s=$four --set "$bad" 2>&1)" || rc=$?
  [ "$rc" -ne 0 ] && grep -q "outer.round_time_s" <<<"$o" || fail "--set $bad with a budget was not refused by key: $o"
done
rc=0; o="$(run --set outer.round_time_s=0.01 2>&1)" || rc=$?
[ "$rc" -ne 0 ] && grep -q "outer.round_time_s .* is shorter than replica 0's step" <<<"$o" \
  || fail "a budget below one step was not refused: $o"
echo "time budget: ok"
