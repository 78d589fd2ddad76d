// The algorithm registry's table: traits, settings keys and Torch-free settings checks per algorithm.
#include "core/algorithm.h"

#include <algorithm>

#include "core/assert.h"

namespace tw {
namespace {

using Problems = std::vector<std::string>;

// SparseLoCo (docs/methods.md §3): the Top-k count must split into pairs (12-bit positions travel two
// in three bytes) and fit a chunk.
void check_sparseloco(const RunConfig& c, Problems& p) {
    if (c.outer.topk_k % 2 != 0 || c.outer.topk_k > c.outer.topk_chunk * c.outer.topk_chunk)
        p.push_back("outer.topk_k " + std::to_string(c.outer.topk_k) + " must be even and at most outer.topk_chunk² (" +
                    std::to_string(c.outer.topk_chunk * c.outer.topk_chunk) + ")");
}

// Streaming DiLoCo (§4): fragments are groups of layers, each syncing every H/F steps, and the
// overlap must end before the fragment's next turn.
void check_streaming_diloco(const RunConfig& c, Problems& p) {
    if (c.outer.fragments > c.model.n_layer)
        p.push_back("outer.fragments " + std::to_string(c.outer.fragments) + " exceeds model.n_layer " +
                    std::to_string(c.model.n_layer));
    else if (c.outer.inner_steps % c.outer.fragments != 0)
        p.push_back("outer.inner_steps " + std::to_string(c.outer.inner_steps) + " is not a multiple of outer.fragments " +
                    std::to_string(c.outer.fragments) + " (a fragment syncs every H/F steps)");
    else if (c.outer.overlap_steps >= c.outer.inner_steps / c.outer.fragments)
        p.push_back("outer.overlap_steps " + std::to_string(c.outer.overlap_steps) + " must be below H/F = " +
                    std::to_string(c.outer.inner_steps / c.outer.fragments));
}

// NoLoCo (§5): a group holds at most every replica.
void check_noloco(const RunConfig& c, Problems& p) {
    if (c.outer.group_size > c.outer.replicas)
        p.push_back("outer.group_size " + std::to_string(c.outer.group_size) + " exceeds outer.replicas " +
                    std::to_string(c.outer.replicas));
}

// DeMo (docs/demo.md): a full chunk has demo_chunk² coefficients to keep demo_topk of.
void check_demo(const RunConfig& c, Problems& p) {
    if (c.outer.demo_topk > c.outer.demo_chunk * c.outer.demo_chunk)
        p.push_back("outer.demo_topk " + std::to_string(c.outer.demo_topk) + " exceeds outer.demo_chunk² (" +
                    std::to_string(c.outer.demo_chunk * c.outer.demo_chunk) + " coefficients in a full chunk)");
}

}  // namespace

const std::vector<AlgorithmTraits>& algorithm_table() {
    // clang-format off
    //                                                      rounds pipelines multi-node dense dtypes
    // Topologies: a ring sums payloads hop by hop, so the dense exchanges take it (DiLoCo and
    // Streaming DiLoCo by default); NoLoCo's groups are pairs by default, where a ring
    // sends the mesh's bytes in two hops instead of one, so it keeps the mesh unless asked; sparse
    // payloads all-gather. DDP's ring is Gloo's; none exchanges nothing.
    constexpr auto kRing = Topology::kRing, kMesh = Topology::kMesh, kHub = Topology::kHub;
    static const std::vector<AlgorithmTraits> table = {
        {Algorithm::kNone, "none", "one node, no synchronisation", false, true, false, false, {}, nullptr,
         {kRing, kMesh}},
        {Algorithm::kDdp, "ddp", "gradients all-reduced every step", false, false, true, false, {}, nullptr, {kRing}},
        {Algorithm::kDiLoCo, "diloco", "dense pseudo-gradients every H steps, outer Nesterov", true, true, true, true,
         {"outer.inner_steps", "outer.lr", "outer.momentum", "outer.dtype", "outer.topology", "outer.guard_ratio",
          "outer.round_time_s", "outer.round_deadline_s"},
         nullptr, {kRing, kMesh}},
        {Algorithm::kSparseLoCo, "sparseloco", "Top-k 2-bit pseudo-gradients with error feedback", true, true, false,
         false,
         {"outer.inner_steps", "outer.lr", "outer.topk_chunk", "outer.topk_k", "outer.ef_beta", "outer.aggregation",
          "outer.clip_median", "outer.topology", "outer.guard_ratio", "outer.round_time_s", "outer.round_deadline_s"},
         check_sparseloco, {kMesh, kHub}},
        {Algorithm::kStreamingDiLoCo, "streaming_diloco", "fragments synced in turn, overlapped, quantised", true,
         false, false, true,
         {"outer.inner_steps", "outer.lr", "outer.momentum", "outer.dtype", "outer.topology", "outer.fragments",
          "outer.fragment_order", "outer.overlap_steps", "outer.mix_alpha", "outer.guard_ratio",
          "outer.round_deadline_s"},
         check_streaming_diloco, {kRing, kMesh}},
        {Algorithm::kNoLoCo, "noloco", "random groups average weights, no collective", true, true, false, false,
         {"outer.inner_steps", "outer.lr", "outer.momentum", "outer.topology", "outer.group_size", "outer.guard_ratio",
          "outer.round_deadline_s"},
         check_noloco, {kMesh, kRing}},
        {Algorithm::kDeMo, "demo", "momentum, DCT per chunk, Top-k coefficients, sign update", true, false, false,
         false,
         {"outer.inner_steps", "outer.lr", "outer.demo_chunk", "outer.demo_topk", "outer.demo_beta",
          "outer.demo_values", "outer.demo_sign_update", "outer.topology", "outer.guard_ratio",
          "outer.round_deadline_s"},
         check_demo, {kMesh, kHub}},
    };
    // clang-format on
    return table;
}

const AlgorithmTraits& traits_of(Algorithm a) {
    const auto& t = algorithm_table();
    const auto i = static_cast<size_t>(a);
    TW_ASSERT(i < t.size() && t[i].id == a);  // the table is in enum order
    return t[i];
}

const char* to_string(Algorithm a) { return traits_of(a).name; }

std::optional<Algorithm> parse_algorithm(std::string_view name) {
    for (auto& t : algorithm_table())
        if (name == t.name) return t.id;
    return std::nullopt;
}

std::string algorithm_names() {
    std::string s;
    for (auto& t : algorithm_table()) s += (s.empty() ? "" : ", ") + std::string(t.name);
    return s;
}

std::string algorithm_names_where(bool (*pred)(const AlgorithmTraits&)) {
    std::vector<std::string> names;
    for (auto& t : algorithm_table())
        if (pred(t)) names.emplace_back(t.name);
    std::string s;
    for (size_t i = 0; i < names.size(); ++i)
        s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    return s;
}

std::vector<Algorithm> algorithms_using(std::string_view key) {
    std::vector<Algorithm> out;
    for (auto& t : algorithm_table())
        if (std::any_of(t.keys.begin(), t.keys.end(), [&](const char* k) { return key == k; })) out.push_back(t.id);
    return out;
}

Topology topology_of(const RunConfig& cfg) {
    if (cfg.outer.topology.empty()) return traits_of(algorithm_of(cfg)).topologies.front();
    auto t = parse_topology(cfg.outer.topology);
    TW_ASSERT(t.has_value());  // the field table's choices
    return *t;
}

void resolve_topology(RunConfig& cfg) {
    if (!cfg.outer.topology.empty()) return;
    if (auto a = parse_algorithm(cfg.outer.algorithm)) cfg.outer.topology = to_string(traits_of(*a).topologies.front());
}

std::string topology_problem(const RunConfig& cfg) {
    const auto a = parse_algorithm(cfg.outer.algorithm);
    if (!a || cfg.outer.topology.empty()) return "";
    const AlgorithmTraits& t = traits_of(*a);
    std::string runs;
    for (size_t i = 0; i < t.topologies.size(); ++i)
        runs += std::string(i == 0 ? "" : i + 1 == t.topologies.size() ? " or " : ", ") + to_string(t.topologies[i]);
    const std::string head = "outer.topology \"" + cfg.outer.topology + "\"";
    const auto topo = parse_topology(cfg.outer.topology);
    if (!topo) return head + " is unknown (expected ring, mesh or hub)";
    if (std::find(t.topologies.begin(), t.topologies.end(), *topo) != t.topologies.end()) return "";
    std::string why;
    if (!t.outer_rounds)
        why = *a == Algorithm::kDdp ? "ddp all-reduces its gradients through Gloo's ring every step"
                                    : std::string(t.name) + " exchanges nothing";
    else if (*topo == Topology::kRing)
        why = "its payloads are sparse (positions and values), which a ring cannot sum hop by hop, so they are "
              "all-gathered";
    else if (*topo == Topology::kHub)
        why = "a hub relays whole payloads, which only the sparse methods (sparseloco, demo) send as they are; "
              "dense payloads are all-reduced";
    else
        why = std::string(t.name) + " exchanges over " + runs + " only";
    return head + " does not apply to " + t.name + ": " + why + " (outer.topology = " + runs + ")";
}

Algorithm algorithm_of(const RunConfig& cfg) {
    auto a = parse_algorithm(cfg.outer.algorithm);
    TW_ASSERT(a.has_value());  // parse_config checked the name against the table
    return *a;
}

}  // namespace tw
