# Sourced by the multi-host tests after harness.sh and netns.sh: a layout run from host 0 against
# the same layout on threads of this process, to the last digit of the final table.
#
#   rows_of FILE      the final table's rows without the measured columns: node, steps, train
#                     loss, val loss, bytes
#   compare NAME N    runs $work/NAME.toml on host 0 (stored as NAME$RUN_SUFFIX) and
#                     $work/NAME-threads.toml here (NAME-threads); both must finish, with N rows
#                     alike; RUN_WHERE says where the first ran, for messages
RUN_SUFFIX="${RUN_SUFFIX:--hosts}"
RUN_WHERE="${RUN_WHERE:-across hosts}"

rows_of() { awk '$1 ~ /^replica-/ && NF == 10 {print $1, $2, $3, $4, $5, $6, $7, $8}' "$1"; }

compare() {
  local name="$1" nodes="$2"
  on_host 0 "$tw" --db "$db" run "$work/$name.toml" --data-root "$work" --set "run.name=$name$RUN_SUFFIX" > "$work/$name.out" 2>&1 \
    || fail "$name $RUN_WHERE: $(tail -20 "$work/$name.out")"
  "$tw" --db "$db" run "$work/$name-threads.toml" --data-root "$work" --set "run.name=$name-threads" > "$work/$name-threads.out" 2>&1 \
    || fail "$name on threads: $(tail -20 "$work/$name-threads.out")"
  [ "$(rows_of "$work/$name.out" | wc -l)" -eq "$nodes" ] || fail "$name: not $nodes rows: $(cat "$work/$name.out")"
  [ "$(rows_of "$work/$name.out")" = "$(rows_of "$work/$name-threads.out")" ] \
    || fail "$name $RUN_WHERE differs from threads:
$(rows_of "$work/$name.out")
vs
$(rows_of "$work/$name-threads.out")"
  echo "ok: $name $RUN_WHERE equals threads"
}
