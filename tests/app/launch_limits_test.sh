#!/usr/bin/env bash
# Launch limits through the CLI (coordinator/launch_limits.h): the quickstart asked for 1,024
# replicas as child processes is refused with the figures and both keys before any node process
# is started (no `thinwire node` exec'd, no run stored); a run above cluster.max_local_processes is
# refused naming the key and its value; a small run of child processes still runs and stores its
# launch estimate.
# Usage: launch_limits_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
runs_stored() { "$py" -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from runs").fetchone()[0])' "$db"; }

# 1. The quickstart with 1,024 child processes. Under strace when this machine lets us trace: the
# only programs exec'd are thinwire and, in its place, thinwire-engine, in one process (each node
# would be one more process exec'ing `thinwire-engine node`).
tracer=()
if command -v strace >/dev/null && strace -f -qq -e trace=execve -o /dev/null true 2>/dev/null; then
  tracer=(strace -f -qq -e trace=execve -o "$work/execve.log")
else
  echo "note: strace unavailable or not permitted here; the exec count is not checked"
fi
start=$SECONDS
set +e
out="$(cd "$work" && timeout -k 5 60 "${tracer[@]}" "$tw" --db "$db" run "$repo/experiments/quickstart.toml" \
  --set outer.replicas=1024 --set cluster.mode=local 2>&1)"
rc=$?
set -e
echo "refused in $((SECONDS - start)) s"
[ "$rc" = 1 ] || fail "1024 local replicas: exit $rc, expected 1: $out"
grep -q "launch refused before any node started: 1024 local processes, more than cluster.max_local_processes = 64" <<<"$out" ||
  fail "the cap is not named: $out"
grep -Eq "1024 local processes × ~[0-9.]+ [MG]iB estimated = [0-9.]+ [GT]iB, more than the [0-9.]+ [KMGT]iB available \((MemAvailable|cgroup [a-z_.]+)\)" <<<"$out" ||
  fail "the memory figures are not given: $out"
grep -q 'cluster.memory_check = "warn"' <<<"$out" || fail "the memory override is not named: $out"
grep -q "per node ([0-9]* parameters): weights" <<<"$out" || fail "the estimate's parts are not given: $out"
grep -q "Traceback\|terminate called\|Aborted" <<<"$out" && fail "a crash instead of a refusal: $out"
[ "$(runs_stored)" = 0 ] || fail "a refused launch stored a run"
if [ ${#tracer[@]} -gt 0 ]; then
  execs="$(grep 'execve(' "$work/execve.log" || true)"
  [ "$(wc -l <<<"$execs")" = 2 ] && [ "$(awk '{print $1}' <<<"$execs" | sort -u | wc -l)" = 1 ] &&
    grep -q "execve(\"$(dirname "$tw")/thinwire-engine\"" <<<"$(tail -1 <<<"$execs")" ||
    fail "expected thinwire, then thinwire-engine in its place, and no other process: $(head -5 <<<"$execs")"
fi

# A micro layout on a small text folder (tests/app/micro_corpus.sh).
micro_corpus "$work/corpus"
{ micro_tables; printf '[outer]\nalgorithm = "diloco"\nreplicas = 2\ninner_steps = 5\n[cluster]\nmode = "local"\n'; } > "$work/micro.toml"
run() { (cd "$work" && "$tw" --db "$db" run micro.toml --set train.steps=10 "$@"); }

# 2. Above the cap: refused naming the key and its value, no memory complaint for so small a run.
set +e
out="$(run --set outer.replicas=3 --set cluster.max_local_processes=2 2>&1)"
rc=$?
set -e
[ "$rc" = 1 ] || fail "3 processes over a cap of 2: exit $rc: $out"
grep -q "3 local processes, more than cluster.max_local_processes = 2; lower outer.replicas" <<<"$out" ||
  fail "the cap of 2 is not named: $out"
grep -q "more than the .* available" <<<"$out" && fail "a micro run of 3 processes does not fit in memory? $out"
[ "$(runs_stored)" = 0 ] || fail "a refused launch stored a run"

# 3. A small run of child processes runs, and its launch estimate is stored with it.
out="$(run --set run.name=small-local 2>&1)" || fail "a 2-process micro run did not run: $out"
grep -q "finished" <<<"$out" || fail "the small run did not finish: $out"
estimate="$("$py" -c 'import sqlite3, sys; r = sqlite3.connect(sys.argv[1]).execute(
  "select text from events where kind = '"'launch'"' order by rowid").fetchall(); print(r[0][0] if r else "")' "$db")"
grep -q "^2 local processes × ~[0-9.]* MiB estimated" <<<"$estimate" || fail "no launch estimate stored: '$estimate'"
echo "stored: $estimate"
echo "launch limits: OK"
