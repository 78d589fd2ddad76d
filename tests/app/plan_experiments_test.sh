#!/usr/bin/env bash
# `thinwire plan` reads every experiment file in experiments/: each exits 0, and a file with a
# [variants] table gets one plan (or a named "not planned" line) per variant, under a "== NAME"
# header. `--variant NAME` keeps that variant only; an unknown name is an error that lists the
# file's variants. No data and no training: plans only.
# Usage: plan_experiments_test.sh PATH_TO_THINWIRE EXPERIMENTS_DIR
set -euo pipefail
tw="$1"
dir="$2"
fail() { echo "FAIL: $*" >&2; exit 1; }

n=0
for f in "$dir"/*.toml; do
  n=$((n + 1))
  out="$("$tw" plan "$f" 2>&1)" || fail "plan $f exited non-zero:"$'\n'"$out"
  # The [variants] table's names, read here from the file itself (NAME = [...] lines under it).
  names="$(awk '/^\[/ {in_v = ($0 == "[variants]"); next} in_v && /^[A-Za-z0-9_.]+ *=/ {sub(/ *=.*/, ""); print}' "$f")"
  [ -n "$names" ] || continue
  headers="$(grep -c '^== ' <<<"$out")"
  want="$(wc -l <<<"$names")"
  # A sweep or seeds multiply the runs; never fewer than one header per variant.
  [ "$headers" -ge "$want" ] || fail "$f: $headers plan headers for $want variants:"$'\n'"$out"
  while read -r v; do
    grep -Eq "^== $v( |$|-)" <<<"$out" || fail "$f: no plan for variant $v:"$'\n'"$out"
    # Each variant's section holds a plan or a reason it is not planned.
    awk -v v="$v" '/^== / {in_s = ($2 == v || index($2, v "-") == 1)} in_s && (/^plan: / || /not planned: /) {ok = 1} END {exit !ok}' \
      <<<"$out" || fail "$f: variant $v has neither a plan nor a reason:"$'\n'"$out"
  done <<<"$names"
done
[ "$n" -ge 10 ] || fail "only $n experiment files found in $dir"

# The quickstart: DDP and DiLoCo, one plan each, the algorithm each variant sets.
q="$("$tw" plan "$dir/quickstart.toml")"
grep -q "^plan: ddp, 4 replicas" <<<"$q" || fail "no DDP plan: $q"
grep -q "^plan: diloco, 4 replicas" <<<"$q" || fail "no DiLoCo plan: $q"
one="$("$tw" plan "$dir/quickstart.toml" --variant diloco)"
grep -q "^plan: diloco" <<<"$one" || fail "--variant diloco: $one"
! grep -q "^plan: ddp" <<<"$one" || fail "--variant diloco planned DDP too: $one"

set +e
bad="$("$tw" plan "$dir/quickstart.toml" --variant dilcoo 2>&1)"
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "an unknown variant exited 0: $bad"
grep -q "variant dilcoo: .*quickstart.toml has the variants ddp, diloco" <<<"$bad" || fail "unknown variant message: $bad"
echo "ok: $n experiment files planned"
