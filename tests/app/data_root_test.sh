#!/usr/bin/env bash
# a node reads and writes only under its data root. A `thinwire node --data-root D`
# receives configures (from a raw ZeroMQ client, as an attacker would send them) naming the
# password file, a path out of D through "..", an absolute cache folder and a symbolic link out of
# D: each is refused with an error naming the key, the node keeps serving, nothing is written
# outside D, and a configure inside D is accepted. Then `thinwire run` drives the node remotely
# with relative paths (the run finishes; the node's files are its owner's only), and refuses a
# layout path outside its own data root before any node starts.
# Usage: data_root_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"
"$py" -c "import zmq" || fail "$py cannot import zmq (Debian package python3-zmq)"

D="$work/node-root"          # the node's data root
C="$work/coord-root"         # the coordinator's
mkdir -p "$D" "$C" "$work/outside"
micro_corpus "$D/corpus"
micro_corpus "$C/corpus"
echo "secret: not for training" > "$work/outside/secret"
ln -s "$work/outside" "$D/out"  # a link inside the root that leads out of it

pick_ports port
ep="tcp://127.0.0.1:$port"
"$tw" node --listen "$ep" --data-root "$D" > "$work/node.log" 2>&1 &
node_pid=$!
pids+=("$node_pid")
for _ in $(seq 1 100); do grep -q "data root" "$work/node.log" 2>/dev/null && break; sleep 0.1; done
grep -q "data root $(realpath "$D")" "$work/node.log" || fail "the node does not report its data root"

outside_before="$(cd "$work" && find . -path ./node-root -prune -o -path ./coord-root -prune -o -print | sort)"

# A DEALER client speaking the control protocol (remote/protocol.h): configure TOML with a valid
# one-node role, then start (unless $2 is "configure-only"); prints one line per reply.
attack() {
  "$py" - "$ep" "$1" "${2:-start}" <<'PY'
import json, sys, zmq
ep, toml, then = sys.argv[1], sys.argv[2], sys.argv[3]
s = zmq.Context().socket(zmq.DEALER)
s.setsockopt(zmq.RCVTIMEO, 10000)
s.setsockopt(zmq.LINGER, 0)
s.connect(ep)
role = {"name": "replica-0", "kind": "full", "replica": 0, "replicas": 1, "rank": 0, "replica_nodes": 1,
        "stage": -1, "mesh_endpoints": [], "mesh_rank": -1, "mesh_keys": [], "mesh_token": "0" * 16,
        "grad_group": {"host": "", "port": 0, "rank": 0, "size": 1, "keys": []}}
def ask(body):
    s.send(json.dumps(dict(body, v=1)).encode())
    return json.loads(s.recv())
r = ask({"kind": "configure", "id": 1, "config_toml": toml, "role": role})
print(r["kind"], r.get("error", ""))
if then == "start":
    r = ask({"kind": "start", "id": 2, "token": r.get("token", "")})
    print(r["kind"], r.get("error", ""))
PY
}
expect_refused() {  # TOML, KEY, PATH
  local out
  out="$(attack "$1")" || fail "the client got no reply for: $1"
  grep -qF "error configure: $2 = \"$3\":" <<<"$out" || fail "configure with $2 = $3 was not refused naming it: $out"
  grep -q "^error start needs a configured node" <<<"$out" || fail "start after a refused configure: $out"
}
expect_refused "[data]
corpus = \"/etc/passwd\"
cache_dir = \"$work/stolen\"" data.corpus /etc/passwd
expect_refused "[data]
corpus = \"../../../../../../../etc/passwd\"
cache_dir = \"cache\"" data.corpus ../../../../../../../etc/passwd
expect_refused "[data]
corpus = \"corpus\"
cache_dir = \"$work/stolen\"" data.cache_dir "$work/stolen"
expect_refused "[data]
corpus = \"out/secret\"" data.corpus out/secret
expect_refused "[data]
cache_dir = \"out\"" data.cache_dir out
expect_refused "[train]
ckpt_path = \"../outside/run.ckpt\"" train.ckpt_path ../outside/run.ckpt
expect_refused "[data]
train_shard = \"/etc/passwd\"
val_shard = \"/etc/passwd\"
[model]
vocab_size = 256" data.train_shard /etc/passwd

# The node kept serving, and wrote nothing outside its root.
outside_after="$(cd "$work" && find . -path ./node-root -prune -o -path ./coord-root -prune -o -print | sort)"
[ "$outside_before" = "$outside_after" ] || fail "files appeared outside the data root: $(diff <(echo "$outside_before") <(echo "$outside_after"))"
[ ! -e "$work/stolen" ] || fail "the node created $work/stolen"
[ ! -e "$D/.cache" ] && [ ! -e "$D/cache" ] || fail "a refused configure left files behind in the root"

# The same client and a layout inside the root: configure is accepted (the check above is not
# just a client that cannot configure at all).
out="$(attack "$(micro_tables "" train.batch_size= train.warmup_steps= train.eval_every= train.steps=0)" configure-only)"
grep -q "^ok" <<<"$out" || fail "a configure inside the root was refused: $out"

# `thinwire run` drives the node remotely: paths relative to each side's root.
{ printf '[run]\nname = "remote-rooted"\nthreads = 1\n'
  micro_tables "" "data.corpus=\"$C/corpus\"" train.steps=10
  printf '[cluster]\nmode = "remote"\nendpoints = ["%s"]\n' "$ep"; } > "$C/remote.toml"
out="$(cd "$work" && "$tw" --db "$work/runs.db" run "$C/remote.toml" --data-root "$C" 2>&1)" \
  || fail "the remote run through the node failed: $out"
grep -q "finished" <<<"$out" || fail "the remote run did not finish: $out"
show="$("$tw" --db "$work/runs.db" runs show "$("$tw" --db "$work/runs.db" runs list | awk '$2 == "remote-rooted" {print $1}')")"
grep -Eq "^train.loss +10 +10 " <<<"$show" || fail "the remote run lacks 10 train.loss points: $show"
shard="$(ls "$D"/cache/data/*/train.bin | head -1)"
[ -n "$shard" ] || fail "the node prepared no data under its root"
for f in "$D"/cache/data/*/*; do
  [ "$(stat -c %a "$f")" = 600 ] || fail "$f has mode $(stat -c %a "$f"), not 600"
done
[ "$(stat -c %a "$(dirname "$shard")")" = 700 ] || fail "the node's cache folder is not 700"

# The coordinator refuses a layout path outside its own data root before any node starts.
set +e
err="$(cd "$work" && "$tw" --db "$work/runs.db" run "$C/remote.toml" --data-root "$C" --set data.corpus=/etc/passwd 2>&1)"; rc=$?
set -e
[ "$rc" -eq 1 ] || fail "a corpus outside the coordinator's root exited $rc: $err"
grep -qF "data.corpus = \"/etc/passwd\": outside the data root" <<<"$err" || fail "the refusal does not name the key and path: $err"
! grep -q "run [0-9]* \"" <<<"$err" || fail "a run started: $err"
outside_end="$(cd "$work" && find . -path ./node-root -prune -o -path ./coord-root -prune -o -print | sort)"
# Beside the store: the store, and the run folder with the run's final model (storage/run_folder.h).
outside_end="$(grep -v '^\./runs\.db\.d' <<<"$outside_end")"
[ "$outside_end" = "$(printf '%s\n' "$outside_before" ./runs.db | sort)" ] \
  || fail "files appeared outside the roots: $(diff <(echo "$outside_before") <(echo "$outside_end"))"

# Without keys, a process of another user cannot take the node (configure) or end it (shutdown);
# the node goes on serving its own user.
stranger() {  # KIND: one request from uid 65534, prints the reply's kind and error
  setpriv --reuid=65534 --regid=65534 --clear-groups "$py" - "$ep" "$1" <<'PY'
import json, sys, zmq
s = zmq.Context().socket(zmq.DEALER)
s.setsockopt(zmq.RCVTIMEO, 10000)
s.setsockopt(zmq.LINGER, 0)
s.connect(sys.argv[1])
s.send(json.dumps({"v": 1, "kind": sys.argv[2], "id": 5, "config_toml": "", "role": {}}).encode())
r = json.loads(s.recv())
print(r["kind"], r.get("error", ""))
PY
}
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null; then
  for kind in shutdown configure; do
    out="$(stranger "$kind")" || fail "no reply to another user's $kind"
    grep -qF "error \"$kind\" refused: a process of uid 65534 is not of this node's user (uid 0)" <<<"$out" ||
      fail "another user's $kind was not refused: $out"
  done
  kill -0 "$node_pid" || fail "another user's shutdown ended the node"
  grep -q "refused \"shutdown\" from a process of uid 65534" "$work/node.log" || fail "the node did not log the refusal"
  out="$(attack "" configure-only)" || fail "no reply to the node's own user"
  grep -q "^ok" <<<"$out" || fail "the node's own user could not configure it: $out"
fi
echo "data_root_test: ok"
