#!/usr/bin/env bash
# Chaos schedules against real runs: each schedule trains the micro model on three replicas as child
# processes (one algorithm of DiLoCo, SparseLoCo over the mesh or the hub relay, NoLoCo, or
# heterogeneous SparseLoCo: a full replica beside two rank-8 compressed pipeline replicas of two
# stage nodes each, pipeline.routing "fixed"), injects one seeded random fault for real — a node
# process paused past the heartbeat timeout (SIGSTOP, then SIGCONT: a laptop lid, a VM stall), a
# slow node (short pauses below the timeout), a node SIGKILLed, a node SIGKILLed with
# cluster.restart_lost, a node's network link dropped past the timeout and then back (nftables:
# every TCP packet to or from its sockets is dropped while the process runs on; what it queued
# arrives when the link returns), a flapping link (five drops of 0.3-1.5 s, 1 s apart), a one-way
# link (the coordinator's messages to the node's control port dropped past the timeout: the node
# stops for want of them, and the coordinator, which heard it all along, counts it lost), the
# coordinator SIGKILLed once every node wrote a checkpoint (a resume needs one) and the run resumed,
# or the disk under the run store filled up — and then checks the invariants on the store and the
# processes:
#   * every round's members agree: all nodes that stored a round's state hash stored the same one,
#     and all that stored its membership mask stored the same mask (in a heterogeneous run, stage by
#     stage: every holder of a stage stored the same hash of that stage and the same mask for it —
#     the full replica stores one per stage, in stage order — and all stored the same T_fixed hash);
#     after a loss the run survived, some round's mask must have been stored by two nodes or more;
#   * the final status is what happened (finished after faults the run survives, exit code 0, naming
#     the node it lost — after a flapping link, if the coordinator counted any node lost, only the
#     victim and named; a restarted node rejoined; interrupted after the coordinator's death, then
#     finished by the resume; failed with exit 1 and the store's reason when its disk filled up);
#   * no metric row is lost or stored twice: replica 0 (never a victim) stored every step's loss
#     (after a full disk: every step up to the last it stored, with no gap), and no
#     (node, step, metric) is stored more than once (the full replica of a heterogeneous run: a
#     mask per stage; a stage node's clock.* trace rows: one per compute segment and message);
#   * no process is orphaned: none of the run's node processes outlives it.
# Every fault applies to every algorithm. In a heterogeneous run the victim is any of the four stage
# nodes: a lost stage node takes its whole pipeline replica out (its other node leaves cleanly) and
# the status names the stage node; with cluster.restart_lost the pipeline's processes restart as a
# whole and are admitted again.
# Each schedule runs in a network namespace of its own where one can be made (as root): its nodes
# talk over that namespace's loopback only, and a dropped link is a table there (input and output
# hooks), never on the host; it is removed when the drop ends, and the namespace goes with the
# run's processes, which the script kills on any exit.
# Replica 0 (the node that evaluates) is never a victim.
# Usage: scripts/chaos.sh N [--seed S] [--thinwire PATH] [--faults LIST] [--each] [--algos LIST]
#                          [--keep DIR]
#   N schedules (schedule i uses seed S + i; S defaults to 1). LIST is a comma-separated subset of
#   pause,slow,kill,restart,coordinator,disk,link,flap,oneway (disk mounts a tmpfs, link, flap and
#   oneway need a network namespace and nft: as root; elsewhere a kill is injected instead of disk,
#   link and oneway, a slow node instead of flap, saying so). --each takes the faults of LIST in
#   turn instead of at random (the algorithm, the victim and the timing stay random). --algos LIST
#   draws from a subset of diloco,sparseloco,sparseloco-hub,noloco,hetero. --keep DIR copies each
#   schedule's store and logs into DIR. CHAOS_RUN_LIMIT (s, default 240) bounds each run. Prints
#   one line per schedule and a summary (with the memberships compared); exits 1 when any
#   invariant was violated. Runs in a temporary data root; needs sqlite3.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
n="${1:-}"
[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] || { echo "usage: scripts/chaos.sh N [--seed S] [--thinwire PATH] [--faults LIST] [--each] [--algos LIST] [--keep DIR]" >&2; exit 2; }
shift
algos=(diloco sparseloco sparseloco-hub noloco hetero)
seed=1 tw="$here/build/release/app/thinwire" fault_list="pause,slow,kill,restart,coordinator,disk,link,flap,oneway" keep="" each=0
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
  case "$f" in pause|slow|kill|restart|coordinator|disk|link|flap|oneway) ;; *) echo "chaos: unknown fault '$f'" >&2; exit 2 ;; esac
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
host_ns="$(readlink /proc/$$/ns/net)"
drop_ns=""  # the namespace (a path to it) of a link drop in progress, for cleanup
cleanup() {
  # A drop's table goes first (it lives in the schedule's namespace, which dies with its processes
  # anyway); then the coordinators (`--db $work/...`: their node processes die with them, but a
  # coordinator under a killed `timeout` would run on) and whatever else the run started.
  [ -z "$drop_ns" ] || nsenter --net="$drop_ns" nft delete table inet chaos 2>/dev/null || true
  pkill -KILL -f -- "--db $work/" 2>/dev/null || true
  pkill -KILL -f -- "--data-root $work" 2>/dev/null || true; pkill -KILL -P $$ 2>/dev/null || true
  for m in "$work"/disk-*; do umount "$m" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # so that cleanup runs on a Ctrl-C or a kill too
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
  { micro_tables "tie_embeddings = false" train.steps="$steps" train.ckpt_every=50 train.eval_every=0
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
# replica-0, replica-1.0, replica-1.1, replica-2.0, replica-2.1): the coordinator forks them in that
# order, so their pids ascend (a pid wrap-around within one run's start-up aside).
nodes_of() { pgrep -P "$1" -f -- "node --listen" | sort -n; }
# The local TCP ports of process PID's sockets (listening, connected, connecting), seen in network
# namespace NS.
ports_of() {
  nsenter --net="$2" ss -Htanp 2>/dev/null | grep -F "pid=$1," | awk '{print $4}' | sed 's/.*://' | sort -un
}
# Drops every TCP packet to or from process PID's ports for D seconds (fractions too), in its
# network namespace: a table of its own with the input and the output hook (on the loopback each
# packet passes both; either alone would do, both keep the drop whole should the nodes ever talk
# over another interface), removed after, adding the ports of connections the process opens
# meanwhile (every 0.5 s at most). With a third argument PORT, only the packets to that port of
# the process (one way: what its peers send there) are dropped. The namespace is held open by a
# descriptor while the drop lasts, so the table is removed even when the process exits meanwhile (a
# node told to stop) while the rest of the run goes on there. Refuses the script's own (the host's)
# namespace.
drop_link() {
  local pid="$1" d="$2" only="${3:-}" ports end left nsfd rules="tcp dport @ports drop; tcp sport @ports drop;"
  exec {nsfd}<"/proc/$pid/ns/net" || return 1
  drop_ns="/proc/$$/fd/$nsfd"
  if [ "$(readlink "$drop_ns")" = "$host_ns" ]; then
    echo "chaos: node $pid runs in the host's network namespace; no table is added there" >&2
    exec {nsfd}<&-; drop_ns=""; return 1
  fi
  ports="$(ports_of "$pid" "$drop_ns" | paste -sd, -)"
  if [ -n "$only" ]; then
    tr , "\n" <<<"$ports" | grep -qx -- "$only" || ports=""  # not its port (any more): nothing to drop
    ports="${ports:+$only}" rules="tcp dport @ports drop;"
  fi
  if [ -z "$ports" ] || ! nsenter --net="$drop_ns" nft -f - <<NFT; then
table inet chaos {
  set ports { type inet_service; elements = { $ports } }
  chain in { type filter hook input priority 0; policy accept; $rules }
  chain out { type filter hook output priority 0; policy accept; $rules }
}
NFT
    exec {nsfd}<&-; drop_ns=""; return 1
  fi
  end=$(awk -v t="$EPOCHREALTIME" -v d="$d" 'BEGIN {printf "%.3f", t + d}')
  while kill -0 "$pid" 2>/dev/null; do
    left=$(awk -v t="$EPOCHREALTIME" -v e="$end" 'BEGIN {l = e - t; if (l <= 0) exit 1; printf "%.3f", l < 0.5 ? l : 0.5}') || break
    sleep "$left"
    [ -z "$only" ] || continue
    ports="$(ports_of "$pid" "$drop_ns" | paste -sd, -)"
    [ -z "$ports" ] || nsenter --net="$drop_ns" nft add element inet chaos ports "{ $ports }" 2>/dev/null || true
  done
  nsenter --net="$drop_ns" nft delete table inet chaos 2>/dev/null || true
  exec {nsfd}<&-
  drop_ns=""
}

violations=0 injected=0 rounds_checked=0 masks_compared=0
violate() { echo "  VIOLATION: $*"; violations=$((violations + 1)); bad=1; }

# The invariants on run ID of schedule NAME (expected final status WANT).
check_run() {  # id, status wanted, text its reason must hold ("" = any)
  local id="$1" want="$2" reason="$3" split dup status n0 left hashes="name = 'round.state_hash'" per_stage=0
  local stage_of="0" masks_per_node=1 pairs
  # A heterogeneous run's holders agree stage by stage (and on T_fixed). A stage node (replica-R.S)
  # stores one membership mask, its stage's; the full replica stores one per stage, in stage order
  # (row order), which may differ from each other when a pipeline left between two stages' rounds:
  # masks are compared stage by stage. A stage node's trace stores one clock.* row per compute
  # segment and message of a step.
  if [ "$algo" = hetero ]; then
    hashes="(name LIKE 'round.stage%_hash' OR name = 'round.t_fixed_hash')" per_stage=1 masks_per_node=2
    stage_of="CASE WHEN instr(node, '.') > 0 THEN CAST(substr(node, instr(node, '.') + 1) AS INTEGER)
                   ELSE ROW_NUMBER() OVER (PARTITION BY node, step ORDER BY rowid) - 1 END"
  fi
  split="$(q "SELECT step, name, COUNT(DISTINCT value) FROM metrics WHERE run_id = $id AND $hashes
              GROUP BY step, name HAVING COUNT(DISTINCT value) > 1 LIMIT 3")"
  [ -z "$split" ] || violate "members of a round hold different states (step|hash|distinct values): $split"
  local masks="SELECT step, value, $stage_of AS stage FROM metrics WHERE run_id = $id AND name = 'round.group_mask'"
  split="$(q "WITH m AS ($masks) SELECT step, stage, COUNT(DISTINCT value) FROM m
              GROUP BY step, stage HAVING COUNT(DISTINCT value) > 1 LIMIT 3")"
  [ -z "$split" ] || violate "members of a round hold different memberships (step|stage|distinct masks): $split"
  # How many (round, stage) masks were compared between two nodes or more: none after a loss the
  # run survived would mean the check looked at nothing.
  pairs="$(q "WITH m AS ($masks) SELECT COUNT(*) FROM (SELECT 1 FROM m GROUP BY step, stage HAVING COUNT(*) > 1)")"
  masks_compared=$((masks_compared + pairs))
  case "$fault" in pause|kill|restart|link|oneway)
    [ "$pairs" -gt 0 ] || violate "no round's membership mask was stored by two nodes after $victim_name was lost: nothing compared" ;;
  esac
  rounds_checked=$((rounds_checked + $(q "SELECT COUNT(DISTINCT step) FROM metrics WHERE run_id = $id AND $hashes")))
  dup="$(q "SELECT node, step, name, COUNT(*) FROM metrics WHERE run_id = $id
            AND NOT ($per_stage AND name LIKE 'clock.%')
            GROUP BY node, step, name
            HAVING COUNT(*) > CASE WHEN name = 'round.group_mask' AND instr(node, '.') = 0 THEN $masks_per_node ELSE 1 END
            LIMIT 3")"
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
  if { [ "$fault" = link ] || [ "$fault" = oneway ]; } && [ "$nft_ok" -eq 0 ]; then
    echo "schedule $i: no $fault fault (no network namespace or no nft here); a kill instead"; fault=kill
  fi
  if [ "$fault" = flap ] && [ "$nft_ok" -eq 0 ]; then  # the nearest disturbance below the timeout
    echo "schedule $i: no flapping link (no network namespace or no nft here); a slow node instead"; fault=slow
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
                GROUP BY step HAVING COUNT(DISTINCT node) >= ${#names[@]})")" -gt 0 ] && break
      kill -0 "$sub" 2>/dev/null || break
      sleep 0.1
    done
    at="$(loss_rows "$id")"
  fi
  coord="$(pgrep -P "$sub" -f "run chaos.toml" || echo "$sub")"
  nodes="$(nodes_of "$coord")"
  victim_pid="$(sed -n "$((victim + 1))p" <<<"$nodes")"
  want=finished rc_want=0
  case "$fault" in coordinator|disk) ;; *)  # the victim is the (victim+1)-th node process in role order
    if [ "$(grep -c . <<<"$nodes")" -ne "${#names[@]}" ]; then
      violate "the coordinator runs $(grep -c . <<<"$nodes") node processes, the layout has ${#names[@]}: no victim to map; no fault injected"
      fault=none what="no fault"
    fi ;;
  esac
  case "$fault" in
    none) ;;
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
    oneway)  # the coordinator's messages to the node's control port; the node still reaches everyone
      d="$((timeout_s + 2 + RANDOM % 5)).$((RANDOM % 10))"
      port="$(ps -o args= -p "$victim_pid" | sed -n 's/.*--listen tcp:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p')"
      what="the coordinator's messages to $victim_name dropped ${d} s (one way)"
      [ -n "$port" ] && drop_link "$victim_pid" "$d" "$port" || what="$what (it had left already)" ;;
    flap)  # each drop below the timeout, but TCP's retransmission backoff can stretch one past it
      drops=() gone=""
      for _ in 1 2 3 4 5; do
        r=$((3 + RANDOM % 13)); drops+=("$((r / 10)).$((r % 10))")  # 0.3-1.5 s
        drop_link "$victim_pid" "${drops[-1]}" || { gone=" (it had left)"; break; }
        sleep 1
      done
      what="$victim_name's link flapping (dropped $(IFS=/; echo "${drops[*]}") s, 1 s apart)$gone" ;;
    disk)  # the run writer keeps an 8 MiB reserve for ending a run: fill the disk past it
      what="the store's disk filled up"
      want=failed rc_want=1
      avail_k="$(df -k --output=avail "$work/disk-$i" | tail -1 | tr -d ' ')"
      head -c "$(( (avail_k - 4096) * 1024 ))" /dev/zero > "$work/disk-$i/filler" 2>/dev/null || true ;;
  esac
  [ "$fault" = none ] || injected=$((injected + 1))
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
  case "$fault" in pause|kill|restart|link|oneway) survived="survived the loss of $victim_name" ;;
    disk) survived="the run store could not be written" ;; esac
  check_run "$id" "$want" "$survived"
  # A restarted node takes its state from a live peer (its pipeline's nodes each their stage's).
  if [ "$fault" = restart ] &&
     [ "$(q "SELECT COUNT(*) FROM events WHERE run_id = $id AND kind = 'rejoin' AND node = '$victim_name'")" -eq 0 ]; then
    violate "$victim_name was restarted and never rejoined (no rejoin event of it)"
  fi
  lost="$(q "SELECT COUNT(*) FROM events WHERE run_id = $id AND kind = 'node-lost'")"
  if [ "$fault" = flap ] && [ "$lost" -gt 0 ]; then  # a flap the coordinator counted as a loss: the victim's
    others="$(q "SELECT group_concat(DISTINCT node) FROM events WHERE run_id = $id AND kind = 'node-lost' AND node <> '$victim_name'")"
    [ -z "$others" ] || violate "a flapping link of $victim_name cost other nodes: $others counted lost"
    grep -qF -- "survived the loss of $victim_name" <<<"$(q "SELECT reason FROM runs WHERE id = $id")" ||
      violate "$victim_name was counted lost, and the status does not name it: $(q "SELECT reason FROM runs WHERE id = $id")"
  fi
  [ -z "$keep" ] || cp "$db" "$work/$name"*.log "$keep/"
  if [ "$bad" -ne 0 ]; then  # what the run said, for the report
    q "SELECT '    event ' || node || ' ' || kind || ': ' || substr(text, 1, 160) FROM events WHERE run_id = $id AND level > 0 LIMIT 12"
    tail -5 "$log" | sed 's/^/    log /'
  fi
  printf 'schedule %d (seed %d): %s, %s at step %d: %s, exit %d, %s node(s) lost, %d s%s\n' "$i" "$((seed + i))" "$algo" \
    "$what" "$at" "$(q "SELECT status FROM runs WHERE id = $id")" "$rc" "$lost" $((SECONDS - start)) "$([ $bad -eq 0 ] && echo "" || echo " — VIOLATED")"
  [ "$fault" != disk ] || umount "$work/disk-$i" 2>/dev/null || true
done
echo "chaos: $n schedules, $injected faults injected, $rounds_checked rounds checked ($masks_compared memberships compared), $violations invariant violations, $((SECONDS - total_start)) s"
[ "$violations" -eq 0 ]
