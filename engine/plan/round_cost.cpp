// What one outer round sends from one replica; see round_cost.h.
#include "engine/plan/round_cost.h"

#include <algorithm>

#include "core/algorithm.h"
#include "core/ring_schedule.h"
#include "core/topology.h"
#include "engine/algo/registry.h"
#include "engine/algo/ring_allreduce.h"
#include "engine/codec/codec.h"

namespace tw {
namespace {

class NoRounds : public RoundCostModel {
public:
    RoundCost at(int64_t, int, const std::vector<TensorShape>&) const override { return {}; }
};

}  // namespace

uint64_t sum_wire_bytes(const Codec& codec, const std::vector<TensorShape>& shapes) {
    uint64_t n = 0;
    for (auto& t : shapes) n += codec.wire_bytes(t.shape);
    return n;
}

int64_t sum_numel(const std::vector<TensorShape>& shapes) {
    int64_t n = 0;
    for (auto& t : shapes) n += t.numel();
    return n;
}

std::vector<int64_t> numels(const std::vector<TensorShape>& shapes) {
    std::vector<int64_t> n;
    for (auto& t : shapes) n.push_back(t.numel());
    return n;
}

std::vector<int> every_replica(const RunConfig& cfg) {
    std::vector<int> r;
    for (int i = 0; i < static_cast<int>(cfg.outer.replicas); ++i) r.push_back(i);
    return r;
}

RoundCost dense_exchange_cost(const RunConfig& cfg, const Codec& codec, const std::vector<TensorShape>& shapes,
                              const std::vector<int64_t>& segments, const std::vector<int>& members, int replica) {
    const uint64_t others = members.size() - 1;
    RoundCost c;
    c.synced = true;
    if (topology_of(cfg) == Topology::kMesh) {
        c.bytes = others * sum_wire_bytes(codec, shapes);
        return c;
    }
    RingSpec spec;
    spec.members = members;
    spec.segments = segments;
    spec.codec = &codec;
    const int position = static_cast<int>(std::find(members.begin(), members.end(), replica) - members.begin());
    const uint64_t opening = ring_opening_bytes(RingGuard{cfg.outer.guard_ratio});
    c.bytes = others * opening + ring_payload_bytes(spec, position);
    c.hops = ring_hops(static_cast<int>(members.size()));
    return c;
}

RoundCost gather_exchange_cost(const RunConfig& cfg, const Codec& codec, const std::vector<TensorShape>& shapes) {
    const uint64_t payload = sum_wire_bytes(codec, shapes);
    const auto R = static_cast<uint64_t>(cfg.outer.replicas);
    RoundCost c;
    c.synced = true;
    if (topology_of(cfg) == Topology::kHub) {
        c.bytes = R * payload, c.hops = 2, c.sent = payload;
    } else {
        c.bytes = (R - 1) * payload;
    }
    return c;
}

namespace {

class GatherRounds : public RoundCostModel {
public:
    GatherRounds(const RunConfig& cfg, std::unique_ptr<Codec> codec)
        : cfg_(cfg), codec_(std::move(codec)), period_(round_period(cfg)) {}
    RoundCost at(int64_t step, int, const std::vector<TensorShape>& tensors) const override {
        if (step % period_ != 0) return {};
        return gather_exchange_cost(cfg_, *codec_, tensors);
    }

private:
    RunConfig cfg_;
    std::unique_ptr<Codec> codec_;
    int64_t period_;
};

}  // namespace

std::unique_ptr<RoundCostModel> plan_gather_rounds(const RunConfig& cfg, std::unique_ptr<Codec> codec) {
    return std::make_unique<GatherRounds>(cfg, std::move(codec));
}

Result<std::unique_ptr<RoundCostModel>> plan_no_rounds(const RunConfig&) {
    return std::unique_ptr<RoundCostModel>(std::make_unique<NoRounds>());
}

RoundCosts::RoundCosts(RoundCosts&&) noexcept = default;
RoundCosts& RoundCosts::operator=(RoundCosts&&) noexcept = default;
RoundCosts::~RoundCosts() = default;

Result<RoundCosts> RoundCosts::create(const RunConfig& cfg) {
    const Algorithm algo = algorithm_of(cfg);
    const OuterRegistration* row = outer_registration(algo);
    if (!row || !row->plan_rounds)
        return Result<RoundCosts>::error(std::string("plan: outer.algorithm \"") + to_string(algo) +
                                         "\" has no planned round cost (its row in engine/algo/registry.h gives no "
                                         "plan_rounds)");
    auto m = row->plan_rounds(cfg);
    if (!m) return m.status();
    RoundCosts c;
    c.model_ = std::move(*m);
    return c;
}

RoundCost RoundCosts::at(int64_t step, int replica, const std::vector<TensorShape>& tensors) const {
    return model_->at(step, replica, tensors);
}

}  // namespace tw
