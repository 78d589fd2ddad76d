# The shared harness of the test scripts (tests/app/*_test.sh, tests/multihost/*_test.sh): each
# sources it first, with its own arguments still in "$@" ($1 is the thinwire binary):
#
#   source "$(dirname "$0")/harness.sh"
#
# and then has:
#   * bash's strict mode (set -euo pipefail);
#   * tw: the thinwire binary ($1) as an absolute path; py: Debian's python3 (it has python3-zmq;
#     the python3 first on PATH may be another build);
#   * work: a fresh folder of its own (mktemp -d: under the TMPDIR that tests/isolate.sh gives each
#     CTest entry), the default data root (THINWIRE_DATA_ROOT), so that no run reads or writes the
#     user's cache; removed on exit (kept, and named, when KEEP is set); db: "$work/runs.db";
#   * pids: the script appends the processes it starts in the background that must not outlive it;
#   * fail MESSAGE: says "FAIL: MESSAGE" with the last lines of the logs in $work (log_globs, paths
#     under $work, default *.log; log_lines lines each, default 5) and exits 1;
#   * at_exit COMMAND: COMMAND runs on exit, in the order given, before the harness SIGKILLs what is
#     left of pids and of the script's children (stop_children, which a command may call first itself)
#     and removes $work;
#   * pick_ports VAR and start_loopback_node: ports for `thinwire node` processes it starts;
#   * wait_rows NAME N: waits for a run in $db to store N train.loss rows;
#   * run_cases: the cases of a script made of case_NAME functions;
#   * micro_corpus, micro_tables and micro_brown (micro_corpus.sh): the micro corpus and layout.
set -euo pipefail
harness_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tw="$(realpath "${1:?usage: $0 PATH_TO_THINWIRE ...}")"
py=/usr/bin/python3
work="$(realpath "$(mktemp -d)")"
export THINWIRE_DATA_ROOT="$work"  # the default data root: never the user's own cache
db="$work/runs.db"
pids=()
log_globs=("*.log")
log_lines=5
exit_cmds=()

fail() {
  echo "FAIL: $*" >&2
  local g f
  for g in "${log_globs[@]}"; do
    for f in "$work"/$g; do [ -f "$f" ] && { echo "== $f" >&2; tail -"$log_lines" "$f" >&2; }; done
  done
  exit 1
}
at_exit() { exit_cmds+=("$1"); }
# SIGKILLs the processes in pids and every other child of this shell, and reaps them.
stop_children() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  pkill -KILL -P $$ 2>/dev/null || true
  wait 2>/dev/null || true
}
harness_exit() {
  local rc=$? c
  set +e
  for c in "${exit_cmds[@]}"; do eval "$c"; done
  stop_children
  if [ -n "${KEEP:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
  return "$rc"
}
trap harness_exit EXIT

# Ports for the `thinwire node` processes a script starts itself: a node listening on port P uses
# P..P+3 (control, metrics, data, store). `pick_ports VAR` sets VAR to the next block of this
# script's, 10000, 10010, ... up to 19990, skipping one that is not free now. A CTest entry runs in
# a network namespace of its own (tests/isolate.sh), so no other test can bind them; the blocks lie
# below the ports `thinwire run` picks for its child-process nodes (20000 up) and below the
# kernel's ephemeral range (32768 up), so neither this script's runs nor its outgoing connections
# take them either. Where no namespace can be made, the port-binding tests never run at the same
# time (tests/CMakeLists.txt), and a port some other program holds is skipped.
harness_next_port=10000
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_ports() {
  local harness_p  # not a name a caller would pass
  while [ "$harness_next_port" -lt 20000 ]; do
    harness_p="$harness_next_port"
    harness_next_port=$((harness_p + 10))
    if port_free "$harness_p" && port_free $((harness_p + 1)) && port_free $((harness_p + 2)) && port_free $((harness_p + 3)); then
      printf -v "$1" '%s' "$harness_p"
      return 0
    fi
  done
  fail "no block of four free ports left below 20000"
}

# Starts `thinwire node` ($tw) on 127.0.0.1:$1 with data root $2, its output in $3, adds its pid to
# pids, and waits until it serves (its first line).
start_loopback_node() {
  "$tw" node --listen "tcp://127.0.0.1:$1" --data-root "$2" > "$3" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do grep -q "thinwire node" "$3" && return 0; sleep 0.1; done
  fail "the node on port $1 did not come up: $(cat "$3")"
}

# wait_rows NAME N: prints the id of the latest run named NAME in $db once it has stored N train.loss
# rows (every node's together, as `runs show` counts them); returns 1 when the run failed (it could
# not start: no use waiting) or after a minute. It polls the store with sqlite3, ten times a second.
wait_rows() {
  local id="" n st
  for _ in $(seq 1 600); do
    [ -n "$id" ] || id="$(sqlite3 "$db" "SELECT id FROM runs WHERE name = '$1' ORDER BY id DESC LIMIT 1" 2>/dev/null || true)"
    if [ -n "$id" ]; then
      st="$(sqlite3 "$db" "SELECT status FROM runs WHERE id = $id" 2>/dev/null || true)"
      [ "$st" != failed ] || return 1
      n="$(sqlite3 "$db" "SELECT COUNT(*) FROM metrics WHERE run_id = $id AND name = 'train.loss'" 2>/dev/null || true)"
      [ -n "$n" ] && [ "$n" -ge "$2" ] && { echo "$id"; return 0; }
    fi
    sleep 0.1
  done
  return 1
}

# run_cases [CASE...]: runs the script's functions case_CASE named, or every case_ function in the
# order the script defines them when none is named; sets ran_cases to the list. tests/CMakeLists.txt
# registers one test per `case_NAME() {` line (tw_case_tests), so a case is a function of its own.
# A case's last command must succeed when its checks pass: not `CHECK && fail ...`, whose status
# is then 1 and would end the script under set -e.
run_cases() {
  local c all
  all="$(sed -n 's/^case_\([a-z0-9_]*\)() {.*/\1/p' "$0")"
  ran_cases=("$@")
  [ ${#ran_cases[@]} -gt 0 ] || mapfile -t ran_cases <<<"$all"
  for c in "${ran_cases[@]}"; do
    declare -F "case_$c" > /dev/null || fail "no case '$c'; the cases are: $(tr '\n' ' ' <<<"$all")"
    "case_$c"
  done
}

source "$harness_dir/micro_corpus.sh"
