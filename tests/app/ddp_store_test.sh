#!/usr/bin/env bash
# DDP on `thinwire node` processes the test starts itself (cluster.mode = "remote"): the gradient
# group's store and Gloo's sockets listen only on the nodes' own loopback address, never on every
# interface (0.0.0.0 / [::]), and three runs back to back on the same node processes all finish with
# the same losses as the same layout on threads. Micro model on a small text folder.
# Usage: ddp_store_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"

micro_corpus "$work/corpus"

pick_ports P0; pick_ports P1
start_loopback_node "$P0" "$work" "$work/node0.log"
start_loopback_node "$P1" "$work" "$work/node1.log"

{ micro_tables; cat <<TOML
[outer]
replicas = 2
inner_steps = 10
algorithm = "ddp"
[network]
profile = "home-20m"
[cluster]
mode = "remote"
endpoints = ["tcp://127.0.0.1:$P0", "tcp://127.0.0.1:$P1"]
TOML
} > "$work/micro.toml"
run() { "$tw" --db "$db" run "$work/micro.toml" --data-root "$work" "$@"; }

# Every TCP listener of the node processes, as "ADDRESS_HEX:PORT_HEX" rows of /proc/net/tcp{,6}
# whose socket inode one of the pids holds (state 0A = LISTEN).
# Never fails: `ls` of a process's fd folder exits non-zero when a descriptor closes between its
# listing and its lstat (the nodes open and close sockets all through a run), and with pipefail
# that ended the whole test without a word (seen in clean-clone CI runs); what it did list counts.
listeners() {
  local inodes="" tables=()
  for p in "${pids[@]}"; do
    inodes+="$({ ls -l "/proc/$p/fd" 2>/dev/null || true; } | sed -n 's/.*socket:\[\([0-9]*\)\].*/\1/p' | tr '\n' ' ')"
  done
  for t in /proc/net/tcp /proc/net/tcp6; do if [ -r "$t" ]; then tables+=("$t"); fi; done
  awk -v inodes="$inodes" 'BEGIN {n = split(inodes, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1}
    FNR > 1 && $4 == "0A" && ($10 in want) {print $2}' "${tables[@]}"
}
# Fails on a listener that is not on loopback (127.0.0.1, ::1, ::ffff:127.0.0.1); prints the count.
check_listeners() {
  local rows n=0 row addr
  rows="$(listeners)"
  for row in $rows; do
    addr="${row%:*}"
    case "$addr" in
      0100007F|00000000000000000000000001000000|0000000000000000FFFF00000100007F) ;;
      *) fail "$1: a node listens on ${row} (hex, /proc/net/tcp), not on loopback: $rows" ;;
    esac
    n=$((n + 1))
  done
  echo "$n"
}
hexport() { printf '%04X' "$1"; }

# While a run trains, sample the listeners every 50 ms; the samples must all be loopback-only.
sample_during() {
  local name="$1"; shift
  run --set "run.name=$name" "$@" > "$work/$name.out" 2>&1 &
  local runpid=$!
  local most=0 n
  while kill -0 "$runpid" 2>/dev/null; do
    n="$(check_listeners "$name (during)")" || exit 1
    listeners >> "$work/$name.rows"
    [ "$n" -gt "$most" ] && most="$n"
    sleep 0.05
  done
  wait "$runpid" || fail "$name exited with an error: $(tail -5 "$work/$name.out")"
  grep -q "finished" "$work/$name.out" || fail "$name did not finish: $(cat "$work/$name.out")"
  echo "$most"
}

most="$(sample_during remote-1)"
# Control, metrics and data listeners on each node at least, and node 0's store (its P+3), seen on
# loopback while the run was up: the check is not vacuous.
[ "$most" -ge 6 ] || fail "saw only $most listeners at once: the check would be vacuous"
grep -q "^0100007F:$(hexport $((P0 + 3)))$" "$work/remote-1.rows" \
  || fail "node 0's store was never seen listening on 127.0.0.1:$((P0 + 3)): $(sort -u "$work/remote-1.rows")"
check_listeners "remote-1 (after)" > /dev/null

# Runs two and three on the same node processes: the previous run's store and Gloo group are
# released, so binding them again works, and the same seed gives the same numbers.
sample_during remote-2 > /dev/null
sample_during remote-3 > /dev/null
for i in 0 1; do kill -0 "${pids[$i]}" 2>/dev/null || fail "node $i died"; done

# The same layout on threads: every node's row of the final table (steps, train and val loss,
# bytes) is equal to the last digit in all four runs; only the measured times may differ.
run --set run.name=threads --set cluster.mode=threads > "$work/threads.out" 2>&1 || fail "threads run: $(cat "$work/threads.out")"
rows_of() { awk '$1 ~ /^replica-/ && NF == 10 {print $1, $2, $3, $4, $5, $6, $7, $8}' "$work/$1.out"; }
[ "$(rows_of threads | wc -l)" -eq 2 ] || fail "no final table in the threads run: $(cat "$work/threads.out")"
for name in remote-1 remote-2 remote-3; do
  [ "$(rows_of "$name")" = "$(rows_of threads)" ] \
    || fail "$name differs from threads: $(rows_of "$name") vs $(rows_of threads)"
done
P=33184  # parameters of this micro model: a 2-ring all-reduce sends P·4 bytes per step, plus the checksum
[ "$(rows_of remote-3 | awk '$1 == "replica-0" {print $5}')" = "$((20 * P * 4 + 8))" ] || fail "ddp bytes are not 20·P·4+8"
echo "ok: ddp store loopback-only, 3 runs on the same nodes, losses equal threads"
