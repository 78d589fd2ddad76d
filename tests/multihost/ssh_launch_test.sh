#!/usr/bin/env bash
# The SSH launch recipe across network-namespace hosts: host 0 is the coordinator, hosts
# 1 and 2 run Debian's sshd with a test-local config (own host keys, root by a test key only).
# scripts/launch/ssh_nodes.sh, run on host 0, starts a keyed `thinwire node` on each over ssh with
# only the coordinator's public key and writes the layout; a DiLoCo run from host 0 on those nodes
# ends with the final rows (steps, losses, bytes) of the same layout on threads. A start that fails
# half-way stops the node it had started; `stop` ends the nodes, and they are gone.
# Usage: ssh_launch_test.sh PATH_TO_THINWIRE
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../app/harness.sh"
launch="$here/../../scripts/launch/ssh_nodes.sh"
source "$here/netns.sh"
netns_require
[ -x /usr/sbin/sshd ] || { echo "SKIP: no /usr/sbin/sshd (Debian's openssh-server)" >&2; exit 77; }
command -v ssh > /dev/null && command -v ssh-keygen > /dev/null || { echo "SKIP: no ssh client" >&2; exit 77; }

sshd_pids=()
cleanup() {
  if [ -f "$work/nodes.state" ]; then on_host 0 "$launch" stop --state "$work/nodes.state" > /dev/null 2>&1; fi
  for p in "${sshd_pids[@]}"; do kill "$p" 2> /dev/null; done
  wait 2> /dev/null
  netns_cleanup
}
at_exit cleanup
log_globs=("*.log" "node-*/thinwire-node-*.log")
t0=$SECONDS

netns_hosts 3
H1="$(host_ip 1)" H2="$(host_ip 2)"

# ---- sshd on hosts 1 and 2: own host keys, root by the test's key only -----------------------
mkdir -p "$work/ssh"
ssh-keygen -q -t ed25519 -N '' -C tw-test-client -f "$work/ssh/client"
cp "$work/ssh/client.pub" "$work/ssh/authorized_keys"
# sshd's privilege-separation dir. It stays: every sshd on this machine uses it (another test's
# running at the same time, the system's own), and Debian's openssh-server makes it at boot too.
mkdir -p -m 755 /run/sshd
for i in 1 2; do
  ssh-keygen -q -t ed25519 -N '' -f "$work/ssh/host$i"
  cat > "$work/ssh/sshd$i.conf" <<CONF
ListenAddress $(host_ip "$i"):22
HostKey $work/ssh/host$i
PidFile $work/ssh/sshd$i.pid
AuthorizedKeysFile $work/ssh/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
X11Forwarding no
AllowTcpForwarding no
PrintMotd no
CONF
  on_host "$i" /usr/sbin/sshd -D -e -f "$work/ssh/sshd$i.conf" > "$work/sshd$i.log" 2>&1 &
  sshd_pids+=($!)
done
for i in 1 2; do
  for _ in $(seq 1 50); do on_host 0 bash -c "exec 3<>/dev/tcp/$(host_ip "$i")/22" 2> /dev/null && break; sleep 0.1; done
  on_host 0 bash -c "exec 3<>/dev/tcp/$(host_ip "$i")/22" 2> /dev/null || fail "sshd on host $i did not come up"
done
SSH="ssh -F none -i $work/ssh/client -o IdentitiesOnly=yes -o LogLevel=ERROR -o BatchMode=yes -o ConnectTimeout=10 \
-o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=$work/ssh/known_hosts -o GlobalKnownHostsFile=/dev/null"
on_host 0 $SSH "root@$H1" hostname -I | grep -qw "$H1" \
  || fail "ssh to host 1 does not land in host 1's namespace"

# ---- keys and data: the coordinator's pair on host 0; each node's data root has the corpus ----
micro_corpus "$work/coord/corpus"
for h in "$H1" "$H2"; do mkdir -p "$work/node-$h"; cp -r "$work/coord/corpus" "$work/node-$h/corpus"; done
"$tw" keys new "$work/keys/coord" > /dev/null

{ micro_tables; cat <<TOML
[cluster]            # the merge replaces this table, wherever it is
mode = "threads"
[outer]
replicas = 2
inner_steps = 10
algorithm = "diloco"
[network]
profile = "home-20m"
TOML
} > "$work/experiment.toml"

start() {  # extra arguments: hosts and options
  on_host 0 "$launch" start --ssh "$SSH" --coord-pub "$work/keys/coord/public.key" --thinwire "$tw" \
    --data-root "$work/node-{host}" --key-dir "$work/nodekey-{host}" "$@"
}

# ---- start over ssh: host 1 on the default port, host 2 on its own -----------------------------
start --state "$work/nodes.state" --merge "$work/experiment.toml" --out "$work/remote.toml" \
  "root@$H1" "root@$H2:6000" > "$work/start.log" 2>&1 || fail "ssh_nodes.sh start failed: $(cat "$work/start.log")"
[ -f "$work/nodes.state" ] || fail "start wrote no state file"
mapfile -t pids < <(awk -F'\t' '!/^#/ {print $5}' "$work/nodes.state")
[ "${#pids[@]}" -eq 2 ] || fail "state file does not record two nodes: $(cat "$work/nodes.state")"
for i in 1 2; do
  ns="$(ip netns identify "${pids[$((i - 1))]}")"
  [ "$ns" = "$(host_ns "$i")" ] || fail "node $i (pid ${pids[$((i - 1))]}) runs in namespace '$ns', not host $i's"
done
on_host 1 ss -ltn | grep -q "$H1:5555 " || fail "no node listening on $H1:5555 in host 1: $(on_host 1 ss -ltn)"
on_host 2 ss -ltn | grep -q "$H2:6000 " || fail "no node listening on $H2:6000 in host 2: $(on_host 2 ss -ltn)"
grep -q "^mode = \"remote\"" "$work/remote.toml" || fail "merged layout is not remote: $(cat "$work/remote.toml")"
grep -q "tcp://$H1:5555" "$work/remote.toml" && grep -q "tcp://$H2:6000" "$work/remote.toml" \
  || fail "merged layout misses an endpoint: $(cat "$work/remote.toml")"
[ "$(grep -c '^\[cluster\]' "$work/remote.toml")" -eq 1 ] || fail "merged layout has not exactly one [cluster]: $(cat "$work/remote.toml")"
# The node keys in the layout are the ones the nodes made on their hosts; secret keys stayed home.
for h in "$H1" "$H2"; do
  pub="$(tail -1 "$work/nodekey-$h/public.key")"
  grep -qF "\"$pub\"" "$work/remote.toml" || fail "node $h's public key $pub is not in the layout"
  [ "$(tail -1 "$work/nodekey-$h/coordinator.pub")" = "$(tail -1 "$work/keys/coord/public.key")" ] \
    || fail "node $h was not given the coordinator's public key"
  [ "$(stat -c %a "$work/nodekey-$h/secret.key")" = 600 ] || fail "node $h's secret key is not 0600"
  sec="$(tail -1 "$work/nodekey-$h/secret.key")"
  ! grep -rqF -- "$sec" "$work/remote.toml" "$work/nodes.state" "$work/start.log" || fail "node $h's secret key leaked"
done
csec="$(tail -1 "$work/keys/coord/secret.key")"
! grep -rqF -- "$csec" "$work"/node-* "$work"/nodekey-* || fail "the coordinator's secret key reached a node"

# A second start on the same state file is refused before any host is touched.
set +e; start --state "$work/nodes.state" "root@$H1:7000" > "$work/again.log" 2>&1; rc=$?; set -e
[ "$rc" -eq 1 ] && grep -q "state file .* exists" "$work/again.log" || fail "a second start on the same state was not refused (exit $rc): $(cat "$work/again.log")"
# A start that fails half-way (host 2's port 6000 is taken by the running node) stops what it started.
set +e; start --state "$work/partial.state" --out "$work/partial.toml" "root@$H1:7000" "root@$H2:6000" > "$work/partial.log" 2>&1; rc=$?; set -e
[ "$rc" -eq 1 ] || fail "a start onto a busy port exited $rc: $(cat "$work/partial.log")"
grep -q "already runs here on port 6000" "$work/partial.log" || fail "no reason for the failed start: $(cat "$work/partial.log")"
grep -q "stopping the 1 node(s) already started" "$work/partial.log" || fail "the failed start did not stop host 1's node: $(cat "$work/partial.log")"
sleep 0.2
! on_host 1 ss -ltn | grep -q ":7000 " || fail "the node the failed start made on $H1:7000 still listens"
[ ! -e "$work/partial.state" ] && [ ! -e "$work/partial.toml" ] || fail "a failed start left its state or layout behind"
# Bad arguments name what is wrong.
set +e; on_host 0 "$launch" start --coord-pub "$work/keys/coord/secret.key" "root@$H1" > "$work/bad.log" 2>&1; rc=$?; set -e
[ "$rc" -eq 1 ] && grep -q "is a secret key" "$work/bad.log" || fail "a secret key as --coord-pub was not refused: $(cat "$work/bad.log")"

# ---- the run from host 0 on the ssh-started nodes, and the same layout on threads --------------
on_host 0 "$tw" --db "$work/runs.db" run "$work/remote.toml" --data-root "$work/coord" > "$work/remote.out" 2>&1 \
  || fail "the run on the ssh-started nodes failed: $(tail -20 "$work/remote.out")"
"$tw" --db "$work/runs.db" run "$work/experiment.toml" --data-root "$work/coord" > "$work/threads.out" 2>&1 \
  || fail "the threads run failed: $(tail -20 "$work/threads.out")"
rows_of() { awk '$1 ~ /^replica-/ && NF == 10 {print $1, $2, $3, $4, $5, $6, $7, $8}' "$work/$1.out"; }
[ "$(rows_of threads | wc -l)" -eq 2 ] || fail "no final table in the threads run: $(cat "$work/threads.out")"
[ "$(rows_of remote)" = "$(rows_of threads)" ] || fail "the ssh-started run differs from threads: $(rows_of remote) vs $(rows_of threads)"
for h in "$H1" "$H2"; do
  [ -d "$work/node-$h/cache" ] || fail "node $h wrote nothing under its data root"
done

# ---- stop through the script: the nodes are gone ---------------------------------------------
on_host 0 "$launch" stop --state "$work/nodes.state" > "$work/stop.log" 2>&1 || fail "stop failed: $(cat "$work/stop.log")"
[ "$(grep -c "stopped" "$work/stop.log")" -eq 2 ] || fail "stop did not stop two nodes: $(cat "$work/stop.log")"
[ ! -e "$work/nodes.state" ] || fail "stop kept the state file"
# (a zombie counts as gone: whoever reaps orphans here may not have yet)
for p in "${pids[@]}"; do ! ps -o stat= -p "$p" | grep -qv '^Z' || fail "node pid $p still runs after stop"; done
! on_host 1 ss -ltn | grep -q "$H1:5555 " || fail "host 1 still listens on 5555 after stop"
! on_host 2 ss -ltn | grep -q "$H2:6000 " || fail "host 2 still listens on 6000 after stop"
echo "ssh_launch_test: OK in $((SECONDS - t0))s ($(rows_of remote | tr '\n' ';'))"
