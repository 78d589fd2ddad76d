#!/usr/bin/env bash
# The CLI forgives and the store is never damaged, through the binary:
#  * --version; --db accepted after the subcommand as before it;
#  * read-only commands (runs list/show/export, report) never create a database: a mistyped --db is
#    an error and no file appears;
#  * runs list filters by status, group (as the layout named it), algorithm and name, in full names;
#  * report --group takes the layout's name for its latest launch;
#  * runs export --out refuses an existing file without --force, and a failed export (no such run)
#    leaves the file as it was;
#  * another application's SQLite file, and a store with a newer schema, are refused with their
#    bytes untouched (no thinwire tables added, no switch to WAL);
#  * runs delete asks, needs --yes without a terminal, and deletes only what it names;
#  * progress lines never show nan, carry an ETA, and the last one agrees with the summary table;
#  * a run whose last steps are never synchronised is warned about, and the warning is stored;
#  * runs show says which CPU and BLAS library the nodes computed on;
#  * runs compare shows names in full, bytes per replica and simulated time;
#  * runs work from any directory: the default data root is $XDG_CACHE_HOME/thinwire, and the stored
#    config does not depend on where that is.
# Usage: cli_forgives_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"

micro_corpus "$work/corpus"
source "$(dirname "$0")/flops_micro.sh"
flops_micro_layout 5

v="$("$tw" --version)"
[[ "$v" =~ ^thinwire\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "--version printed '$v'"

# A mistyped --db: an error naming the file, and no file created, wherever --db stands.
for args in "--db $work/typo.db runs list" "runs list --db $work/typo.db" "runs show 1 --db $work/typo.db" \
            "--db $work/typo.db runs export 1" "--db $work/typo.db report 1"; do
  set +e; out="$("$tw" $args 2>&1)"; rc=$?; set -e
  [ "$rc" -ne 0 ] || fail "'$args' succeeded on a missing store"
  grep -q "typo.db': no such file" <<<"$out" || fail "'$args' did not name the missing store: $out"
  [ ! -e "$work/typo.db" ] || fail "'$args' created $work/typo.db"
done

# Two runs of one layout (group micro@...), DiLoCo and DDP.
out="$(run --set train.steps=10 --set train.log_every=5 --set run.name=alpha-diloco-long-name-kept-in-full)" ||
  fail "first run failed"
# Progress lines: never "nan", and the last one of replica-0 shows the summary table's figures.
! grep -qi "nan" <<<"$out" || fail "a progress line shows nan: $out"
last="$(grep -E '^replica-0 +step' <<<"$out" | tail -1)"
table_val="$(awk '$1 == "replica-0" && $2 == 10 {print $4}' <<<"$out")"
[ -n "$table_val" ] && grep -q "val $table_val " <<<"$last" || fail "the last progress line ($last) lacks the table's val $table_val"
grep -q "eta" <<<"$(grep -E '^replica-0 +step +5/' <<<"$out")" || fail "no ETA on a progress line: $out"
run --set train.steps=10 --set outer.algorithm=ddp --set run.name=beta-ddp > /dev/null || fail "second run failed"
list="$("$tw" runs list --db "$db")"  # --db after the subcommand
grep -q "alpha-diloco-long-name-kept-in-full" <<<"$list" || fail "runs list cut a name: $list"
only() { "$tw" --db "$db" runs list "$@" | awk '$1 ~ /^[0-9]+$/ {print $2}' | tr '\n' ' '; }
[ "$(only --algorithm ddp)" = "beta-ddp " ] || fail "--algorithm ddp: $(only --algorithm ddp)"
[ "$(only --name alpha)" = "alpha-diloco-long-name-kept-in-full " ] || fail "--name alpha: $(only --name alpha)"
[ "$(only --group micro)" = "alpha-diloco-long-name-kept-in-full beta-ddp " ] || fail "--group micro: $(only --group micro)"
[ "$(only --status failed)" = "" ] || fail "--status failed: $(only --status failed)"
set +e; out="$("$tw" --db "$db" runs list --status finsihed 2>&1)"; rc=$?; set -e
[ "$rc" -ne 0 ] && grep -q "not a status" <<<"$out" || fail "a mistyped status was accepted: $out"

# Every run records what its nodes computed on (CPU model and the BLAS library mapped).
cpu="$(grep -m1 "model name" /proc/cpuinfo | sed 's/.*: *//')"
grep -q "computed on ${cpu:--}, BLAS .*: every node" <<<"$("$tw" --db "$db" runs show 1)" ||
  fail "runs show lacks the nodes' platform: $("$tw" --db "$db" runs show 1 | grep -i computed)"

# runs compare: names in full, bytes per replica as the store's counters sum them, simulated time.
cmp="$("$tw" --db "$db" runs compare 1 2)"
grep -q "1 alpha-diloco-long-name-kept-in-full" <<<"$cmp" || fail "runs compare cut a name: $cmp"
want="$("$tw" --db "$db" runs export 1 --format csv | awk -F, '$7 ~ /^bytes\.(outer|intra|stage)\.sent$/ {
  k = $2 FS $7; if (!(k in m) || $8 > m[k]) m[k] = $8 } END {s = 0; for (k in m) s += m[k]; printf "%.0f", s / 2}')"
got="$(awk '/^bytes sent per replica/ {gsub(",", "", $5); print $5}' <<<"$cmp")"
[ -n "$got" ] && [ "$got" = "$want" ] || fail "runs compare: bytes per replica '$got', the counters sum to '$want': $cmp"
grep -Eq "^simulated time +[0-9.]+ s +[0-9.]+ s$" <<<"$cmp" || fail "runs compare lacks simulated times: $cmp"

# report --group by the name the user wrote (the layout's): its latest launch, the second run (each
# `thinwire run` is a launch of its own, stored as micro@<time>).
(cd "$work" && "$tw" --db "$db" report --group micro --out "$work/rep" > /dev/null) || fail "report --group micro failed"
grep -q "beta-ddp" "$work/rep/report.md" || fail "the report of group micro lacks its latest launch's run"
! grep -q "alpha-diloco" "$work/rep/report.md" || fail "the report of group micro holds an earlier launch's run"

# Exports: an existing file is kept unless --force; a failed export never touches it.
echo "keep me" > "$work/keep.csv"
set +e; out="$("$tw" --db "$db" runs export 999 --out "$work/keep.csv" 2>&1)"; rc=$?; set -e
[ "$rc" -ne 0 ] && grep -q "no run with id 999" <<<"$out" || fail "export of a missing run: rc $rc, $out"
[ "$(cat "$work/keep.csv")" = "keep me" ] || fail "a failed export changed keep.csv"
set +e; out="$("$tw" --db "$db" runs export 1 --out "$work/keep.csv" 2>&1)"; rc=$?; set -e
[ "$rc" -ne 0 ] && grep -q "exists; --force replaces it" <<<"$out" || fail "export overwrote keep.csv without --force: $out"
[ "$(cat "$work/keep.csv")" = "keep me" ] || fail "a refused export changed keep.csv"
"$tw" --db "$db" runs export 1 --out "$work/keep.csv" --force 2> /dev/null
[ "$(grep -c ',train.loss,' "$work/keep.csv")" -eq 20 ] || fail "the forced export lacks run 1's 20 train.loss rows"
[ -z "$(ls "$work" | grep 'keep.csv.tmp')" ] || fail "a temporary export file was left: $(ls "$work")"

# Another application's database, and a newer thinwire's store: refused, byte for byte untouched.
$py - "$work/other.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("CREATE TABLE users(id, name)"); c.execute("INSERT INTO users VALUES (1, 'ada')"); c.commit()
PY
cp "$db" "$work/newer.db"
$py - "$work/newer.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA journal_mode=DELETE"); c.execute("PRAGMA user_version=999"); c.commit()
PY
for f in other newer; do
  before="$(sha256sum < "$work/$f.db")"
  for args in "runs list" "run micro.toml --set train.steps=2"; do
    set +e; out="$(cd "$work" && "$tw" --db "$work/$f.db" $args 2>&1)"; rc=$?; set -e
    [ "$rc" -ne 0 ] || fail "'$args' accepted $f.db"
    grep -Eq "is not a thinwire run store|has schema version 999" <<<"$out" || fail "'$args' on $f.db: $out"
  done
  [ "$(sha256sum < "$work/$f.db")" = "$before" ] || fail "$f.db changed"
  [ ! -e "$work/$f.db-wal" ] || fail "$f.db was switched to WAL"
done

# A run whose last steps are never synchronised says so, and the store keeps the warning.
out="$(run --set train.steps=7 --set run.name=tail)" || fail "the run with an unsynced tail failed"
grep -q "warning\|config: train.steps 7 is not a multiple of outer.inner_steps 5: the last 2 steps" <<<"$out" ||
  fail "no warning about the unsynced tail: $out"
grep -q "config .*the last 2 steps are never synchronised" <<<"$("$tw" --db "$db" runs show "$(id_of tail)")" ||
  fail "the unsynced-tail warning is not stored with the run"
"$tw" --db "$db" runs delete "$(id_of tail)" --yes > /dev/null

# Delete: needs --yes without a terminal; deletes only the run named.
set +e; out="$("$tw" --db "$db" runs delete 2 < /dev/null 2>&1)"; rc=$?; set -e
[ "$rc" -ne 0 ] && grep -q "add --yes" <<<"$out" || fail "runs delete without a terminal did not ask for --yes: $out"
[ "$(only)" = "alpha-diloco-long-name-kept-in-full beta-ddp " ] || fail "a refused delete deleted: $(only)"
"$tw" --db "$db" runs delete 2 --yes > /dev/null
[ "$(only)" = "alpha-diloco-long-name-kept-in-full " ] || fail "runs delete 2: left $(only)"
[ "$("$tw" --db "$db" runs export 1 --format csv | grep -c ',train.loss,')" -eq 20 ] || fail "run 1 lost rows"
# Works from any directory (item 5): without --data-root the data root is the per-user cache folder
# ($XDG_CACHE_HOME/thinwire), the layout file is found from the working directory, nothing is
# written there, and two machines with different roots store the same config text (and hash).
for x in xdg-a xdg-b; do
  mkdir -p "$work/$x/thinwire" "$work/elsewhere-$x"
  cp -r "$work/corpus" "$work/$x/thinwire/corpus"
  (cd "$work/elsewhere-$x" && env -u THINWIRE_DATA_ROOT XDG_CACHE_HOME="$work/$x" \
    "$tw" --db "$work/anywhere.db" run ../micro.toml --set train.steps=5 --set run.name=anywhere > /dev/null) ||
    fail "a run from another directory with XDG_CACHE_HOME=$work/$x failed"
  [ -z "$(ls -A "$work/elsewhere-$x")" ] || fail "the run wrote into its working directory: $(ls -A "$work/elsewhere-$x")"
  ls "$work/$x/thinwire/cache" | grep -q . || fail "no cache under \$XDG_CACHE_HOME/thinwire"
done
same="$($py -c "import sqlite3; print(len(set(sqlite3.connect('$work/anywhere.db').execute('select config_toml, config_hash from runs').fetchall())))")"
[ "$same" = "1" ] || fail "runs under two data roots stored different configs"
! grep -q "$work" <<<"$($py -c "import sqlite3; print(sqlite3.connect('$work/anywhere.db').execute('select config_toml from runs').fetchone()[0])")" ||
  fail "the stored config holds a machine path"
echo "cli_forgives_test: ok"
