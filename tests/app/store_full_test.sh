#!/usr/bin/env bash
# A run store on a file system that fills up mid-run: `--db` on a 16 MiB tmpfs, most of it taken
# by a filler file, and a DiLoCo run on threads (2 replicas, micro model) with far more steps than
# the disk holds rows for, as the second of two variants. The run stops early (as a user's stop
# does), exits non-zero, says why; the store holds it as failed with the reason and every row it
# stored, countable with sqlite3 (each node's losses with no gap); no `map::at`; the variant left
# out is named. Needs root to mount the tmpfs: exits 77 (skipped) with the reason when refused.
# Usage: store_full_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"
full="$work/full"
mkdir -p "$full"
at_exit 'stop_children; umount "$full" 2>/dev/null'
if ! err="$(mount -t tmpfs -o size=16m tmpfs "$full" 2>&1)"; then
  echo "SKIP: cannot mount a 16 MiB tmpfs for the full disk ($err)"
  exit 77
fi
db="$full/runs.db"
# The writer keeps 8 MiB for ending a run (storage/run_writer.h); leave that and 1.5 MiB for rows.
avail_k="$(df -k --output=avail "$full" | tail -1 | tr -d ' ')"
head -c "$(( (avail_k - 8192 - 1536) * 1024 ))" /dev/zero > "$full/filler"

micro_corpus "$work/corpus"
{ micro_tables "" train.steps=100000 train.log_every=1000; cat <<TOML; } > "$work/micro.toml"
[run]
name = "full"
[outer]
algorithm = "diloco"
replicas = 2
inner_steps = 10
[cluster]
mode = "threads"
[variants]
first = ["outer.lr=0.7"]
second = ["outer.lr=0.5"]
TOML

set +e
out="$(cd "$work" && timeout -k 10 60 "$tw" --db "$db" run micro.toml 2>&1)"
rc=$?
set -e
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "the run on a full disk exited $rc: $out"
! grep -q "map::at" <<<"$out" || fail "map::at: $out"
grep -q "run 1 failed after .*: the run store could not be written" <<<"$out" || fail "no failed run with its reason: $out"
grep -q "not run after run 1 ended failed: .*second" <<<"$out" || fail "the variant left out is not named: $out"
grep -Eq "^  replica-0 +[0-9]+ " <<<"$out" || fail "no table row for replica-0: $out"

q() { sqlite3 "$db" "$1"; }
[ "$(q "SELECT COUNT(*) FROM runs")" = 1 ] || fail "runs stored: $(q "SELECT id, name, status FROM runs")"
[ "$(q "SELECT status FROM runs WHERE id = 1")" = failed ] || fail "status: $(q "SELECT status, reason FROM runs")"
reason="$(q "SELECT reason FROM runs WHERE id = 1")"
grep -Eq "the run store could not be written: .*(nearly full|database or disk is full).*(every metric row was stored in the end|[0-9]+ metric rows not stored)" <<<"$reason" ||
  fail "stored reason: $reason"
rows="$(q "SELECT COUNT(*) FROM metrics WHERE run_id = 1")"
[ "$rows" -gt 1000 ] || fail "only $rows metric rows stored"
last="$(q "SELECT MAX(step) FROM metrics WHERE run_id = 1 AND name = 'train.loss'")"
[ "$last" -lt 100000 ] || fail "the run trained all $last steps"
# Every row stored stays: each node's training losses from step 1 to its last, none missing.
gaps="$(q "SELECT node FROM metrics WHERE run_id = 1 AND name = 'train.loss' GROUP BY node
           HAVING COUNT(*) != MAX(step) - MIN(step) + 1 OR MIN(step) != 1")"
[ -z "$gaps" ] || fail "losses missing for $gaps"
list="$("$tw" --db "$db" runs list)"
grep -Eq "^ +1 +full.* +failed " <<<"$list" || fail "runs list: $list"
echo "ok: stopped at step $last with $rows rows stored; $(grep -c . <<<"$out") lines of output"
