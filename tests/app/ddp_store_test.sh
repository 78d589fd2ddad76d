#!/usr/bin/env bash
# DDP on `thinwire node` processes the test starts itself (cluster.mode = "remote"): the gradient
# group's store and Gloo's sockets listen only on the nodes' own loopback address, never on every
# interface (0.0.0.0 / [::]), and three runs back to back on the same node processes all finish with
# the same losses as the same layout on threads. Micro model on a small text folder.
# Usage: ddp_store_test.sh PATH_TO_THINWIRE
set -euo pipefail
tw="$1"
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log; do [ -f "$f" ] && { echo "== $f" >&2; tail -5 "$f" >&2; }; done; exit 1; }
db="$work/runs.db"

source "$(dirname "$0")/micro_corpus.sh"
micro_corpus "$work/corpus"

# Two nodes on loopback; each uses P..P+3. A base port whose four are all free, per node.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_base() {
  local p
  for _ in $(seq 1 50); do
    p=$((20000 + (RANDOM % 2000) * 10))
    port_free "$p" && port_free $((p + 1)) && port_free $((p + 2)) && port_free $((p + 3)) && { echo "$p"; return; }
  done
  fail "no free ports"
}
P0="$(pick_base)"; P1="$(pick_base)"
[ "$P0" != "$P1" ] || P1=$((P0 + 10))
for i in 0 1; do
  port=$([ "$i" = 0 ] && echo "$P0" || echo "$P1")
  "$tw" node --listen "tcp://127.0.0.1:$port" --data-root "$work" > "$work/node$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1; do
  for _ in $(seq 1 100); do grep -q "thinwire node" "$work/node$i.log" && break; sleep 0.1; done
  grep -q "thinwire node" "$work/node$i.log" || fail "node $i did not come up"
done

cat > "$work/micro.toml" <<TOML
[data]
corpus = "$work/corpus"
cache_dir = "$work/cache"
vocab_size = 200
[model]
d_model = 32
n_layer = 2
n_head = 2
seq_len = 32
[train]
batch_size = 4
warmup_steps = 2
eval_every = 10
steps = 20
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
run() { "$tw" --db "$db" run "$work/micro.toml" "$@"; }

# Every TCP listener of the node processes, as "ADDRESS_HEX:PORT_HEX" rows of /proc/net/tcp{,6}
# whose socket inode one of the pids holds (state 0A = LISTEN).
listeners() {
  local inodes=""
  for p in "${pids[@]}"; do
    inodes+="$(ls -l "/proc/$p/fd" 2>/dev/null | sed -n 's/.*socket:\[\([0-9]*\)\].*/\1/p' | tr '\n' ' ')"
  done
  awk -v inodes="$inodes" 'BEGIN {n = split(inodes, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1}
    FNR > 1 && $4 == "0A" && ($10 in want) {print $2}' /proc/net/tcp /proc/net/tcp6
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
    [ "$n" -gt "$most" ] && most="$n"
    sleep 0.05
  done
  wait "$runpid" || fail "$name exited with an error: $(tail -5 "$work/$name.out")"
  grep -q "finished" "$work/$name.out" || fail "$name did not finish: $(cat "$work/$name.out")"
  echo "$most"
}

most="$(sample_during remote-1)"
# Control, metrics and data listeners on each node at least; the worker's store and Gloo group
# live until the next configure, so the store port (node 0's P+3) is listening now, on loopback.
[ "$most" -ge 6 ] || fail "saw only $most listeners: the check would be vacuous"
after="$(listeners)"
grep -q "^0100007F:$(hexport $((P0 + 3)))$" <<<"$after" || fail "node 0's store is not listening on 127.0.0.1:$((P0 + 3)): $after"
check_listeners "remote-1 (after)" > /dev/null

# Runs two and three on the same node processes: the previous run's store and Gloo group are
# released, so binding them again works, and the same seed gives the same numbers.
sample_during remote-2 > /dev/null
sample_during remote-3 > /dev/null
for i in 0 1; do kill -0 "${pids[$i]}" 2>/dev/null || fail "node $i died"; done

# The same layout on threads: the losses of all four runs are equal to the last digit.
run --set run.name=threads --set cluster.mode=threads > "$work/threads.out" 2>&1 || fail "threads run: $(cat "$work/threads.out")"
id_of() { "$tw" --db "$db" runs list | awk -v n="$1" '$2 == n {print $1}'; }
for name in remote-1 remote-2 remote-3; do
  cmp_out="$("$tw" --db "$db" runs compare "$(id_of threads)" "$(id_of "$name")")"
  a="$(awk '$1 == "train.loss" {print $2, $3}' <<<"$cmp_out")"
  [ -n "$a" ] && awk '{exit !($1 == $2)}' <<<"$a" || fail "$name and threads give different losses: $cmp_out"
done
sent_of() { awk -v n="$1" '$1 == n && NF == 10 {print $5}' "$2"; }  # the final table's row
P=33184  # parameters of this micro model
for name in remote-1 remote-3; do
  [ "$(sent_of replica-0 "$work/$name.out")" = "$((20 * P * 4 + 8))" ] || fail "$name: ddp bytes are not 20·P·4+8"
done
echo "ok: ddp store loopback-only, 3 runs on the same nodes, losses equal threads"
