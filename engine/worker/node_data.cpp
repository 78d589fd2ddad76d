// A node's data; see node_data.h.
#include "engine/worker/node_data.h"

#include "engine/data/stream_check.h"

namespace tw {

Result<std::shared_ptr<PreparedData>> prepare_node_data(RunConfig& cfg, const NodeRole& role, MetricSink& sink,
                                                        double wall_s) {
    auto data = prepare_data(cfg.data);
    if (!data) return data.status();
    // The same data everywhere: this machine's against the coordinator's, before any step.
    auto fp = data_fingerprint(*data);
    if (!fp) return fp.status();
    sink.event({wall_s, role.name, EventLevel::kInfo, "data", "data " + to_text(*fp)});
    if (Status st = check_data_fingerprint(*fp, role.data_fingerprint); !st) return st;
    if (cfg.model.vocab_size == 0) cfg.model.vocab_size = data->vocab_size;
    if (cfg.model.vocab_size < data->vocab_size)
        return Status::error("model.vocab_size " + std::to_string(cfg.model.vocab_size) + " is smaller than the data's " +
                             std::to_string(data->vocab_size));
    // Too few tokens for a window or a batch, or ids beyond the vocabulary: named here, not thrown
    // by the window loader or the embedding.
    if (Status st = check_run_data(cfg, *data); !st) return st;
    return std::make_shared<PreparedData>(std::move(*data));
}

Result<NodeInputs> prepare_node_inputs(RunConfig& cfg, const NodeRole& role, MetricSink& sink, double wall_s,
                                       int64_t replica, int64_t stage) {
    NodeInputs in;
    auto net = network_profile(cfg.network);
    if (!net) return net.status();
    in.net = *net;
    auto data = prepare_node_data(cfg, role, sink, wall_s);
    if (!data) return data.status();
    in.data = std::move(*data);
    auto compute = ComputeTime::create(cfg, replica, stage);
    if (!compute) return Status::error(role.name + ": " + compute.message());
    in.compute = *compute;
    return in;
}

}  // namespace tw
