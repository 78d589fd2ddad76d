#!/usr/bin/env bash
# The workbench's headless options refuse what they cannot do, with a clear message and a non-zero
# exit, before any window opens (no display needed): a missing --db (never created empty), a run
# id the store does not have, a misspelt --tab, a file that is no run store.
# Usage: workbench_refusals_test.sh PATH_TO_THINWIRE PATH_TO_WORKBENCH
source "$(dirname "$0")/harness.sh"
wb="$2"
micro_corpus "$work/corpus"
{ micro_tables; printf '[run]\nname = "one"\n'; } > "$work/one.toml"
"$tw" --db "$work/runs.db" run "$work/one.toml" --data-root "$work" --set train.steps=2 >/dev/null

refused() {  # refused PATTERN ARGS...: the workbench exits non-zero and says PATTERN on stderr
  local pattern="$1" out rc
  shift
  set +e
  out="$(DISPLAY= timeout 20 "$wb" "$@" 2>&1 >/dev/null)"
  rc=$?
  set -e
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "$* exited $rc: $out"
  grep -q -- "$pattern" <<<"$out" || fail "$*: expected '$pattern', got: $out"
}
refused "--db $work/missing.db does not exist" --db "$work/missing.db" --open 1 --screenshot "$work/a.png"
refused "--db $work/missing.db does not exist" --db "$work/missing.db" --screenshot "$work/a.png"
[ ! -e "$work/missing.db" ] || fail "a missing store was created"
refused "run 9 is not in $work/runs.db" --db "$work/runs.db" --open 1 --open 9 --screenshot "$work/a.png"
refused "run 9 is not in" --db "$work/runs.db" --resume 9 --frames 1
refused '--tab "Histroy" is not a tab (Plots, "Bytes and time", Plan or History)' --db "$work/runs.db" --tab Histroy \
  --screenshot "$work/a.png"
echo "not a database" > "$work/text.db"
refused "text.db" --db "$work/text.db" --open 1 --screenshot "$work/a.png"
[ ! -e "$work/a.png" ] || fail "a refused screenshot wrote a PNG"
echo ok
