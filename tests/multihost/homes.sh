# Sourced after netns.sh: "homes" behind home routers, for the tests of nodes nobody can dial.
# A home is a bridge of its own (in a namespace of its own) with machines on 192.168.1.0/24 — the
# same prefix in every home, as real homes have — and a router: a namespace with `eth0` on the
# public switch at 10.47.0.(100+H) and `lan0` at 192.168.1.1, forwarding from the home outwards
# with an nftables masquerade and dropping every connection that starts outside (as a home
# router's NAT does). Nothing of the real host's network is touched.
#
#   netns_homes H M        builds homes 0..H-1 with machines 0..M-1 each (after netns_hosts)
#   home_ns H J            home H's machine J's namespace; on_home H J CMD... runs CMD in it
#   home_ip J              a home machine's address (the same in every home)
#   router_ns H, router_ip H   home H's router: its namespace and its public address
#   home_link_down H / home_link_up H   the router's public link down / up (a home losing its line)
#
# Needs nft (nftables); homes_require exits 77 (ctest: skipped) without it.

homes_require() {
  command -v nft > /dev/null || { echo "SKIP: no nft (nftables) for the home routers' NAT" >&2; exit 77; }
}

router_ns() { echo "${NETNS_PREFIX}r$1"; }
router_ip() { echo "10.47.0.$((100 + $1))"; }
home_ns() { echo "${NETNS_PREFIX}h$1m$2"; }
home_ip() { echo "192.168.1.$((10 + $1))"; }
on_home() { local h="$1" j="$2"; shift 2; ip netns exec "$(home_ns "$h" "$j")" "$@"; }

netns_homes() {
  local homes="$1" machines="$2" sw="${NETNS_PREFIX}sw" h j r hsw ns
  for h in $(seq 0 $((homes - 1))); do
    r="$(router_ns "$h")"
    hsw="${NETNS_PREFIX}hsw$h"
    ip netns add "$r"
    ip netns add "$hsw"
    ip -n "$r" link set lo up
    # The router's public side: a port of the public switch.
    ip -n "$sw" link add "rport$h" type veth peer name eth0 netns "$r"
    ip -n "$sw" link set "rport$h" master br0
    ip -n "$sw" link set "rport$h" up
    ip -n "$r" addr add "$(router_ip "$h")/24" dev eth0
    ip -n "$r" link set eth0 up
    # The home's switch and the router's home side.
    ip -n "$hsw" link add br0 type bridge
    ip -n "$hsw" link set br0 up
    ip -n "$hsw" link add lanport type veth peer name lan0 netns "$r"
    ip -n "$hsw" link set lanport master br0
    ip -n "$hsw" link set lanport up
    ip -n "$r" addr add 192.168.1.1/24 dev lan0
    ip -n "$r" link set lan0 up
    ip netns exec "$r" sysctl -qw net.ipv4.ip_forward=1
    # NAT: out of the home as the router's address; in, only what answers a connection from inside.
    ip netns exec "$r" nft -f - <<'NFT'
table ip homenat {
  chain postrouting { type nat hook postrouting priority 100; oifname "eth0" masquerade; }
  chain forward {
    type filter hook forward priority 0; policy drop;
    iifname "lan0" oifname "eth0" accept
    ct state established,related accept
  }
  chain input {
    type filter hook input priority 0; policy drop;
    iifname "lo" accept
    iifname "lan0" accept
    ct state established,related accept
  }
}
NFT
    for j in $(seq 0 $((machines - 1))); do
      ns="$(home_ns "$h" "$j")"
      netns_machine "$hsw" "$j" "$ns" "$(home_ip "$j")"
      ip -n "$ns" route add default via 192.168.1.1
    done
  done
  NETNS_HOMES="$homes"
  NETNS_HOME_MACHINES="$machines"
  # Each home's last machine reaches the public switch's host 0 through its router.
  for h in $(seq 0 $((homes - 1))); do
    local ok=""
    for _ in $(seq 1 50); do
      on_home "$h" $((machines - 1)) ping -c 1 -W 1 "$(host_ip 0)" > /dev/null 2>&1 && { ok=1; break; }
      sleep 0.1
    done
    [ -n "$ok" ] || { echo "FAIL: home $h cannot reach the public switch through its router" >&2; return 1; }
  done
}

home_link_down() { ip -n "$(router_ns "$1")" link set eth0 down; }
home_link_up() { ip -n "$(router_ns "$1")" link set eth0 up; }

homes_cleanup() {
  local h j
  for h in $(seq 0 $((${NETNS_HOMES:-0} - 1))); do
    for j in $(seq 0 $((${NETNS_HOME_MACHINES:-0} - 1))); do
      for p in $(ip netns pids "$(home_ns "$h" "$j")" 2> /dev/null); do kill -9 "$p" 2> /dev/null || true; done
      ip netns del "$(home_ns "$h" "$j")" 2> /dev/null || true
    done
    ip netns del "${NETNS_PREFIX}hsw$h" 2> /dev/null || true
    ip netns del "$(router_ns "$h")" 2> /dev/null || true
  done
}
