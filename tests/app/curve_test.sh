#!/usr/bin/env bash
# Keyed nodes through the CLI: `thinwire keys new`, two `thinwire node` processes with
# CurveZMQ keys (one listening on every interface, which only keys allow), a remote layout naming
# their public keys and the coordinator's secret key, three runs back to back on the same node
# processes with the losses of the same layout on threads; meanwhile a plaintext client, an
# unknown key and a plaintext subscriber get nothing, and the node logs the unknown key.
# Usage: curve_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"

micro_corpus "$work/corpus"
# Each node reads only its own data root: give each the corpus there.
for i in 0 1; do mkdir -p "$work/n$i"; cp -r "$work/corpus" "$work/n$i/corpus"; done

for who in coord node0 node1; do "$tw" keys new "$work/keys/$who" > /dev/null; done
[ "$(stat -c %a "$work/keys/node0/secret.key")" = 600 ] || fail "secret key is not mode 600"
"$tw" keys new "$work/keys/node0" > "$work/again.log" 2>&1 && fail "keys new overwrote an existing key"
grep -q "refusing to overwrite" "$work/again.log" || fail "keys new did not say why it refused: $(cat "$work/again.log")"

pick_ports P0; pick_ports P1

# Without keys a non-loopback bind is refused with the reason, exit 1.
set +e; "$tw" node --listen "tcp://0.0.0.0:$P0" > "$work/nokeys.log" 2>&1; rc=$?; set -e
[ "$rc" -eq 1 ] || fail "a keyless node on 0.0.0.0 exited $rc"
grep -q "without CurveZMQ keys" "$work/nokeys.log" || fail "no reason for the refused bind: $(cat "$work/nokeys.log")"

"$tw" node --listen "tcp://0.0.0.0:$P0" --curve-secret-key "$work/keys/node0/secret.key" \
  --allow "$work/keys/coord/public.key" --data-root "$work/n0" > "$work/node0.log" 2>&1 &
pids+=($!)
"$tw" node --listen "tcp://127.0.0.1:$P1" --curve-secret-key "$work/keys/node1/secret.key" \
  --allow "$(tail -1 "$work/keys/coord/public.key")" --data-root "$work/n1" > "$work/node1.log" 2>&1 &
pids+=($!)
for i in 0 1; do
  for _ in $(seq 1 100); do grep -q "CURVE key" "$work/node$i.log" && break; sleep 0.1; done
  grep -q "CURVE key" "$work/node$i.log" || fail "node $i did not come up with its key"
done

# Bad binds are clear errors with exit 1 (they used to abort with exit 134): a port in use, a host name.
set +e; "$tw" node --listen "tcp://127.0.0.1:$P1" --data-root "$work/n1" > "$work/inuse.log" 2>&1; rc=$?; set -e
[ "$rc" -eq 1 ] || fail "a node on a port in use exited $rc"
grep -q "Address already in use" "$work/inuse.log" || fail "no reason for the busy port: $(cat "$work/inuse.log")"
set +e; "$tw" node --listen "tcp://localhost:$P1" > "$work/name.log" 2>&1; rc=$?; set -e
[ "$rc" -eq 1 ] || fail "a node on tcp://localhost exited $rc"
grep -q "use tcp://127.0.0.1:PORT" "$work/name.log" || fail "no reason for the host name: $(cat "$work/name.log")"

layout() {  # $1 = cluster table
  micro_tables
  cat <<TOML
[outer]
replicas = 2
inner_steps = 10
algorithm = "diloco"
[network]
profile = "home-20m"
$1
TOML
}
layout "[cluster]
mode = \"remote\"
endpoints = [\"tcp://127.0.0.1:$P0\", \"tcp://127.0.0.1:$P1\"]
node_keys = [\"$work/keys/node0/public.key\", \"$(tail -1 "$work/keys/node1/public.key")\"]
coordinator_key = \"$work/keys/coord/secret.key\"
[variants]
first = [\"run.name=keyed-1\"]
second = [\"run.name=keyed-2\"]
third = [\"run.name=keyed-3\"]" > "$work/keyed.toml"
layout "[cluster]
mode = \"threads\"" > "$work/threads.toml"

# The strangers knock while the keyed runs go on.
"$py" - "$P0" "$(tail -1 "$work/keys/node0/public.key")" > "$work/strangers.log" 2>&1 <<'PY' &
import json, sys, time, zmq
port, server_key = int(sys.argv[1]), sys.argv[2].encode()
ctx = zmq.Context()
def send(sock, msg):  # a send that cannot be queued (no connection: the handshake failed) is no reply
    sock.sndtimeo = 1500
    try: sock.send(msg)
    except zmq.Again: pass
def silent(sock, what):
    poller = zmq.Poller(); poller.register(sock, zmq.POLLIN)
    got = poller.poll(1500)
    print(what, "REPLIED" if got else "nothing")
time.sleep(0.5)
plain = ctx.socket(zmq.DEALER); plain.linger = 0; plain.connect(f"tcp://127.0.0.1:{port}")
send(plain, json.dumps({"v": 1, "kind": "stop", "id": 1}).encode()); silent(plain, "plaintext")
pub, sec = zmq.curve_keypair()
unknown = ctx.socket(zmq.DEALER); unknown.linger = 0
unknown.curve_publickey, unknown.curve_secretkey, unknown.curve_serverkey = pub, sec, server_key
unknown.connect(f"tcp://127.0.0.1:{port}")
send(unknown, json.dumps({"v": 1, "kind": "shutdown", "id": 2}).encode()); silent(unknown, "unknown-key")
print("stranger-key", pub.decode())
sub = ctx.socket(zmq.SUB); sub.linger = 0; sub.setsockopt(zmq.SUBSCRIBE, b""); sub.connect(f"tcp://127.0.0.1:{port + 1}")
silent(sub, "subscriber")
PY
spy=$!

out="$("$tw" --db "$db" run "$work/keyed.toml" --data-root "$work" 2>&1)" || fail "keyed runs failed: $out"
wait "$spy" || true
for n in 1 2 3; do grep -q "keyed-$n\|run .* finished" <<<"$out" || fail "run $n missing: $out"; done
[ "$(grep -c "finished after" <<<"$out")" -eq 3 ] || fail "not three finished runs on the same nodes: $out"
grep -q "plaintext nothing" "$work/strangers.log" || fail "a plaintext client got a reply: $(cat "$work/strangers.log")"
grep -q "unknown-key nothing" "$work/strangers.log" || fail "an unknown key got a reply: $(cat "$work/strangers.log")"
grep -q "subscriber nothing" "$work/strangers.log" || fail "a plaintext subscriber read the stream: $(cat "$work/strangers.log")"
stranger="$(awk '/^stranger-key/ {print $2}' "$work/strangers.log")"
grep -qF "unknown key $stranger" "$work/node0.log" || fail "node 0 did not log the unknown key $stranger"

# The same layout on threads: the same losses (same seed, same data parts).
tout="$("$tw" --db "$db" run "$work/threads.toml" --data-root "$work" 2>&1)" || fail "threads run failed: $tout"
row() { awk '$1 == "replica-0" && NF == 10 {print $3, $4, $5}' <<<"$1" | tail -1; }
[ -n "$(row "$tout")" ] || fail "no final row: $tout"
[ "$(row "$out")" = "$(row "$tout")" ] || fail "keyed remote run differs from threads: '$(row "$out")' vs '$(row "$tout")'"
echo "curve_test: OK ($(row "$out"))"
