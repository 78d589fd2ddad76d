# Sourced by the CLI tests that start `thinwire node` processes themselves: a node listening on
# port P uses P..P+3, so pick_base prints a P whose four ports are all free on 127.0.0.1 now
# (callers define fail()).
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_base() {
  local p
  for _ in $(seq 1 50); do
    p=$((20000 + (RANDOM % 1270) * 10))  # below the ephemeral range (32768 up), where outgoing connections take ports
    port_free "$p" && port_free $((p + 1)) && port_free $((p + 2)) && port_free $((p + 3)) && { echo "$p"; return; }
  done
  fail "no free ports"
}

# Starts `thinwire node` ($tw) on 127.0.0.1:$1 with data root $2, its output in $3, adds its pid to
# the caller's pids array, and waits until it serves (its first line).
start_loopback_node() {
  "$tw" node --listen "tcp://127.0.0.1:$1" --data-root "$2" > "$3" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do grep -q "thinwire node" "$3" && return 0; sleep 0.1; done
  fail "the node on port $1 did not come up: $(cat "$3")"
}
