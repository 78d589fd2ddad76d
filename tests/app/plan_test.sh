#!/usr/bin/env bash
# `thinwire plan` against real runs: for each algorithm (and topology, node speeds, access links)
# and for runs with pipeline replicas (uniform and heterogeneous, GPipe and 1F1B, dense and
# subspace boundaries, SparseLoCo / DiLoCo / NoLoCo per stage), a flops run of the micro layout and
# the plan of the same layout must give every node the same final simulated clock to the last digit
# (%.17g) and the same bytes: the plan's payload bytes (outer sync + inter-stage) plus the run's
# start-up weights check, 8 bytes to each other replica per stage the node holds (a full replica
# of a pipeline run holds every stage). Micro model on a small text folder.
# Usage: plan_test.sh PATH_TO_THINWIRE
source "$(dirname "$0")/harness.sh"

micro_corpus "$work/corpus"
# Data paths are relative to the data root, $work (runs pass --data-root; plans read no data).
{ micro_tables; cat <<TOML; } > "$work/micro.toml"
[outer]
replicas = 2
inner_steps = 10
[network]
profile = "home-20m"
[compute]
model = "flops"
TOML

n=0
same() {  # label, replicas, nodes, stages, --set arguments...
  local label="$1" replicas="$2" want_nodes="$3" stages="$4"; shift 4
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
    local planned bytes sent held=1
    # A stage node (replica-R.S) holds one stage; a full replica holds all of them.
    [[ "$node" == *.* ]] || held="$stages"
    planned="$(awk -v n="$node" '$1 == n && NF == 9 {print $9}' <<<"$plan")"
    [ "$planned" = "$clock" ] || fail "$label: $node's clock: run $clock, plan $planned"$'\n'"$plan"$'\n'"$rt"
    bytes="$(awk -v n="$node" '$1 == n && NF == 9 {print $6}' <<<"$plan")"
    # outer + intra-replica + inter-stage bytes the run counted
    sent="$(awk -v n="$node" '$1 == n && NF == 10 {print $5 + $7 + $8}' <<<"$out")"
    [ "$((bytes + 8 * (replicas - 1) * held))" = "$sent" ] ||
      fail "$label: $node's bytes: run $sent, plan $bytes + checks"$'\n'"$plan"$'\n'"$out"
  done < <(awk '$2 == "final" {print $1, $3}' <<<"$rt")
  [ "$nodes" = "$want_nodes" ] || fail "$label: $nodes nodes compared, expected $want_nodes: $rt"
}

same "diloco ring" 2 2 1 --set 'outer.algorithm="diloco"'
same "diloco mesh bf16, one node at half speed" 2 2 1 --set 'outer.algorithm="diloco"' --set 'outer.topology="mesh"' \
     --set 'outer.dtype="bf16"' --set 'compute.node_speed=[1, 0.5]'
same "diloco int8 over the ring, a slow downlink" 2 2 1 --set 'outer.algorithm="diloco"' --set 'outer.dtype="int8"' \
     --set 'network.replica_down_bps=[5e6, 20e6]'
same "sparseloco" 2 2 1 --set 'outer.algorithm="sparseloco"' --set 'outer.topk_k=16' --set 'outer.topk_chunk=8'
same "sparseloco through the hub, uneven access links and speeds" 3 3 1 --set 'outer.algorithm="sparseloco"' \
     --set 'outer.replicas=3' --set 'outer.topology="hub"' --set 'outer.topk_k=16' --set 'outer.topk_chunk=8' \
     --set 'network.replica_up_bps=[2e6, 20e6, 20e6]' --set 'network.replica_down_bps=[10e6, 20e6, 5e6]' \
     --set 'network.replica_latency_s=[0.05, 0.01, 0.02]' --set 'compute.node_speed=[1, 0.5, 1]'
same "demo through the hub" 2 2 1 --set 'outer.algorithm="demo"' --set 'outer.demo_chunk=8' --set 'outer.demo_topk=4' \
     --set 'outer.topology="hub"'
same "demo" 2 2 1 --set 'outer.algorithm="demo"' --set 'outer.demo_chunk=8' --set 'outer.demo_topk=4'
same "streaming fp4, overlapped" 2 2 1 --set 'outer.algorithm="streaming_diloco"' --set 'outer.fragments=2' \
     --set 'outer.dtype="fp4"' --set 'outer.overlap_steps=2'
same "diloco mesh, replicas 1 and 2 behind a 5 Mb/s relay" 3 3 1 --set 'outer.algorithm="diloco"' --set 'outer.replicas=3' \
     --set 'outer.topology="mesh"' --set 'network.relay_replicas=[1, 2]' --set 'network.relay_up_bps=5e6' \
     --set 'network.relay_latency_s=0.01'
same "noloco in pairs of 4" 4 4 1 --set 'outer.algorithm="noloco"' --set 'outer.replicas=4' --set 'outer.group_size=2'
same "ddp" 2 2 1 --set 'outer.algorithm="ddp"'

# Pipeline replicas. Stage nodes are named replica-R.S; untied: the head lives
# on the last stage.
pipe=(--set 'model.tie_embeddings=false' --set 'cluster.stages=2')
same "heterogeneous sparseloco: 2 full + 2 pipelines, rank 8, 1f1b" 4 6 2 "${pipe[@]}" \
     --set 'outer.replicas=4' --set 'pipeline.replicas=2' --set 'pipeline.rank=8' --set 'pipeline.micro_batches=2' \
     --set 'pipeline.schedule="1f1b"' --set 'outer.algorithm="sparseloco"' --set 'outer.topk_k=16' --set 'outer.topk_chunk=8'
same "uniform dense pipelines, gpipe, diloco over the ring" 2 4 2 "${pipe[@]}" \
     --set 'pipeline.rank=0' --set 'pipeline.micro_batches=4' --set 'pipeline.schedule="gpipe"' --set 'outer.algorithm="diloco"'
same "uniform diloco mesh, rank 4 bf16 (AD2's table at start and after rounds), one replica at half speed" 2 4 2 \
     "${pipe[@]}" --set 'pipeline.rank=4' --set 'pipeline.coord_dtype="bf16"' --set 'pipeline.micro_batches=2' \
     --set 'outer.algorithm="diloco"' --set 'outer.topology="mesh"' --set 'compute.node_speed=[1, 0.5]'
same "uniform noloco, random routing, rank 8 int8" 4 8 2 "${pipe[@]}" --set 'outer.replicas=4' \
     --set 'pipeline.rank=8' --set 'pipeline.coord_dtype="int8"' --set 'pipeline.routing="random"' \
     --set 'pipeline.micro_batches=2' --set 'outer.algorithm="noloco"' --set 'outer.group_size=2'
same "heterogeneous sparseloco, 3 stages, ranks per replica, a slow downlink" 3 7 3 "${pipe[@]}" \
     --set 'cluster.stages=3' --set 'model.n_layer=3' --set 'outer.replicas=3' --set 'pipeline.replicas=2' \
     --set 'pipeline.replica_ranks=[8, 2]' --set 'pipeline.micro_batches=4' --set 'outer.algorithm="sparseloco"' \
     --set 'outer.topk_k=16' --set 'outer.topk_chunk=8' --set 'network.replica_down_bps=[1e9, 5e6, 20e6]'
# What the planner does not plan it names with the reason, rather than print a plan a run would not
# match; the layout itself is valid, so the command succeeds.
msg="$("$tw" plan "$work/micro.toml" --set 'outer.algorithm="diloco"' --set 'outer.round_time_s=1' 2>&1)" ||
  fail "a valid time-budgeted layout failed: $msg"
! grep -q "^plan: " <<<"$msg" || fail "a time-budgeted layout was planned: $msg"
grep -q "not planned: .*time-budgeted rounds (outer.round_time_s" <<<"$msg" || fail "the reason does not name outer.round_time_s: $msg"
echo "plan_test: $n layouts, plan = run"
