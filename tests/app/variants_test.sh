#!/usr/bin/env bash
# Layout variants piece by piece, on the micro model: `run --variant NAME` runs that variant only;
# an unknown name is an error that lists the file's variants (run, plan and data prepare alike);
# a variant whose config is refused (an unknown key) is reported, the others still run and
# finish, and the exit status is non-zero after a table naming the refused variant and why.
# Usage: variants_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"

micro_corpus "$work/corpus"
{ micro_tables; cat <<'TOML'; } > "$work/v.toml"
[run]
name = "v"
[outer]
algorithm = "diloco"
replicas = 2
inner_steps = 10
[cluster]
mode = "threads"
[variants]
a_first = ["outer.lr=0.7"]
b_bad = ["outer.no_such_knob=3"]
c_last = ["outer.lr=0.5"]
TOML
names() { sqlite3 "$db" "SELECT name || ':' || status FROM runs ORDER BY id" | tr '\n' ' '; }

# One variant.
out="$("$tw" --db "$db" run "$work/v.toml" --data-root "$work" --variant c_last 2>&1)" || fail "--variant c_last: $out"
[ "$(names)" = "v-c_last:finished " ] || fail "--variant c_last stored: $(names)"

# An unknown name, for each command that takes --variant: the error lists the file's variants.
for cmd in run plan "data prepare"; do
  set +e
  # shellcheck disable=SC2086
  msg="$("$tw" --db "$db" $cmd "$work/v.toml" --variant a_frist 2>&1)"
  rc=$?
  set -e
  [ "$rc" -ne 0 ] || fail "$cmd --variant a_frist exited 0: $msg"
  grep -q "variant a_frist: .*v.toml has the variants a_first, b_bad, c_last" <<<"$msg" || fail "$cmd: $msg"
done
[ "$(names)" = "v-c_last:finished " ] || fail "an unknown variant ran something: $(names)"

# Every variant: b_bad is refused, a_first and c_last still run and finish; exit non-zero, and the
# table at the end names b_bad with its reason.
set +e
out="$("$tw" --db "$db" run "$work/v.toml" --data-root "$work" 2>&1)"
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "a launch with a refused variant exited 0: $out"
[ "$(names)" = "v-c_last:finished v-a_first:finished v-c_last:finished " ] || fail "runs stored: $(names)"$'\n'"$out"
table="$(sed -n '/run(s) of .*did not finish:/,$p' <<<"$out")"
[ -n "$table" ] || fail "no table of what failed: $out"
grep -Eq "^  b_bad +.*outer.no_such_knob: unknown key" <<<"$table" || fail "the table does not name b_bad and why: $table"
! grep -Eq "^  (a_first|c_last|v-a_first|v-c_last) " <<<"$table" || fail "a finished run is in the table: $table"
echo ok
