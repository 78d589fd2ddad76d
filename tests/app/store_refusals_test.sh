#!/usr/bin/env bash
# The run store is never destroyed, through the binary:
#  * `runs export --out` (with --force), `runs export --sqlite` and `report --out` whose target is the
#    store or a file SQLite keeps for it (-wal, -shm, -journal), spelt as itself, ./, a/../, a
#    symlink or a hard link, are refused naming both paths, and the store keeps every row;
#  * another program's database with a `runs` table, and one with only a `runs` view, are refused
#    by `runs list` and `run` with their bytes and modification time unchanged and no -wal made;
#  * a store with 4 KiB of random bytes written into its middle (integrity_check fails) is refused
#    naming quick_check's first problem, before anything is written to it.
# Usage: store_refusals_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"
micro_corpus "$work/corpus"
micro_tables > "$work/micro.toml"
(cd "$work" && "$tw" --db "$db" train micro.toml --set train.steps=10 > /dev/null) || fail "the micro run failed"
sql() { $py -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$@"; }
rows="$(sql "$db" "SELECT COUNT(*) FROM metrics")"
[ "$rows" -gt 0 ] || fail "the micro run stored no rows"
# A fingerprint of what the store holds (its bytes change as SQLite checkpoints; its rows must not).
content() { sql "$db" "SELECT COUNT(*) || '/' || SUM(value) FROM metrics"; }
before="$(content)"

# 1. Outputs onto the store, however spelt. Run from the store's folder so relative spellings reach it.
mkdir -p "$work/sub"
ln -s runs.db "$work/link.csv"
ln "$db" "$work/hard.csv"
refused() {  # expected message part, command...
  local want="$1" out rc
  shift
  set +e; out="$(cd "$work" && "$tw" --db runs.db "$@" 2>&1)"; rc=$?; set -e
  [ "$rc" -ne 0 ] || fail "'$*' was not refused: $out"
  grep -q "refusing to write .*$want.*run store runs.db" <<<"$out" || fail "'$*' did not name both paths: $out"
  [ "$(content)" = "$before" ] || fail "'$*' changed the store's rows"
}
for target in runs.db ./runs.db sub/../runs.db "$db" link.csv hard.csv runs.db-wal runs.db-shm runs.db-journal; do
  refused "" runs export 1 --out "$target" --force
done
refused "runs.db-journal" runs export 1 --sqlite runs.db-journal
refused "runs.db" report 1 --out runs.db --force
"$tw" --db "$db" runs export 1 --out "$work/fine.csv" --force > /dev/null 2>&1 || fail "an export beside the store failed"
[ "$(grep -c ',train.loss,' "$work/fine.csv")" -eq 10 ] || fail "the export beside the store lacks rows"
[ "$(sql "$db" "PRAGMA integrity_check")" = ok ] || fail "the store is damaged after the refusals"

# 2 and 3. Files that are not thinwire's store: refused, untouched.
untouched() {  # file, expected message part
  local f="$1" want="$2" sum stamp out rc args
  sum="$(sha256sum < "$f")"; stamp="$(stat -c %Y.%y "$f")"
  for args in "runs list" "runs show 1" "run micro.toml --set train.steps=2"; do
    set +e; out="$(cd "$work" && "$tw" --db "$f" $args 2>&1)"; rc=$?; set -e
    [ "$rc" -ne 0 ] || fail "'$args' accepted $f"
    grep -qF "$want" <<<"$out" || fail "'$args' on $f: $out"
    grep -qF "$f" <<<"$out" || fail "'$args' did not name $f: $out"
  done
  [ "$(sha256sum < "$f")" = "$sum" ] || fail "$f changed"
  [ "$(stat -c %Y.%y "$f")" = "$stamp" ] || fail "$f was written (modification time)"
  [ ! -e "$f-wal" ] || fail "$f was switched to WAL"
}
$py - "$work/runs_table.db" "$work/runs_view.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("CREATE TABLE runs(id INTEGER PRIMARY KEY, who TEXT)")
c.execute("INSERT INTO runs VALUES (1, 'marathon')"); c.commit(); c.close()
c = sqlite3.connect(sys.argv[2]); c.execute("CREATE VIEW runs AS SELECT 1 AS id, 'x' AS name"); c.commit(); c.close()
PY
untouched "$work/runs_table.db" "is not a thinwire run store (it holds the table runs under user_version 0"
untouched "$work/runs_view.db" "is not a thinwire run store (it holds the view runs"

cp "$db" "$work/damaged.db"
$py - "$work/damaged.db" <<'PY'
import random, sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA journal_mode=DELETE"); c.close()  # one file, no -wal
data = bytearray(open(sys.argv[1], "rb").read())
random.seed(7)
mid = len(data) // 2
data[mid:mid + 4096] = bytes(random.getrandbits(8) for _ in range(4096))
open(sys.argv[1], "wb").write(data)
PY
check="$(sql "$work/damaged.db" "PRAGMA integrity_check" 2>&1 || true)"
[ "$check" != ok ] || fail "the damage went unnoticed by integrity_check"
untouched "$work/damaged.db" "is damaged: PRAGMA quick_check reports: "
echo "ok"
