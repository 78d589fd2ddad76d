// Memory a run's nodes take, from the config; see memory_estimate.h.
#include "core/memory_estimate.h"
#include "core/run_kind.h"

#include <algorithm>
#include <cmath>

#include "core/algorithm.h"
#include "core/model_size.h"
#include "core/topology.h"

namespace tw {

// Calibration (scripts/measure_node_memory.sh; 2 logical CPUs, 24 GiB, release build, LibTorch 2.x
// CPU with OpenBLAS, run.threads = 2, Brown with a 4096-piece vocabulary, one run each, 10 steps
// and an evaluation). Figures are the largest RssAnon of the node process: its private memory,
// what each further process costs. Its shared library pages (RssFile, 113 MiB) are the same
// pages the coordinator maps already, so they are not counted per process.
//
//   an idle `thinwire node`                            57.5 MiB  → kProcessBaseBytes 64 MiB
//   after preparing and loading the data, no step      70.4 MiB  → kNodeBaseBytes 16 MiB (+12.9)
//   preset, batch   P        16·P    activations  estimate    measured   activations measured/counted
//   micro   16      369k     5.6     127.0        225 MiB     206.4 MiB  1.03
//   micro   64      369k     5.6     508.0        644 MiB     497.2 MiB  0.83
//   tiny    16      1.33M    20.3    199.0        319 MiB     281.1 MiB  0.96
//   tiny    64      1.33M    20.3    796.0        976 MiB     826.2 MiB  0.92
//   small   4       5.87M    89.6    225.5        418 MiB     404.6 MiB  1.08
//   small   16      5.87M    89.6    902.0       1162 MiB    1126.4 MiB  1.07
//   (activations in MiB as counted in the header with s = 1; estimate with s = 1.1 and the bases)
//   tiny, batch 16, DiLoCo, 2 child processes: 296.5 MiB each, estimated 335 MiB.
//   tiny, batch 16, DiLoCo on threads: each further node 212 MiB of the coordinator's, estimated 278.
// So s = 1.1 puts every measured peak at or below its estimate (by 3% to 31%).
const int64_t kProcessBaseBytes = 64ll << 20;
const int64_t kNodeBaseBytes = 16ll << 20;
const double kActivationScale = 1.1;

namespace {

// The model one node holds: the whole model, or for S stages one stage of ⌈L/S⌉ blocks with the
// embedding or the head (counted as one V·d matrix: tied).
ModelConfig node_model(const ModelConfig& m, int64_t stages) {
    if (stages <= 1) return m;
    ModelConfig s = m;
    s.n_layer = (m.n_layer + stages - 1) / stages;
    s.tie_embeddings = true;
    return s;
}

}  // namespace

NodeMemoryEstimate estimate_node_memory(const RunConfig& cfg) {
    ModelConfig m = cfg.model;
    if (m.vocab_size <= 0) m.vocab_size = cfg.data.vocab_size;
    // Stages per node's model: SkipPipe's, or a pipeline's when every replica is one (a full
    // replica beside pipelines holds the whole model and is the heaviest node).
    int64_t stages = 1;
    if (is_run_kind(cfg, RunKind::kSkipPipe)) stages = cfg.skippipe.stages;
    else if (cfg.cluster.stages > 1 && cfg.pipeline_replicas() >= cfg.outer.replicas) stages = cfg.cluster.stages;
    stages = std::clamp<int64_t>(stages, 1, std::max<int64_t>(1, m.n_layer));
    const ModelConfig nm = node_model(m, stages);

    NodeMemoryEstimate e;
    e.params = count_parameters(nm);
    const int64_t P = e.params;
    e.weights_bytes = 4 * P;
    e.gradient_bytes = 4 * P;
    e.optimizer_bytes = 8 * P;

    // The exchange of the run's algorithm (its row's memory model); HDEE experts and SkipPipe
    // nodes run no outer algorithm, and neither does a config naming an unknown one.
    const auto named = named_algorithm(cfg);
    const bool outer = named && !is_run_kind(cfg, RunKind::kHdee) && !is_run_kind(cfg, RunKind::kSkipPipe);
    const ExchangeMemory x = traits_of(outer ? *named : Algorithm::kNone).memory(cfg, P);
    e.outer_state_bytes = x.copies * 4 * P;
    // A DDP rank (ddp itself, or a replica of several nodes) flattens its gradients into one bucket.
    if (x.bucket || cfg.cluster.nodes_per_replica > 1) e.outer_state_bytes += 4 * P;

    // What one round syncs (the node's parameters, or one Streaming DiLoCo fragment of them), one
    // member's payload of it and the payloads held at once.
    const int64_t unit = x.unit;
    double payload_bytes = x.payload_bytes;
    int64_t held = x.held;
    // SkipPipe: a stage's holders average its gradients every step (N dense payloads).
    if (is_run_kind(cfg, RunKind::kSkipPipe)) payload_bytes = 4.0 * static_cast<double>(P), held = std::max<int64_t>(1, cfg.skippipe.replicas);
    e.exchange_bytes = static_cast<int64_t>(std::ceil(payload_bytes * static_cast<double>(held)));
    if (held > 0) e.exchange_bytes += 4 * unit;  // the decoded fp32 mean

    // Saved for backward, per token: a block's inputs and outputs (≈ 13·d + 3·f, counted from
    // engine/model/llama.cpp's forward) and its attention probabilities (H·T); the head's final
    // norm (2·d) and its logits, softmax and their gradient (3·V).
    const double B = static_cast<double>(std::max<int64_t>(1, cfg.train.batch_size));
    const double T = static_cast<double>(nm.seq_len), d = static_cast<double>(nm.d_model);
    const double f = static_cast<double>(nm.ff_width()), H = static_cast<double>(nm.n_head);
    const double V = static_cast<double>(nm.vocab_size), L = static_cast<double>(nm.n_layer);
    const double per_token = L * (13 * d + 3 * f + H * T) + 3 * V + 2 * d;
    e.activation_bytes = static_cast<int64_t>(std::ceil(kActivationScale * 4.0 * B * T * per_token));
    e.base_bytes = kNodeBaseBytes;
    return e;
}

LaunchMemoryEstimate estimate_launch_memory(const RunConfig& cfg, int64_t nodes) {
    LaunchMemoryEstimate l;
    l.nodes = nodes;
    l.node = estimate_node_memory(cfg);
    const bool local = cfg.cluster.mode == "local";
    l.processes = local ? nodes : 0;
    l.process_base_bytes = local ? kProcessBaseBytes : 0;
    l.per_node_bytes = l.node.total_bytes() + l.process_base_bytes;
    l.total_bytes = cfg.cluster.mode == "remote" ? 0 : l.per_node_bytes * nodes;
    return l;
}

}  // namespace tw
