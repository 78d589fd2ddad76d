// How much memory a run's nodes will take, estimated from its config alone before any node starts,
// so that a layout of 1,024 child processes is refused with figures instead of exhausting the
// machine (coordinator/launch_limits.h decides; this file only counts). Pure arithmetic on the
// config: Torch-free, no I/O, every function thread-safe.
//
// One node (docs/launch_limits.md has the table and the measurements):
//
//   weights      4·P            fp32 parameters the node holds
//   gradients    4·P
//   optimizer    8·P            AdamW's two fp32 moments (docs/methods.md §0)
//   outer state  c·4·P          the outer algorithm's fp32 copies (c below), + 4·P for a DDP bucket
//   exchange     n·w + 4·P_u    n encoded payloads of w bytes held during one round, and the fp32 mean
//   activations  s·4·B·T·(L·(13·d + 3·f + H·T) + 3·V + 2·d)
//                               saved for backward over one step of B = train.batch_size sequences,
//                               scaled by the measured s (kActivationScale)
//   node base    kNodeBaseBytes its data, sockets and threads (measured)
//
// P = the node's parameters (core/model_size.h; a pipeline or SkipPipe stage node holds its
// ⌈L/S⌉ blocks and, at one end, the embedding or the head); P_u = what one round syncs (the whole
// model, or one of Streaming DiLoCo's F fragments). A process of child-process nodes adds
// kProcessBaseBytes (the LibTorch runtime); thread nodes share the coordinator's process, already
// running. The figures are upper-end estimates of the peak resident size, meant to tell 300 MiB
// from 3 GiB, not 300 MiB from 320 MiB.
//
// Outer-state copies c (engine/algo/): none 0; ddp 0 (+ its bucket); diloco 2 (θ global, momentum);
// sparseloco 2 (θ global, error feedback; 3 with pipeline AD6's round start); streaming_diloco 2;
// noloco 2 (slow weights φ, momentum δ); demo 2 (θ global, momentum).
// Payloads held n: mesh and hub all-gathers hold every member's (R, or NoLoCo's largest group
// 2·g − 1); a ring holds about two (its own and the chunk in flight).
#pragma once

#include <cstdint>

#include "core/config.h"

namespace tw {

// The LibTorch runtime of one `thinwire node` process with nothing trained yet: shared libraries'
// private pages, allocator arenas, OpenBLAS buffers, the node server. Measured (VmHWM), see the .cpp.
extern const int64_t kProcessBaseBytes;
// What every node adds besides its model state, in any placement: its copy of the token streams,
// sockets, thread stacks. Measured, see the .cpp.
extern const int64_t kNodeBaseBytes;
// Measured peak over the activations counted above (one train step), see the .cpp.
extern const double kActivationScale;

// One node's estimate, in bytes. The heaviest node of the layout (a full replica when it has one).
struct NodeMemoryEstimate {
    int64_t params = 0;             // P: parameters this node holds
    int64_t weights_bytes = 0;
    int64_t gradient_bytes = 0;
    int64_t optimizer_bytes = 0;
    int64_t outer_state_bytes = 0;
    int64_t exchange_bytes = 0;
    int64_t activation_bytes = 0;
    int64_t base_bytes = 0;         // kNodeBaseBytes
    int64_t total_bytes() const {
        return weights_bytes + gradient_bytes + optimizer_bytes + outer_state_bytes + exchange_bytes + activation_bytes +
               base_bytes;
    }
};

// What starting the run adds to the machine the coordinator runs on, in bytes.
struct LaunchMemoryEstimate {
    int64_t nodes = 0;               // nodes brought up
    int64_t processes = 0;           // child processes started: nodes with cluster.mode = "local", else 0
    NodeMemoryEstimate node;         // the heaviest node
    int64_t process_base_bytes = 0;  // kProcessBaseBytes per child process, 0 on threads
    int64_t per_node_bytes = 0;      // node.total_bytes() + process_base_bytes
    int64_t total_bytes = 0;         // per_node_bytes × nodes; 0 for remote nodes (other machines)
};

// The heaviest node of `cfg`. A layout leaving model.vocab_size at 0 is sized with data.vocab_size
// (what the tokenizer will give it).
NodeMemoryEstimate estimate_node_memory(const RunConfig& cfg);

// The whole launch of `nodes` nodes (Session: cluster.nodes, or what the layout needs).
LaunchMemoryEstimate estimate_launch_memory(const RunConfig& cfg, int64_t nodes);

}  // namespace tw
