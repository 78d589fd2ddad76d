#!/usr/bin/env bash
# Start keyed `thinwire node` processes on other machines over SSH, and write the layout fragment
# ([cluster] mode = "remote", endpoints, node_keys, coordinator_key) that names them; stop them again.
#
# For each host, over ssh (bash on the host reads a small script from stdin): make the node's key
# pair there if it has none (`thinwire keys new`), write the coordinator's PUBLIC key next to it,
# start `thinwire node` detached (setsid nohup; log and pid file in the node's data root) listening on
# the host's address with only that coordinator allowed, wait until the node prints its key, and read
# its public key back. Secret keys never leave their machines: a node's is made on its host and stays
# there; the coordinator's is only named (by path) in the fragment, never read or copied.
#
# Usage:
#   ssh_nodes.sh start --coord-pub FILE [options] HOST...
#   ssh_nodes.sh stop [--state FILE] [--ssh CMD]
#
# HOST is [USER@]NAME[:PORT][=ADDR]: NAME is what ssh connects to; PORT the node's control port
# (default --port; the node uses PORT..PORT+3); ADDR the IPv4 address the node listens on and the
# coordinator connects to (default: NAME when it is an IPv4 address, otherwise the host's first
# address from `hostname -I`).
#
# start options:
#   --coord-pub FILE   the coordinator's public key (DIR/public.key of `thinwire keys new DIR`); required
#   --coord-key PATH   the coordinator's secret key as the fragment names it (default: secret.key next to
#                      --coord-pub); it must exist here, it is not read
#   --thinwire PATH    thinwire on the hosts (default: `thinwire` on the remote PATH)
#   --data-root DIR    the node's --data-root on the hosts (default .cache/thinwire, relative to the
#                      remote home: the node's own default when XDG_CACHE_HOME is unset there); {host} and {port} are replaced by NAME and PORT
#   --key-dir DIR      the node's key pair on the hosts (default .config/thinwire/node-key; {host}, {port})
#   --port P           default control port (5555)
#   --ssh CMD          the ssh command and its options, split on spaces
#                      (default "ssh -o BatchMode=yes"), e.g. "ssh -i ~/.ssh/lab -p 2222"
#   --out FILE         where the fragment goes (default cluster.toml; - for stdout)
#   --merge LAYOUT     write LAYOUT with its [cluster] table replaced by the fragment to --out instead
#   --state FILE       where the started nodes are recorded for `stop` (default thinwire-nodes.state)
#   --wait S           seconds to wait for each node to come up (default 60)
# If a host fails, the nodes already started are stopped and the script exits 1.
#
# stop: for each node recorded in the state file, over ssh, SIGTERM the recorded pid if it still is a
# `thinwire node` (SIGKILL after 10 s), remove its pid file; then the state file. --ssh overrides the
# ssh command recorded at start.
set -euo pipefail

prog="${0##*/}"
die() { echo "$prog: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit "${1:-1}"; }

is_ipv4() {
  local IFS=. a b c d
  [[ "$1" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || return 1
  read -r a b c d <<<"$1"
  ((a <= 255 && b <= 255 && c <= 255 && d <= 255))
}
is_port() { [[ "$1" =~ ^[0-9]{1,5}$ ]] && (( $1 >= 1 && $1 <= 65532 )); }
# A CurveZMQ public key as `thinwire keys new` writes it: the Z85 text on the last non-comment line.
z85_of() { grep -v '^[[:space:]]*#' "$1" | tr -d '[:space:]'; }
z85_re='^[]0-9a-zA-Z.:+=^!/*?&<>()[{}@%$#-]{40}$'  # the Z85 alphabet (']' first, '-' last: literal)
is_z85() { [[ "$1" =~ $z85_re ]]; }

# ---- what runs on a host (bash -s): start one node -------------------------------------------
# Prints "tw-<field> VALUE" lines; errors go to stderr with exit 1. (Expanded there, not here.)
# shellcheck disable=SC2016
remote_start='
set -euo pipefail
bin="$1" root="$2" keydir="$3" port="$4" addr="$5" coordpub="$6" wait="$7"
err() { echo "$*" >&2; exit 1; }
command -v "$bin" > /dev/null 2>&1 || err "no thinwire binary \"$bin\" here (pass --thinwire PATH)"
bin="$(command -v "$bin")"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
if [ -z "$addr" ]; then
  addr="$(hostname -I 2>/dev/null | awk "{print \$1}")"
  [ -n "$addr" ] || err "cannot tell this host'"'"'s address (hostname -I printed nothing): give it as HOST=ADDR"
fi
mkdir -p "$root" || err "cannot make the data root $root"
root="$(cd "$root" && pwd -P)"
if [ ! -f "$keydir/secret.key" ]; then
  [ ! -e "$keydir/public.key" ] || err "$keydir has a public.key but no secret.key: remove it or pick another --key-dir"
  mkdir -p "$(dirname "$keydir")"
  "$bin" keys new "$keydir" > /dev/null || err "thinwire keys new $keydir failed"
fi
keydir="$(cd "$keydir" && pwd -P)"
[ -f "$keydir/public.key" ] || err "$keydir has a secret.key but no public.key"
printf "# thinwire CurveZMQ public key\n%s\n" "$coordpub" > "$keydir/coordinator.pub"
pidfile="$root/thinwire-node-$port.pid" log="$root/thinwire-node-$port.log"
if [ -f "$pidfile" ]; then
  old="$(cat "$pidfile")"
  if kill -0 "$old" 2> /dev/null && ps -p "$old" -o args= | grep -q " node "; then
    err "a thinwire node already runs here on port $port (pid $old, log $log): stop it first"
  fi
fi
cd "$root"
setsid nohup "$bin" node --listen "tcp://$addr:$port" --curve-secret-key "$keydir/secret.key" \
  --allow "$keydir/coordinator.pub" --data-root "$root" > "$log" 2>&1 < /dev/null &
pid=$!
echo "$pid" > "$pidfile"
for _ in $(seq 1 $((wait * 10))); do
  grep -q "CURVE key" "$log" && break
  kill -0 "$pid" 2> /dev/null || { tail -5 "$log" >&2; rm -f "$pidfile"; err "the node exited at start (log $log)"; }
  sleep 0.1
done
grep -q "CURVE key" "$log" || { tail -5 "$log" >&2; kill "$pid" 2> /dev/null || true; rm -f "$pidfile"; err "the node did not come up within ${wait}s (log $log)"; }
logkey="$(sed -n "s/.*CURVE key //p" "$log" | head -1)"
filekey="$(grep -v "^[[:space:]]*#" "$keydir/public.key" | tr -d "[:space:]")"
[ "$logkey" = "$filekey" ] || err "the node reports key $logkey but $keydir/public.key holds $filekey"
echo "tw-addr $addr"
echo "tw-pid $pid"
echo "tw-root $root"
echo "tw-log $log"
echo "tw-key $filekey"
'

# ---- what runs on a host (bash -s): stop one node --------------------------------------------
# shellcheck disable=SC2016
remote_stop='
set -euo pipefail
pidfile="$1" pid="$2"
is_node() { kill -0 "$pid" 2> /dev/null && ps -p "$pid" -o args= | grep -q " node "; }
if is_node; then
  kill -TERM "$pid"
  for _ in $(seq 1 100); do is_node || break; sleep 0.1; done
  if is_node; then kill -KILL "$pid"; sleep 0.2; fi
  is_node && { echo "pid $pid still runs after SIGKILL" >&2; exit 1; }
  echo stopped
else
  echo "was not running"
fi
if [ -f "$pidfile" ] && [ "$(cat "$pidfile")" = "$pid" ]; then rm -f "$pidfile"; fi
'

quote_args() { local a out=""; for a in "$@"; do out+="$(printf '%q' "$a") "; done; echo "$out"; }

# ssh TARGET, running bash -s with the script $1 on stdin and the remaining arguments.
on_remote() {
  local target="$1" script="$2"; shift 2
  "${ssh_cmd[@]}" "$target" "bash -s -- $(quote_args "$@")" <<<"$script"
}

stop_nodes() {  # $1 = state file
  local state="$1" target port addr root pid rc=0 out
  while IFS=$'\t' read -r target port addr root pid; do
    [[ -z "$target" || "$target" == \#* ]] && continue
    if out="$(on_remote "$target" "$remote_stop" "$root/thinwire-node-$port.pid" "$pid" 2>&1)"; then
      echo "$prog: $target: node tcp://$addr:$port (pid $pid) $out" >&2
    else
      echo "$prog: $target: could not stop node tcp://$addr:$port (pid $pid): $out" >&2
      rc=1
    fi
  done < "$state"
  return "$rc"
}

read_ssh_from_state() {  # the "# ssh: CMD" line start recorded
  sed -n 's/^# ssh: //p' "$1" | head -1
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  start | stop) ;;
  -h | --help | help) usage 0 ;;
  "") echo "$prog: missing subcommand (start or stop)" >&2; usage ;;
  *) die "unknown subcommand '$cmd' (start or stop; --help for usage)" ;;
esac

coord_pub="" coord_key="" tw_bin="thinwire" data_root=".cache/thinwire" key_dir=".config/thinwire/node-key"
def_port=5555 ssh_str="" out="cluster.toml" merge="" state="thinwire-nodes.state" wait_s=60
hosts=()
while [ $# -gt 0 ]; do
  opt="$1"
  case "$opt" in
    -h | --help) usage 0 ;;
    --coord-pub | --coord-key | --thinwire | --data-root | --key-dir | --port | --ssh | --out | --merge | --state | --wait)
      [ $# -ge 2 ] || die "$opt needs a value"
      val="$2"; shift 2
      [ -n "$val" ] || die "$opt needs a non-empty value"
      case "$opt" in
        --coord-pub) coord_pub="$val" ;; --coord-key) coord_key="$val" ;; --thinwire) tw_bin="$val" ;;
        --data-root) data_root="$val" ;; --key-dir) key_dir="$val" ;; --port) def_port="$val" ;;
        --ssh) ssh_str="$val" ;; --out) out="$val" ;; --merge) merge="$val" ;; --state) state="$val" ;;
        --wait) wait_s="$val" ;;
      esac ;;
    --) shift; hosts+=("$@"); break ;;
    -*) die "unknown option '$opt' (--help for usage)" ;;
    *) hosts+=("$opt"); shift ;;
  esac
done

if [ "$cmd" = stop ]; then
  [ ${#hosts[@]} -eq 0 ] || die "stop takes no hosts: it stops the nodes recorded in --state ($state)"
  [ -f "$state" ] || die "no state file '$state' (start writes it; pass --state FILE)"
  [ -n "$ssh_str" ] || ssh_str="$(read_ssh_from_state "$state")"
  [ -n "$ssh_str" ] || ssh_str="ssh -o BatchMode=yes"
  read -r -a ssh_cmd <<<"$ssh_str"
  stop_nodes "$state" || die "some nodes could not be stopped; '$state' is kept"
  rm -f "$state"
  exit 0
fi

# ---- start: validate everything before touching any host ------------------------------------
[ ${#hosts[@]} -gt 0 ] || die "no hosts given (start --coord-pub FILE [options] HOST...)"
[ -n "$coord_pub" ] || die "--coord-pub FILE is required: the coordinator's public key (thinwire keys new DIR writes DIR/public.key)"
[ -f "$coord_pub" ] && [ -r "$coord_pub" ] || die "--coord-pub: cannot read '$coord_pub'"
grep -qi '^[[:space:]]*#.*secret' "$coord_pub" && die "--coord-pub: '$coord_pub' is a secret key; pass the coordinator's public.key (the secret key never leaves the coordinator)"
coord_z85="$(z85_of "$coord_pub")"
is_z85 "$coord_z85" || die "--coord-pub: '$coord_pub' holds no CurveZMQ public key (40 Z85 characters)"
[ -n "$coord_key" ] || coord_key="$(dirname "$coord_pub")/secret.key"
[ -f "$coord_key" ] || die "--coord-key: the coordinator's secret key '$coord_key' does not exist here (the fragment names it for thinwire run)"
coord_key="$(cd "$(dirname "$coord_key")" && pwd -P)/$(basename "$coord_key")"
is_port "$def_port" || die "--port: '$def_port' is not a port in 1..65532 (the node uses PORT..PORT+3)"
[[ "$wait_s" =~ ^[1-9][0-9]*$ ]] || die "--wait: '$wait_s' is not a whole number of seconds"
if [ -n "$merge" ]; then
  [ -f "$merge" ] && [ -r "$merge" ] || die "--merge: cannot read layout '$merge'"
  grep -q '^[[:space:]]*cluster\.' "$merge" && die "--merge: '$merge' sets cluster.* keys outside a [cluster] table; remove them"
  [ "$out" = - ] || [ "$(realpath -m "$out")" != "$(realpath -m "$merge")" ] || die "--out: '$out' is the --merge layout itself; write the merged layout elsewhere"
fi
[ -n "$ssh_str" ] || ssh_str="ssh -o BatchMode=yes"
read -r -a ssh_cmd <<<"$ssh_str"
command -v "${ssh_cmd[0]}" > /dev/null || die "--ssh: no command '${ssh_cmd[0]}'"
if [ -f "$state" ]; then
  die "state file '$state' exists: nodes of an earlier start may still run; '$prog stop --state $state' first, or pass another --state"
fi
writable() { [ -d "$(dirname "$1")" ] && [ -w "$(dirname "$1")" ] && { [ ! -e "$1" ] || [ -w "$1" ]; }; }
[ "$out" = - ] || writable "$out" || die "--out: cannot write '$out'"
writable "$state" || die "--state: cannot write '$state'"

targets=() names=() ports=() addrs=() seen=" "
for h in "${hosts[@]}"; do
  spec="$h" addr="" port="$def_port"
  if [[ "$spec" == *=* ]]; then addr="${spec#*=}"; spec="${spec%%=*}"; is_ipv4 "$addr" && [ "$addr" != 0.0.0.0 ] \
    || die "host '$h': '$addr' is not an IPv4 address the coordinator can connect to"; fi
  if [[ "$spec" == *:* ]]; then port="${spec##*:}"; spec="${spec%:*}"; is_port "$port" \
    || die "host '$h': '$port' is not a port in 1..65532"; fi
  [[ "$spec" =~ ^([A-Za-z0-9._-]+@)?[A-Za-z0-9][A-Za-z0-9._-]*$ ]] \
    || die "host '$h' is not [USER@]NAME[:PORT][=ADDR]"
  name="${spec#*@}"
  [ -n "$addr" ] || ! is_ipv4 "$name" || addr="$name"
  [[ "$seen" != *" $name:$port "* ]] || die "host '$h': $name:$port is given twice"
  seen+="$name:$port "
  targets+=("$spec"); names+=("$name"); ports+=("$port"); addrs+=("$addr")
done

subst() { local s="${1//\{host\}/$2}"; echo "${s//\{port\}/$3}"; }

started=0
abort() {
  echo "$prog: $*" >&2
  if [ "$started" -gt 0 ]; then
    echo "$prog: stopping the $started node(s) already started" >&2
    stop_nodes "$state" || true
  fi
  rm -f "$state"
  exit 1
}

{
  echo "# thinwire nodes started by $prog on $(date -u +%Y-%m-%dT%H:%M:%SZ); stop them with: $prog stop --state $state"
  echo "# ssh: $ssh_str"
  printf '# %s\n' "target	port	address	data root	pid"
} > "$state"
endpoints=() keys=()
for i in "${!targets[@]}"; do
  t="${targets[$i]}" p="${ports[$i]}"
  root="$(subst "$data_root" "${names[$i]}" "$p")" kdir="$(subst "$key_dir" "${names[$i]}" "$p")"
  echo "$prog: $t: starting a node on port $p (data root $root)" >&2
  if ! res="$(on_remote "$t" "$remote_start" "$tw_bin" "$root" "$kdir" "$p" "${addrs[$i]}" "$coord_z85" "$wait_s")"; then
    abort "$t: could not start the node (see above)"
  fi
  field() { sed -n "s/^tw-$1 //p" <<<"$res" | head -1; }
  a="$(field addr)" pid="$(field pid)" r="$(field root)" k="$(field key)" lg="$(field log)"
  [ -n "$a" ] && [ -n "$pid" ] && [ -n "$r" ] && is_z85 "$k" || abort "$t: unexpected answer from the host: $res"
  is_ipv4 "$a" || abort "$t: the host's address '$a' is not IPv4: give it as $t=ADDR"
  printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$p" "$a" "$r" "$pid" >> "$state"
  started=$((started + 1))
  endpoints+=("tcp://$a:$p") keys+=("$k")
  echo "$prog: $t: node tcp://$a:$p up (pid $pid, log $lg), key $k" >&2
done

fragment() {
  local i
  echo "# ${#endpoints[@]} keyed nodes started by $prog; stop them with: $prog stop --state $state"
  echo "[cluster]"
  echo 'mode = "remote"'
  echo "endpoints = ["
  for i in "${!endpoints[@]}"; do echo "  \"${endpoints[$i]}\",  # ${targets[$i]}"; done
  echo "]"
  echo "node_keys = ["
  for i in "${!keys[@]}"; do echo "  \"${keys[$i]}\","; done
  echo "]"
  echo "coordinator_key = \"$coord_key\""
}
# The layout without its [cluster] table (from its header to the next table header).
without_cluster() {
  awk '/^[[:space:]]*\[[^]]*\][[:space:]]*(#.*)?$/ { skip = ($0 ~ /^[[:space:]]*\[[[:space:]]*cluster[[:space:]]*\]/) }
       !skip' "$1"
}

if [ -n "$merge" ]; then
  content="$(without_cluster "$merge"; echo; fragment)"
else
  content="$(fragment)"
fi
if [ "$out" = - ]; then echo "$content"; else echo "$content" > "$out"; echo "$prog: wrote $out; nodes recorded in $state" >&2; fi
