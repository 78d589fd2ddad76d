#!/usr/bin/env bash
# Chaos schedules against real runs: each schedule trains the micro model on three replicas as child
# processes (one algorithm of DiLoCo, SparseLoCo over the mesh or the hub relay, NoLoCo, or
# heterogeneous SparseLoCo: a full replica beside two rank-8 compressed pipeline replicas of two
# stage nodes each), injects one seeded random fault for real — a node process paused past the
# heartbeat timeout (SIGSTOP, then SIGCONT: a laptop lid, a VM stall), a slow node (short pauses
# below the timeout), a node SIGKILLed, a node SIGKILLed with cluster.restart_lost, a node's network
# link dropped past the timeout and then back (nftables: every TCP packet to or from its sockets is
# dropped while the process runs on; what it queued arrives when the link returns), the coordinator
# SIGKILLed once every node wrote a checkpoint (a resume needs one) and the run resumed, or the disk
# under the run store filled up — and then checks the invariants on the store and the processes:
#   * every round's members agree: all nodes that stored a round's state hash stored the same one
#     (in a heterogeneous run: every holder of a stage stored the same hash of that stage, and
#     T_fixed's), and all that stored its membership mask stored the same mask (one-node replicas:
#     a node holding several stages stores a mask per stage, which may differ when a pipeline left
#     between two stages' rounds);
#   * the final status is what happened (finished after faults the run survives, exit code 0, naming
#     the node it lost; interrupted after the coordinator's death, then finished by the resume;
#     failed with exit 1 and the store's reason when its disk filled up);
#   * no metric row is lost or stored twice: replica 0 (never a victim) stored every step's loss
#     (after a full disk: every step up to the last it stored, with no gap), and no
#     (node, step, metric) is stored more than once;
#   * no process is orphaned: none of the run's node processes outlives it.
# Each schedule runs in a network namespace of its own where one can be made (as root): its nodes
# talk over that namespace's loopback only, and a dropped link is a table there, never on the host.
# Replica 0 (the node that evaluates) is never a victim.
# Usage: scripts/chaos.sh N [--seed S] [--thinwire PATH] [--faults LIST] [--each] [--algos LIST]
#                          [--keep DIR]
#   N schedules (schedule i uses seed S + i; S defaults to 1). LIST is a comma-separated subset of
#   pause,slow,kill,restart,coordinator,disk,link (disk mounts a tmpfs and link needs a network
#   namespace and nft: as root; elsewhere a kill is injected instead, saying so). --each takes the
#   faults of LIST in turn instead of at random (the algorithm, the victim and the timing stay
#   random). --algos LIST draws from a subset of diloco,sparseloco,sparseloco-hub,noloco,hetero. --keep DIR copies each schedule's store and logs into
#   DIR. CHAOS_RUN_LIMIT (s, default 240) bounds each run. Prints one line per schedule and a
#   summary; exits 1 when any invariant was violated. Runs in a temporary data root; needs sqlite3.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
n="${1:-}"
[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] || { echo "usage: scripts/chaos.sh N [--seed S] [--thinwire PATH] [--faults LIST] [--each] [--algos LIST] [--keep DIR]" >&2; exit 2; }
shift
algos=(diloco sparseloco sparseloco-hub noloco hetero)
seed=1 tw="$here/build/release/app/thinwire" fault_list="pause,slow,kill,restart,coordinator,disk,link" keep="" each=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seed) seed="$2"; shift 2 ;;
    --thinwire) tw="$2"; shift 2 ;;
    --faults) fault_list="$2"; shift 2 ;;
    --keep) keep="$2"; mkdir -p "$keep"; shift 2 ;;
    --each) each=1; shift ;;
    --algos) IFS=, read -r -a algos <<<"$2"; shift 2 ;;
    *) echo "chaos: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$tw" ] || { echo "chaos: no thinwire binary at $tw (build first, or --thinwire PATH)" >&2; exit 2; }
command -v sqlite3 >/dev/null || { echo "chaos: needs the sqlite3 command" >&2; exit 2; }
IFS=, read -r -a faults <<<"$fault_list"
for a in "${algos[@]}"; do
  case "$a" in diloco|sparseloco|sparseloco-hub|noloco|hetero) ;; *) echo "chaos: unknown algorithm '$a'" >&2; exit 2 ;; esac
done
for f in "${faults[@]}"; do
  case "$f" in pause|slow|kill|restart|coordinator|disk|link) ;; *) echo "chaos: unknown fault '$f'" >&2; exit 2 ;; esac
done

work="$(mktemp -d)"
export THINWIRE_DATA_ROOT="$work"
# A network namespace per run when this user can make one (its loopback up): `in_netns CMD...`
# replaces the calling (sub)shell with CMD there.
netns=0
if unshare --net -- ip link set lo up 2>/dev/null; then netns=1; fi
in_netns() {
  if [ "$netns" -eq 1 ]; then exec unshare --net -- bash -c 'ip link set lo up && exec "$@"' in_netns "$@"; else exec "$@"; fi
}
nft_ok=0
[ "$netns" -eq 1 ] && command -v nft >/dev/null && command -v ss >/dev/null && command -v nsenter >/dev/null && nft_ok=1
cleanup() {
  pkill -KILL -f -- "--data-root $work" 2>/dev/null || true; pkill -KILL -P $$ 2>/dev/null || true
  for m in "$work"/disk-*; do umount "$m" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
source "$here/tests/app/micro_corpus.sh"
micro_corpus "$work/corpus"

steps=2500 timeout_s=2 run_limit="${CHAOS_RUN_LIMIT:-240}"
# The layout of one schedule: ALGO, extra [cluster] lines.
layout() {
  local algo="$1" topo="" stages="" pipeline=""
  case "$algo" in
    sparseloco-hub) algo=sparseloco topo='topology = "hub"' ;;
    noloco) topo='group_size = 2' ;;
    hetero) algo=sparseloco stages='stages = 2' pipeline=$'[pipeline]\nreplicas = 2\nmicro_batches = 2\nrank = 8' ;;
  esac
  { micro_tables "tie_embeddings = false" | sed "s/^steps = 20\$/steps = $steps\nckpt_every = 50/; s/^eval_every = 10\$/eval_every = 0/"
    cat <<TOML
[outer]
algorithm = "$algo"
replicas = 3
inner_steps = 5
$topo
[network]
profile = "home-20m"
[cluster]
mode = "local"
heartbeat_timeout_s = $timeout_s
$stages
$2
$pipeline
[run]
threads = 1
TOML
  } > "$work/chaos.toml"
}

q() { sqlite3 "$db" "$1"; }
run_id() { q "SELECT id FROM runs WHERE name = '$1' ORDER BY id DESC LIMIT 1"; }
loss_rows() { q "SELECT COUNT(*) FROM metrics WHERE run_id = $1 AND node = 'replica-0' AND name = 'train.loss'" 2>/dev/null || echo 0; }
# Waits until run NAME has stored AT steps of replica 0 (or its process ended); prints the run id.
wait_steps() {
  local name="$1" at="$2" pid="$3" id=""
  for _ in $(seq 1 1200); do
    kill -0 "$pid" 2>/dev/null || return 1
    [ -n "$id" ] || id="$(run_id "$name" 2>/dev/null || true)"
    if [ -n "$id" ] && [ "$(loss_rows "$id")" -ge "$at" ]; then echo "$id"; return 0; fi
    sleep 0.1
  done
  return 1
}
# The coordinator's node processes, in role order (replica-0, replica-1, replica-2; heterogeneous:
# replica-0, replica-1.0, replica-1.1, replica-2.0, replica-2.1).
nodes_of() { pgrep -P "$1" -f -- "node --listen" | sort -n; }
# The local TCP ports of process PID's sockets (listening and connected), seen in its namespace.
ports_of() {
  nsenter --net="/proc/$1/ns/net" ss -Htanp 2>/dev/null | grep -F "pid=$1," | awk '{print $4}' | sed 's/.*://' | sort -un
}
# Drops every TCP packet to or from process PID's ports for D seconds, in its network namespace (a
# table of its own, removed after), adding the ports of connections it opens meanwhile.
drop_link() {
  local pid="$1" d="$2" ns="/proc/$1/ns/net" ports end
  ports="$(ports_of "$pid" | paste -sd, -)"
  [ -n "$ports" ] || return 1
  nsenter --net="$ns" nft -f - <<NFT || return 1
table inet chaos {
  set ports { type inet_service; elements = { $ports } }
  chain out { type filter hook output priority 0; policy accept; tcp dport @ports drop; tcp sport @ports drop; }
}
NFT
  end=$(awk -v s="$SECONDS" -v d="$d" 'BEGIN {print int(s + d + 0.999)}')
  while [ "$SECONDS" -lt "$end" ] && kill -0 "$pid" 2>/dev/null; do
    ports="$(ports_of "$pid" | paste -sd, -)"
    [ -z "$ports" ] || nsenter --net="$ns" nft add element inet chaos ports "{ $ports }" 2>/dev/null || true
    sleep 0.5
  done
  nsenter --net="$ns" nft delete table inet chaos 2>/dev/null || true
}

violations=0 injected=0 rounds_checked=0
violate() { echo "  VIOLATION: $*"; violations=$((violations + 1)); bad=1; }

# The invariants on run ID of schedule NAME (expected final status WANT).
check_run() {  # id, status wanted, text its reason must hold ("" = any)
  local id="$1" want="$2" reason="$3" split dup status n0 left hashes="name = 'round.state_hash'" per_stage=0
  # A heterogeneous run's holders agree stage by stage (and on T_fixed); a node holding several
  # stages stores one membership mask per stage, and a stage node's trace one clock.* row per
  # compute segment and message of a step.
  [ "$algo" != hetero ] || { hashes="(name LIKE 'round.stage%_hash' OR name = 'round.t_fixed_hash')"; per_stage=1; }
  split="$(q "SELECT step, name, COUNT(DISTINCT value) FROM metrics WHERE run_id = $id AND $hashes
              GROUP BY step, name HAVING COUNT(DISTINCT value) > 1 LIMIT 3")"
  [ -z "$split" ] || violate "members of a round hold different states (step|hash|distinct values): $split"
  if [ "$per_stage" -eq 0 ]; then
    split="$(q "SELECT step, COUNT(DISTINCT value) FROM metrics WHERE run_id = $id AND name = 'round.group_mask'
                GROUP BY step HAVING COUNT(DISTINCT value) > 1 LIMIT 3")"
    [ -z "$split" ] || violate "members of a round hold different memberships (step, distinct masks): $split"
  fi
  rounds_checked=$((rounds_checked + $(q "SELECT COUNT(DISTINCT step) FROM metrics WHERE run_id = $id AND $hashes")))
  dup="$(q "SELECT node, step, name, COUNT(*) FROM metrics WHERE run_id = $id
            AND NOT ($per_stage AND (name = 'round.group_mask' OR name LIKE 'clock.%'))
            GROUP BY node, step, name HAVING COUNT(*) > 1 LIMIT 3")"
  [ -z "$dup" ] || violate "metric rows stored twice (node|step|name|count): $dup"
  n0="$(loss_rows "$id")"
  if [ "$want" = failed ]; then  # stopped early: every step up to the last one stored, no gap
    last="$(q "SELECT COALESCE(MAX(step), 0) FROM metrics WHERE run_id = $id AND node = 'replica-0' AND name = 'train.loss'")"
    [ "$n0" -eq "$last" ] && [ "$n0" -gt 0 ] || violate "replica-0 stored $n0 losses up to step $last"
  else
    [ "$n0" -eq "$steps" ] || violate "replica-0 stored $n0 of $steps steps' losses"
  fi
  status="$(q "SELECT status || ': ' || reason FROM runs WHERE id = $id")"
  [ "${status%%:*}" = "$want" ] || violate "status is '$status', want $want"
  [ -z "$reason" ] || grep -qF -- "$reason" <<<"$status" || violate "the status '$status' does not say '$reason'"
  for _ in $(seq 1 150); do  # a node told to stop takes a moment to leave
    left="$(pgrep -f -- "--data-root $work" || true)"
    [ -z "$left" ] && break
    sleep 0.1
  done
  [ -z "$left" ] || { violate "node processes outlive the run: $(ps -o pid=,args= -p "$(tr '\n' ',' <<<"$left" | sed 's/,$//')")"; pkill -KILL -f -- "--data-root $work" || true; }
}

total_start=$SECONDS
for i in $(seq 1 "$n"); do
  RANDOM=$((seed + i))
  algo="${algos[RANDOM % ${#algos[@]}]}"
  fault="${faults[RANDOM % ${#faults[@]}]}"
  [ "$each" -eq 0 ] || fault="${faults[(i - 1) % ${#faults[@]}]}"
  victim=$((1 + RANDOM % 2))
  at=$((30 + RANDOM % 80))
  names=(replica-0 replica-1 replica-2)
  if [ "$algo" = hetero ]; then names=(replica-0 replica-1.0 replica-1.1 replica-2.0 replica-2.1); victim=$((1 + RANDOM % 4)); fi
  victim_name="${names[victim]}"
  db="$work/runs-$i.db"
  if [ "$fault" = link ] && [ "$nft_ok" -eq 0 ]; then
    echo "schedule $i: no link fault (no network namespace or no nft here); a kill instead"; fault=kill
  fi
  if [ "$fault" = disk ]; then  # the store on a small file system of its own
    mkdir -p "$work/disk-$i"
    if ! mount -t tmpfs -o size=32m tmpfs "$work/disk-$i" 2>/dev/null; then
      echo "schedule $i: no disk fault (cannot mount a tmpfs here); a kill instead"; fault=kill
    else
      db="$work/disk-$i/runs.db"
    fi
  fi
  name="chaos-$i"
  extra=""
  [ "$fault" = restart ] && extra="restart_lost = 1"
  layout "$algo" "$extra"
  bad=0 start=$SECONDS what=""
  (cd "$work" && in_netns timeout -k 10 "$run_limit" "$tw" --db "$db" run chaos.toml --set run.name="$name" > "$work/$name.log" 2>&1) &
  sub=$!
  id="$(wait_steps "$name" "$at" "$sub")" || { echo "schedule $i: the run ended before step $at: $(tail -5 "$work/$name.log")"; violations=$((violations + 1)); continue; }
  if [ "$fault" = coordinator ]; then  # a resume needs a checkpoint every node wrote (else it is refused)
    for _ in $(seq 1 1200); do
      [ "$(q "SELECT COUNT(*) FROM (SELECT step FROM metrics WHERE run_id = $id AND name = 'ckpt.bytes'
                GROUP BY step HAVING COUNT(DISTINCT node) = 3)")" -gt 0 ] && break
      kill -0 "$sub" 2>/dev/null || break
      sleep 0.1
    done
    at="$(loss_rows "$id")"
  fi
  coord="$(pgrep -P "$sub" -f "run chaos.toml" || echo "$sub")"
  victim_pid="$(nodes_of "$coord" | sed -n "$((victim + 1))p")"
  want=finished rc_want=0
  case "$fault" in
    pause)
      d="$((timeout_s + 2 + RANDOM % 5)).$((RANDOM % 10))"
      what="$victim_name paused ${d} s"
      kill -STOP "$victim_pid"; sleep "$d"; kill -CONT "$victim_pid" 2>/dev/null || true ;;  # gone if the run ended meanwhile
    slow)
      what="$victim_name slowed (0.4 s pauses every 0.8 s for 6 s)"
      for _ in $(seq 1 8); do kill -STOP "$victim_pid" 2>/dev/null || true; sleep 0.4; kill -CONT "$victim_pid" 2>/dev/null || true; sleep 0.4; done ;;
    kill|restart)
      what="$victim_name SIGKILLed"
      [ "$fault" = kill ] || what="$what, restarted by its coordinator"
      kill -KILL "$victim_pid" ;;
    coordinator)
      what="coordinator SIGKILLed, run resumed"
      want=interrupted
      kill -KILL "$coord" ;;
    link)
      d="$((timeout_s + 2 + RANDOM % 5)).$((RANDOM % 10))"
      what="$victim_name's link dropped ${d} s"
      drop_link "$victim_pid" "$d" || what="$what (it had left already)" ;;
    disk)  # the run writer keeps an 8 MiB reserve for ending a run: fill the disk past it
      what="the store's disk filled up"
      want=failed rc_want=1
      avail_k="$(df -k --output=avail "$work/disk-$i" | tail -1 | tr -d ' ')"
      head -c "$(( (avail_k - 4096) * 1024 ))" /dev/zero > "$work/disk-$i/filler" 2>/dev/null || true ;;
  esac
  injected=$((injected + 1))
  set +e; wait "$sub" 2>/dev/null; rc=$?; set -e
  if [ "$fault" = coordinator ]; then
    for _ in $(seq 1 100); do [ -z "$(pgrep -f -- "--data-root $work")" ] && break; sleep 0.1; done
    # `runs list` marks a run whose coordinator is gone interrupted; the resume finishes it.
    "$tw" --db "$db" runs list > /dev/null
    st="$(q "SELECT status FROM runs WHERE id = $id")"
    [ "$st" = interrupted ] || violate "after the coordinator's death the run is '$st', want interrupted"
    set +e; (cd "$work" && in_netns timeout -k 10 300 "$tw" --db "$db" run --resume "$id" > "$work/$name-resume.log" 2>&1); rc=$?; set -e
    want=finished
  fi
  log="$work/$name.log"
  [ "$fault" != coordinator ] || log="$work/$name-resume.log"
  [ "$rc" -eq "$rc_want" ] || violate "exit code $rc, want $rc_want: $(tail -3 "$log")"
  survived=""  # a loss the run survived is named in its status
  case "$fault" in pause|kill|restart|link) survived="survived the loss of $victim_name" ;;
    disk) survived="the run store could not be written" ;; esac
  check_run "$id" "$want" "$survived"
  lost="$(q "SELECT COUNT(*) FROM events WHERE run_id = $id AND kind = 'node-lost'")"
  [ -z "$keep" ] || cp "$db" "$work/$name"*.log "$keep/"
  if [ "$bad" -ne 0 ]; then  # what the run said, for the report
    q "SELECT '    event ' || node || ' ' || kind || ': ' || substr(text, 1, 160) FROM events WHERE run_id = $id AND level > 0 LIMIT 12"
    tail -5 "$log" | sed 's/^/    log /'
  fi
  printf 'schedule %d (seed %d): %s, %s at step %d: %s, exit %d, %s node(s) lost, %d s%s\n' "$i" "$((seed + i))" "$algo" \
    "$what" "$at" "$(q "SELECT status FROM runs WHERE id = $id")" "$rc" "$lost" $((SECONDS - start)) "$([ $bad -eq 0 ] && echo "" || echo " — VIOLATED")"
  [ "$fault" != disk ] || umount "$work/disk-$i" 2>/dev/null || true
done
echo "chaos: $n schedules, $injected faults injected, $rounds_checked rounds checked, $violations invariant violations, $((SECONDS - total_start)) s"
[ "$violations" -eq 0 ]
