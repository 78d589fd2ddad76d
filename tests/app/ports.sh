# Sourced by the CLI tests that start `thinwire node` processes themselves: a node listening on
# port P uses P..P+3, so pick_base prints a P whose four ports are all free on 127.0.0.1 now
# (callers define fail()).
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_base() {
  local p
  for _ in $(seq 1 50); do
    p=$((20000 + (RANDOM % 2000) * 10))
    port_free "$p" && port_free $((p + 1)) && port_free $((p + 2)) && port_free $((p + 3)) && { echo "$p"; return; }
  done
  fail "no free ports"
}
