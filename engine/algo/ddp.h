// DDP: gradients all-reduced every step, docs/methods.md §1.
//
// Each replica computes gradients on its own part of the global batch; GradAllReduce averages them
// over all replicas with one c10d all-reduce (ProcessGroupGloo on CPU; ProcessGroupNCCL when thinwire
// is built against a CUDA LibTorch) before every replica clips and steps AdamW on the same numbers.
// Rendezvous goes through the group's KvStore (core/kv_store.h: rank 0 hosts it, over ZeroMQ with
// CURVE where the run has keys), not c10d's TCPStore, which listens on every interface unauthenticated.
// No c10d or Gloo type appears in this header: they stay in ddp.cpp, both for compile time and
// because their headers need USE_C10D_GLOO.
//
// Byte accounting is a model, not a measurement: Gloo owns its sockets and exposes no counters, so
// counters() advances by what a ring all-reduce must send (ring_allreduce_bytes) per all-reduce,
// 2·(size−1) messages each way, and for a broadcast by (size−1)·bytes sent at the root and bytes
// received at every other rank. Gloo's actual chunking may differ by a few elements per rank.
//
// Intended usage (one replica; every replica runs the same code with its own rank):
//   DdpRendezvous r;  r.store = client;  r.rank = rank;  r.size = size;  r.bind_host = own_address;
//   auto ar = unwrap(GradAllReduce::create(r, LinkClass::kIntraReplica));
//   auto params = trainer.model()->parameters();
//   check(ar->broadcast(params, 0));                                // identical start
//   trainer.set_grad_sync([&] { return ar->average_grads(params); });
//   trainer.run(hooks);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "core/collective.h"
#include "core/kv_store.h"
#include "core/status.h"
#include "engine/plan/round_cost.h"

namespace tw {

enum class DdpBackend : uint8_t { kGloo = 0, kNccl = 1 };

struct DdpRendezvous {
    // The group's rendezvous store (rank 0's KvStoreHost, reached through a client; core/kv_store.h);
    // required when size > 1. Shared: c10d keeps it as long as the group lives.
    std::shared_ptr<KvStore> store;
    int rank = 0;                    // this replica, 0 ≤ rank < size
    int size = 1;                    // replicas in the group
    std::string prefix = "ddp";      // store key prefix, so several groups can share one store
    int timeout_ms = 60000;          // rendezvous (every store wait) and every collective; ≥ 1000
    std::string bind_host = "127.0.0.1";  // this rank's own address: Gloo's pair sockets bind there
                                          //   (and peers connect to it), never to every interface
    DdpBackend backend = DdpBackend::kGloo;  // kNccl only if built with TW_HAVE_NCCL (CUDA LibTorch)
};

class GradAllReduce {
public:
    // Meets the other ranks through the store and builds the process group. Fails with a message
    // naming the store and the rank if a peer or the store does not answer within timeout_ms.
    // `link` is the class the byte counters charge.
    static Result<std::unique_ptr<GradAllReduce>> create(const DdpRendezvous& r, LinkClass link);
    ~GradAllReduce();

    // Flattens every parameter's gradient into one fp32 bucket, all-reduces it (SUM), divides by size
    // and writes the mean back. A parameter without a gradient contributes zeros and receives the
    // mean, so every rank steps the same parameters with the same gradients. `params` must have the
    // same shapes in the same order on every rank.
    Status average_grads(const std::vector<torch::Tensor>& params);

    // Overwrites `tensors` in place with rank `root`'s values (e.g. to give every rank the same
    // initial weights). Runs under NoGradGuard, so parameters may be passed directly.
    Status broadcast(const std::vector<torch::Tensor>& tensors, int root);

    // True when this build has the NCCL group (TW_HAVE_NCCL: LibTorch built with CUDA).
    static bool nccl_compiled();

    int rank() const { return rank_; }
    int size() const { return size_; }
    const ByteCounters& counters() const { return counters_; }
    double last_comm_s() const { return last_comm_s_; }  // wall seconds of the last collective

    // Payload bytes `rank` sends in one ring all-reduce of `numel` elements of `elem_bytes` each over
    // `size` ranks: core/ring_schedule.h's split and schedule (sizes differ by at most one element,
    // earlier chunks larger; in reduce-scatter step s (0..size−2) rank r sends chunk (r − s) mod size,
    // in all-gather step s chunk (r + 1 − s) mod size). Summed over ranks this is exactly
    // 2·(size−1)·numel·elem_bytes, i.e. docs/methods.md §1's 2·(R−1)/R·P·b per replica on average.
    static uint64_t ring_allreduce_bytes(int64_t numel, int elem_bytes, int size, int rank);

private:
    struct Impl;  // the c10d store and process group
    GradAllReduce(std::unique_ptr<Impl> impl, int rank, int size, LinkClass link);
    // Runs one collective over `flat`, timing it and turning c10d's exceptions into a Status.
    Status run_collective(const char* what, torch::Tensor& flat, int broadcast_root);

    std::unique_ptr<Impl> impl_;
    int rank_, size_;
    LinkClass link_;
    ByteCounters counters_;
    double last_comm_s_ = 0;
};

// DDP's planned rounds (engine/plan/round_cost.h; its row in engine/algo/registry.cpp): every
// step, a ring all-reduce of the fp32 gradients among the replicas (none for one replica).
Result<std::unique_ptr<RoundCostModel>> plan_ddp_rounds(const RunConfig& cfg);

}  // namespace tw
