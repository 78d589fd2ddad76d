#!/usr/bin/env bash
# Measured figures (README "Faults"), printed as a table:
#  1. a replica process SIGKILLed mid-run (local processes, 3 DiLoCo replicas of the tiny model,
#     ring): wall seconds of the round in which it was lost (the wait that found it, then the redo
#     among the survivors: round.loss_wall_s) for two heartbeat timeouts, and that round's simulated
#     cost (the same timeout, charged to the clock, plus the round);
#  2. a spare standing by (cluster.spares = 1) when replica 2's process is SIGKILLed (heartbeat
#     timeout 2 s): wall seconds from replica 2's last stored step to the spare taking its place
#     (node clocks start together within a few ms), the step it takes over at, and its bytes;
#  3. a replica process SIGKILLed with cluster.restart_lost = 1 (heartbeat timeout 2 s): wall
#     seconds from its last stored step to its fresh process taking the state, and the round;
#  4. recovery bytes a rejoining replica receives, per algorithm, for the tiny and small models
#     (a scheduled kill and rejoin on threads), against the model's parameter bytes P·4.
# Usage: scripts/bench_faults.sh [THINWIRE]   (after scripts/setup.sh; Brown from the default data root)
set -euo pipefail
tw="${1:-build/release/app/thinwire}"
tw="$(realpath "$tw")"
work="$(mktemp -d)"
trap 'pkill -KILL -P $$ 2>/dev/null || true; rm -rf "$work"' EXIT
# The quickstart's settings without its variants: tiny model on Brown, flops clock, wan-1g.
cat > "$work/layout.toml" <<TOML
[train]
batch_size = 4
warmup_steps = 30
eval_every = 100
[outer]
algorithm = "diloco"
inner_steps = 15
lr = 0.6
[network]
profile = "wan-1g"
[compute]
model = "flops"
TOML
q() { /usr/bin/python3 -c "import sqlite3,sys; r=sqlite3.connect('$work/f.db').execute(sys.argv[1]).fetchall(); print(r[0][0] if r and r[0][0] is not None else '')" "$1"; }
id_of() { q "select id from runs where name = '$1'"; }
# Runs the layout as run NAME in child processes with 3 replicas, 150 steps and the extra settings;
# once replica 2 has stored 40 steps, SIGKILLs its process (the third node process); waits for the
# run to end and prints its id.
kill_replica_2() {  # name, settings...
  local name="$1" sub n victim=""
  shift
  "$tw" --db "$work/f.db" run "$work/layout.toml" --set outer.replicas=3 --set cluster.mode=local \
    --set train.steps=150 --set run.name="$name" "$@" > "$work/$name.log" 2>&1 &
  sub=$!
  for _ in $(seq 1 900); do
    n="$(q "select count(*) from metrics m join runs r on r.id = m.run_id where r.name = '$name' and m.node = 'replica-2' and m.name = 'train.loss'" 2>/dev/null || true)"
    [ -n "$n" ] && [ "$n" -ge 40 ] && break
    sleep 0.2
  done
  for _ in $(seq 1 50); do victim="$(pgrep -P "$sub" | sort -n | sed -n 3p || true)"; [ -n "$victim" ] && break; sleep 0.1; done
  [ -n "$victim" ] || { echo "no replica-2 process to kill: $(tail -5 "$work/$name.log")" >&2; exit 1; }
  kill -KILL "$victim"
  wait "$sub" || true
  id_of "$name"
}

echo "| heartbeat timeout | round.loss_wall_s (measured) | simulated cost of that round | redone among |"
echo "|---|---|---|---|"
for hb in 2 5; do
  id="$(kill_replica_2 "sigkill-hb$hb" --set cluster.heartbeat_timeout_s=$hb)"
  wall="$(q "select value from metrics where run_id = $id and node = 'replica-0' and name = 'round.loss_wall_s'")"
  step="$(q "select step from metrics where run_id = $id and node = 'replica-0' and name = 'round.loss_wall_s'")"
  comm="$(q "select value from metrics where run_id = $id and node = 'replica-0' and name = 'round.comm_s' and step = $step")"
  printf '| %s s | %.2f s | %s s + %.3f s | replicas 0, 1 (step %s) |\n' "$hb" "$wall" "$hb" "$comm" "$step"
done

echo
echo "| spare | replica 2's last step (wall) | spare takes its place (wall) | death → spare in | after the round at step | state received |"
echo "|---|---|---|---|---|---|"
id="$(kill_replica_2 sigkill-spare --set cluster.spares=1 --set cluster.heartbeat_timeout_s=2)"
last="$(q "select max(wall_s) from metrics where run_id = $id and node = 'replica-2'")"
in="$(q "select wall_s from events where run_id = $id and node = 'spare-0' and kind = 'spare'")"
text="$(q "select text from events where run_id = $id and node = 'spare-0' and kind = 'spare'")"
at="$(grep -o 'round at step [0-9]*' <<<"$text" | awk '{print $4}')"
b="$(grep -o '[0-9]* B$' <<<"$text" | awk '{print $1}')"
printf '| spare-0 | %.2f s | %.2f s | %.2f s | %s | %s B |\n' "$last" "$in" "$(awk -v a="$in" -v b="$last" 'BEGIN {print a - b}')" "$at" "$(printf "%'d" "$b")"

echo
echo "| restarted | replica 2's last step (wall) | fresh process takes the state (wall) | death → back in | after the round at step | state received |"
echo "|---|---|---|---|---|---|"
id="$(kill_replica_2 sigkill-restart --set cluster.restart_lost=1 --set cluster.heartbeat_timeout_s=2)"
text="$(q "select text from events where run_id = $id and node = 'replica-2' and kind = 'rejoin'")"
at="$(grep -o 'round at step [0-9]*' <<<"$text" | awk '{print $4}')"
[ -n "$at" ] || { echo "the restarted replica-2 did not rejoin: $(tail -5 "$work/sigkill-restart.log")"; exit 1; }
# The killed process's rows are those up to the round it rejoined after; a restarted process's wall
# times count from the run's start (NodeRole::rejoin_wall_ms).
last="$(q "select max(wall_s) from metrics where run_id = $id and node = 'replica-2' and step <= $at")"
in="$(q "select wall_s from events where run_id = $id and node = 'replica-2' and kind = 'rejoin'")"
b="$(grep -o '[0-9]* B$' <<<"$text" | awk '{print $1}')"
printf '| replica-2 | %.2f s | %.2f s | %.2f s | %s | %s B |\n' "$last" "$in" "$(awk -v a="$in" -v b="$last" 'BEGIN {print a - b}')" "$at" "$(printf "%'d" "$b")"

echo
echo "| model | parameters P | algorithm | recovery bytes | ÷ P·4 |"
echo "|---|---|---|---|---|"
for preset in tiny small; do
  for algo in diloco sparseloco streaming_diloco noloco demo; do
    name="rejoin-$preset-$algo"
    "$tw" --db "$work/f.db" run "$work/layout.toml" --set outer.algorithm=$algo --set outer.replicas=2 \
      --set model.preset=$preset --set train.steps=12 --set outer.inner_steps=4 --set outer.fragments=2 \
      --set train.batch_size=1 --set train.eval_batches=1 --set train.eval_every=0 \
      --set 'faults.events=["kill 1 at 5 rejoin 6"]' --set run.name=$name > "$work/$name.log" 2>&1 ||
      { echo "$name failed:"; tail -5 "$work/$name.log"; exit 1; }
    id="$(id_of "$name")"
    rec="$(q "select max(value) from metrics where run_id = $id and name = 'bytes.outer.recovery.recv'")"
    p="$("$tw" --db "$work/f.db" runs show "$id" | grep -o 'starts: [0-9]* parameters' | head -1 | awk '{print $2}' || true)"
    printf '| %s | %s | %s | %s | %.3f |\n' "$preset" "$(printf "%'d" "$p")" "$algo" "$(printf "%'d" "${rec%.*}")" \
      "$(awk -v r="$rec" -v p="$p" 'BEGIN {print r / (p * 4)}')"
  done
done
