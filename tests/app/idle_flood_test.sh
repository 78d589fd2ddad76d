#!/usr/bin/env bash
# Idle connections cannot keep a coordinator out: a `thinwire node` started under the common soft
# limit of 1,024 descriptors is held by 1,100 idle TCP connections to its control port (a flood that
# never starts a ZeroMQ handshake, renewed as the node closes them); a coordinator's one-node run
# against it still starts and finishes, and idle connections are closed once the 5-second handshake
# deadline passes (ZeroMQ's default is 30 s). Prints how long the run took.
# Usage: idle_flood_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"
micro_corpus "$work/corpus"
[ "$(ulimit -Hn)" -gt 2048 ] || { echo "SKIP: the hard descriptor limit ($(ulimit -Hn)) leaves no room above 1,024"; exit 77; }
pick_ports P
# The node as a user's shell starts it: soft limit 1,024.
(ulimit -Sn 1024; exec "$tw" node --listen "tcp://127.0.0.1:$P" --data-root "$work") > "$work/node.log" 2>&1 &
pids+=($!)
node_pid=$!
for _ in $(seq 1 100); do grep -q "thinwire node" "$work/node.log" && break; sleep 0.1; done
grep -q "thinwire node" "$work/node.log" || fail "the node did not come up: $(cat "$work/node.log")"

# The flood: 1,100 connections held open, each reopened when the node closes it.
"$py" - "$P" > "$work/flood.log" 2>&1 <<'PY' &
import resource, select, socket, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
port = int(sys.argv[1])
def dial():
    s = socket.socket(); s.setblocking(False)
    s.connect_ex(("127.0.0.1", port))
    return s
socks = {}
poller = select.poll()
def add():
    s = dial(); socks[s.fileno()] = s; poller.register(s, select.POLLIN | select.POLLHUP | select.POLLERR)
for _ in range(1100): add()
print("open", len(socks), flush=True)
closed = 0
end = time.time() + 120
while time.time() < end:
    for fd, ev in poller.poll(500):
        s = socks[fd]
        try:
            if s.recv(4096) != b"":  # the node's greeting: read, never answered
                continue
        except BlockingIOError:
            continue
        except OSError:
            pass
        poller.unregister(fd); del socks[fd]; s.close(); add(); closed += 1
    print("closed by the node so far", closed, flush=True)
PY
pids+=($!)
for _ in $(seq 1 100); do grep -q "^open 1100" "$work/flood.log" && break; sleep 0.1; done
grep -q "^open 1100" "$work/flood.log" || fail "the flood did not open its connections: $(cat "$work/flood.log")"
sleep 1
{ micro_tables "" train.steps=4
  printf '[outer]\nalgorithm = "none"\nreplicas = 1\n[cluster]\nmode = "remote"\nendpoints = ["tcp://127.0.0.1:%s"]\n' "$P"; } > "$work/one.toml"
start=$SECONDS
out="$(cd "$work" && timeout 60 "$tw" --db "$work/runs.db" run one.toml --set run.name=flooded 2>&1)" ||
  fail "a run against the flooded node did not finish: $out"
grep -q "finished" <<<"$out" || fail "the flooded run did not finish: $out"
echo "a one-node run against a node held by 1,100 idle connections finished in $((SECONDS - start)) s"
sleep 6
closed="$(tail -1 "$work/flood.log" | awk '{print $NF}')"
[ "${closed:-0}" -ge 100 ] || fail "the node closed only ${closed:-0} idle connections in the 9 s after the flood began (its handshake deadline is 5 s)"
echo "the node closed $closed idle connections"
kill -0 "$node_pid" || fail "the node died under the flood: $(tail -5 "$work/node.log")"
echo "idle flood: ok"
