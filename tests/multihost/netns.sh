# Sourced by the multi-host tests and benchmarks: "machines" made of Linux network namespaces on
# this one machine. Each host is a namespace with its own loopback and one interface `eth0` at
# 10.47.0.(10+i)/24, cabled by a veth pair to a bridge that lives in a namespace of its own (the
# switch), so nothing of the real host's network is touched and no other address is ever reached.
#
#   netns_require            exits 77 (ctest: skipped) with the reason when namespaces cannot be made
#   netns_hosts N            builds hosts 0..N-1 and the switch; netns_cleanup removes them (trap it)
#   host_ip I                the address of host I
#   on_host I CMD...         runs CMD inside host I's namespace
#   host_ns I                the namespace's name (for `ip -n`, `tc -n`)
#   shape_uplink I RATE      tc tbf on host I's eth0 egress (its uplink), e.g. 20mbit; no delay added
#
# Names carry this shell's pid, so two scripts never share a namespace.
NETNS_PREFIX="tw$$"
NETNS_HOSTS=0

netns_require() {
  if [ "$(id -u)" != 0 ]; then echo "SKIP: multi-host tests need root to make network namespaces" >&2; exit 77; fi
  command -v ip > /dev/null || { echo "SKIP: no 'ip' command (iproute2) to make network namespaces" >&2; exit 77; }
  local probe="${NETNS_PREFIX}probe" err
  if ! err="$(ip netns add "$probe" 2>&1)"; then
    echo "SKIP: cannot make a network namespace here: $err" >&2; exit 77
  fi
  ip netns del "$probe"
}

host_ns() { echo "${NETNS_PREFIX}h$1"; }
host_ip() { echo "10.47.0.$((10 + $1))"; }
on_host() { local i="$1"; shift; ip netns exec "$(host_ns "$i")" "$@"; }

# A new machine NS on switch SW's bridge at port PORT with address IP/24 on its eth0.
netns_machine() {  # $1 = switch namespace, $2 = port number, $3 = machine namespace, $4 = address
  local sw="$1" port="$2" ns="$3" ip="$4"
  ip netns add "$ns"
  ip -n "$sw" link add "port$port" type veth peer name eth0 netns "$ns"
  ip -n "$sw" link set "port$port" master br0
  ip -n "$sw" link set "port$port" up
  ip -n "$ns" addr add "$ip/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
}

netns_hosts() {
  local n="$1" sw="${NETNS_PREFIX}sw" i ns
  ip netns add "$sw"
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  ip -n "$sw" link set lo up
  for i in $(seq 0 $((n - 1))); do netns_machine "$sw" "$i" "$(host_ns "$i")" "$(host_ip "$i")"; done
  NETNS_HOSTS="$n"
  # The bridge forwards once its ports are up; wait until host 0 reaches the last host.
  for _ in $(seq 1 50); do
    on_host 0 ping -c 1 -W 1 "$(host_ip $((n - 1)))" > /dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "FAIL: the namespace hosts cannot reach each other" >&2
  return 1
}

shape_uplink() {  # $1 = host, $2 = rate (tc units, e.g. 20mbit), $3 = queue (default "latency 50ms")
  # burst: a few full-size packets, so the rate holds at the scale of one packet train. The queue
  # is short: the acknowledgements of what the host receives leave through the same queue, and
  # behind seconds of queued payload they would throttle the peer's send (TCP is ACK-clocked).
  # shellcheck disable=SC2086
  tc -n "$(host_ns "$1")" qdisc replace dev eth0 root tbf rate "$2" burst 8kb ${3:-latency 50ms}
}

netns_cleanup() {
  local i
  for i in $(seq 0 $((NETNS_HOSTS - 1))); do
    # Processes still inside a namespace would keep it alive: kill them first.
    for p in $(ip netns pids "$(host_ns "$i")" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$(host_ns "$i")" 2>/dev/null || true
  done
  ip netns del "${NETNS_PREFIX}sw" 2>/dev/null || true
}
