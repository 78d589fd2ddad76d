#!/usr/bin/env bash
# `thinwire plan` against real runs: for each algorithm (and topology, node speeds, access links)
# a flops run of the micro layout and the plan of the same layout must give every node the same
# final simulated clock to the last digit (%.17g) and the same bytes (the plan's payload bytes plus
# the run's start-up weights check, 8 bytes to each other replica). Micro model on a small text folder.
# Usage: plan_test.sh PATH_TO_THINWIRE
set -euo pipefail
tw="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
db="$work/runs.db"

source "$(dirname "$0")/micro_corpus.sh"
micro_corpus "$work/corpus"
cat > "$work/micro.toml" <<TOML
[data]
corpus = "$work/corpus"
cache_dir = "$work/cache"
vocab_size = 200
[model]
d_model = 32
n_layer = 2
n_head = 2
seq_len = 32
[train]
batch_size = 4
warmup_steps = 2
eval_every = 10
steps = 20
[outer]
replicas = 2
inner_steps = 10
[network]
profile = "home-20m"
[compute]
model = "flops"
TOML

n=0
same() {  # label, replicas, --set arguments...
  local label="$1" replicas="$2"; shift 2
  local sets=("$@") out plan rt id
  n=$((n + 1))
  out="$("$tw" --db "$db" run "$work/micro.toml" --data-root "$work" "${sets[@]}" --set "run.name=\"p$n\"")"
  grep -q "finished" <<<"$out" || fail "$label: the run did not finish: $out"
  id="$("$tw" --db "$db" runs list | awk -v n="p$n" '$2 == n {print $1}')"
  rt="$("$tw" --db "$db" runs retime "$id" --network home-20m --rounds)"
  plan="$("$tw" plan "$work/micro.toml" "${sets[@]}")"
  local nodes=0
  while read -r node clock; do
    nodes=$((nodes + 1))
    local planned bytes sent
    planned="$(awk -v n="$node" '$1 == n && NF == 8 {print $8}' <<<"$plan")"
    [ "$planned" = "$clock" ] || fail "$label: $node's clock: run $clock, plan $planned"$'\n'"$plan"$'\n'"$rt"
    bytes="$(awk -v n="$node" '$1 == n && NF == 8 {print $5}' <<<"$plan")"
    sent="$(awk -v n="$node" '$1 == n && NF == 10 {print $5 + $7}' <<<"$out")"
    [ "$((bytes + 8 * (replicas - 1)))" = "$sent" ] || fail "$label: $node's bytes: run $sent, plan $bytes + checks"$'\n'"$plan"$'\n'"$out"
  done < <(awk '$2 == "final" {print $1, $3}' <<<"$rt")
  [ "$nodes" = "$replicas" ] || fail "$label: $nodes nodes compared, expected $replicas: $rt"
}

same "diloco ring" 2 --set 'outer.algorithm="diloco"'
same "diloco mesh bf16, one node at half speed" 2 --set 'outer.algorithm="diloco"' --set 'outer.topology="mesh"' \
     --set 'outer.dtype="bf16"' --set 'compute.node_speed=[1, 0.5]'
same "diloco int8 over the ring, a slow downlink" 2 --set 'outer.algorithm="diloco"' --set 'outer.dtype="int8"' \
     --set 'network.replica_down_bps=[5e6, 20e6]'
same "sparseloco" 2 --set 'outer.algorithm="sparseloco"' --set 'outer.topk_k=16' --set 'outer.topk_chunk=8'
same "sparseloco through the hub, uneven access links and speeds" 3 --set 'outer.algorithm="sparseloco"' \
     --set 'outer.replicas=3' --set 'outer.topology="hub"' --set 'outer.topk_k=16' --set 'outer.topk_chunk=8' \
     --set 'network.replica_up_bps=[2e6, 20e6, 20e6]' --set 'network.replica_down_bps=[10e6, 20e6, 5e6]' \
     --set 'network.replica_latency_s=[0.05, 0.01, 0.02]' --set 'compute.node_speed=[1, 0.5, 1]'
same "demo through the hub" 2 --set 'outer.algorithm="demo"' --set 'outer.demo_chunk=8' --set 'outer.demo_topk=4' \
     --set 'outer.topology="hub"'
same "demo" 2 --set 'outer.algorithm="demo"' --set 'outer.demo_chunk=8' --set 'outer.demo_topk=4'
same "streaming fp4, overlapped" 2 --set 'outer.algorithm="streaming_diloco"' --set 'outer.fragments=2' \
     --set 'outer.dtype="fp4"' --set 'outer.overlap_steps=2'
same "noloco in pairs of 4" 4 --set 'outer.algorithm="noloco"' --set 'outer.replicas=4' --set 'outer.group_size=2'
same "ddp" 2 --set 'outer.algorithm="ddp"'
echo "plan_test: $n layouts, plan = run"
