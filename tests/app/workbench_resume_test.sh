#!/usr/bin/env bash
# Resume and shutdown in the workbench (Xvfb): SIGTERM closes it like its window's close button, and the run it
# started is stored interrupted; `--resume RUN` (what History's Resume button calls) then continues
# that run to the end as the same run, without storing any (node, step, metric) twice.
# Usage: workbench_resume_test.sh PATH_TO_THINWIRE PATH_TO_WORKBENCH
source "$(dirname "$0")/harness.sh"
wb="$2"
pid=""
at_exit '[ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null'
command -v xvfb-run >/dev/null || fail "xvfb-run is missing (Debian package xvfb; scripts/setup.sh installs it)"

micro_corpus "$work/corpus"
{ micro_tables "" train.steps=1500 train.ckpt_every=40
  printf '[outer]\nalgorithm = "ddp"\nreplicas = 2\n[cluster]\nmode = "threads"\n[run]\nthreads = 1\n'; } > "$work/micro.toml"
"$tw" --db "$work/prep.db" run "$work/micro.toml" --data-root "$work" --set train.steps=2 >/dev/null  # the data, once
count() {  # SQL → its one number
  "$py" -c "import sqlite3,sys
try: print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0] or 0)
except sqlite3.Error: print(0)" "$db" "$1"
}

# The workbench starts the layout; once a checkpoint is stored, SIGTERM.
xvfb-run -a -s "-screen 0 1280x800x24" sh -c 'exec "$0" --db "$1" --data-root "$2" --layout "$2/micro.toml" --start --width 1280 --height 800 & echo $! > "$2/wb.pid"; wait' \
  "$wb" "$db" "$work" >"$work/wb.log" 2>&1 &
xvfb=$!
for _ in $(seq 1 600); do
  [ -s "$work/wb.pid" ] && [ "$(count "SELECT COUNT(*) FROM metrics WHERE name = 'ckpt.bytes'")" -ge 2 ] && break
  sleep 0.05
done
pid="$(cat "$work/wb.pid")"
[ "$(count "SELECT COUNT(*) FROM metrics WHERE name = 'ckpt.bytes'")" -ge 2 ] || fail "no checkpoint stored: $(tail -3 "$work/wb.log")"
kill -TERM "$pid"
wait "$xvfb" || true
pid=""
status="$("$tw" --db "$db" runs list | awk '$1 == 1 {print $3}')"
[ "$status" = interrupted ] || fail "after SIGTERM the workbench's run is $status, not interrupted"
stopped="$(count "SELECT MAX(step) FROM metrics WHERE run_id = 1")"
[ "$stopped" -lt 1500 ] || fail "the run finished before SIGTERM"

# --resume: the same run goes on to the end; once the store has it finished, SIGTERM closes the
# workbench (for as long as the run takes, however busy the machine: no deadline).
xvfb-run -a -s "-screen 0 1280x800x24" sh -c 'exec "$0" --db "$1" --data-root "$2" --resume 1 --width 1280 --height 800 & echo $! > "$2/wb2.pid"; wait' \
  "$wb" "$db" "$work" >"$work/wb2.log" 2>&1 &
xvfb=$!
until [ "$(count "SELECT status = 'finished' FROM runs WHERE id = 1")" = 1 ]; do
  kill -0 "$xvfb" 2>/dev/null || fail "workbench --resume ended before its run: $(tail -3 "$work/wb2.log")"
  sleep 0.2
done
pid="$(cat "$work/wb2.pid")"
kill -TERM "$pid"
wait "$xvfb" || fail "workbench --resume: $(tail -3 "$work/wb2.log")"
pid=""
status="$("$tw" --db "$db" runs list | awk '$1 == 1 {print $3}')"
[ "$status" = finished ] || fail "the resumed run is $status: $("$tw" --db "$db" runs show 1 | head -3)"
[ "$(count "SELECT MAX(step) FROM metrics WHERE run_id = 1 AND name = 'train.loss'")" = 1500 ] || fail "the resumed run did not reach step 1500"
[ "$(count "SELECT COUNT(*) FROM (SELECT 1 FROM metrics WHERE run_id = 1 GROUP BY node, step, name HAVING COUNT(*) > 1)")" = 0 ] ||
  fail "the resumed run stored a (node, step, metric) twice"
[ "$(count "SELECT COUNT(*) FROM runs")" = 1 ] || fail "the resume made a new run"
echo "workbench_resume_test: ok (stopped at step $stopped, resumed to 1500)"
