# Sourced by the flops-clock CLI tests (compute_model_test.sh, time_budget_test.sh) after
# micro_corpus.sh, with $tw (the binary), $work (the data root, holding "corpus") and $db set.
# Their layout is micro_tables' model, untied, as DiLoCo on 2 replicas on home-20m under the flops
# clock at a custom 1 GFLOP/s: 29,374,272 FLOPs per step, so 0.029374272 s per step.

# Writes $work/micro.toml with H = $1.
flops_micro_layout() {
  { micro_tables "tie_embeddings = false"; cat <<TOML; } > "$work/micro.toml"
[outer]
algorithm = "diloco"
replicas = 2
inner_steps = $1
[network]
profile = "home-20m"
[compute]
model = "flops"
hardware = "custom"
peak_flops = 1e9
TOML
}
# Seconds a run may take before it is stopped as Ctrl-C would (then killed 10 s later): a run that
# hangs fails its test with what it printed, naming the case, instead of the whole test timing out.
run_limit=240
# Runs the layout from the data root with extra arguments; prints what it said, and on failure
# says so on stderr too; returns its exit code (124 when it ran past run_limit).
run() {
  local o rc=0
  o="$(cd "$work" && timeout -k 10 "$run_limit" "$tw" --db "$db" run micro.toml "$@" 2>&1)" || rc=$?
  printf '%s\n' "$o"
  [ "$rc" -eq 0 ] || printf 'run %s exited %s:\n%s\n' "$*" "$rc" "$o" >&2
  return "$rc"
}
id_of() { "$tw" --db "$db" runs list | awk -v n="$1" '$2 == n {print $1}'; }  # run name → id
csv() { "$tw" --db "$db" runs export "$(id_of "$1")" --format csv; }          # run name → its metrics
