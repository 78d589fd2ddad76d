// The algorithm registry's table: each built-in algorithm's row (traits, settings keys, Torch-free
// settings checks, round schedule, exchange memory) and the registration of further rows.
#include "core/algorithm.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

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

// ---- round schedules ----

// One exchange every H steps.
int64_t every_round(const RunConfig& c) { return std::max<int64_t>(1, c.outer.inner_steps); }

// Streaming DiLoCo: one fragment's exchange every H/F steps.
int64_t every_fragment(const RunConfig& c) {
    if (c.outer.fragments > 0) return std::max<int64_t>(1, c.outer.inner_steps / c.outer.fragments);
    return every_round(c);
}

// ---- exchange memory (core/memory_estimate.h) ----

// Payloads a node holds at once in a round of every replica: two over a ring, every replica's on a
// mesh or a hub.
int64_t held_in_round(const RunConfig& c) {
    const int64_t R = std::max<int64_t>(1, c.outer.replicas + c.cluster.spares);
    return topology_of(c) == Topology::kRing ? 2 : R;
}

// Bytes one value takes on the wire for a dense outer dtype.
double dense_bytes_per_value(const std::string& dtype) {
    if (dtype == "bf16") return 2;
    if (dtype == "int8") return 1;
    if (dtype == "fp4") return 0.5;
    return 4;
}

ExchangeMemory memory_none(const RunConfig&, int64_t params) { return {0, false, params, 0, 0}; }

ExchangeMemory memory_ddp(const RunConfig&, int64_t params) { return {0, true, params, 0, 0}; }

// θ_global and the outer momentum; the pseudo-gradients in outer.dtype.
ExchangeMemory memory_diloco(const RunConfig& c, int64_t params) {
    return {2, false, params, static_cast<double>(params) * dense_bytes_per_value(c.outer.dtype), held_in_round(c)};
}

// θ_global and the error feedback (and AD6's start weights in a pipeline run); k kept per c² values,
// 12-bit position + 2-bit code each (docs/methods.md §3).
ExchangeMemory memory_sparseloco(const RunConfig& c, int64_t params) {
    const OuterConfig& o = c.outer;
    const double density = static_cast<double>(o.topk_k) / static_cast<double>(o.topk_chunk * o.topk_chunk);
    return {c.pipeline_replicas() > 0 && c.pipeline.has("ad6") ? 3 : 2, false, params,
            static_cast<double>(params) * density * 14.0 / 8.0, held_in_round(c)};
}

// θ_global and the outer momentum; a round sends one fragment of ⌈P/F⌉ parameters in outer.dtype.
ExchangeMemory memory_streaming_diloco(const RunConfig& c, int64_t params) {
    const int64_t unit = (params + c.outer.fragments - 1) / std::max<int64_t>(1, c.outer.fragments);
    return {2, false, unit, static_cast<double>(unit) * dense_bytes_per_value(c.outer.dtype), held_in_round(c)};
}

// The slow weights φ and the last θ − φ; [φ | θ − φ] in fp32 on the wire, at most 2g − 1 payloads
// held on a mesh, two over a ring.
ExchangeMemory memory_noloco(const RunConfig& c, int64_t params) {
    const int64_t R = std::max<int64_t>(1, c.outer.replicas + c.cluster.spares);
    const int64_t held = topology_of(c) == Topology::kRing ? 2 : std::min(R, 2 * c.outer.group_size - 1);
    return {2, false, params, 8.0 * static_cast<double>(params), held};
}

// θ_global and the momentum; per kept coefficient a 12-bit position and its value (fp32 or one
// sign bit).
ExchangeMemory memory_demo(const RunConfig& c, int64_t params) {
    const OuterConfig& o = c.outer;
    const double density = static_cast<double>(o.demo_topk) / static_cast<double>(o.demo_chunk * o.demo_chunk);
    return {2, false, params, static_cast<double>(params) * density * (1.5 + (o.demo_values == "sign" ? 0.125 : 4.0)),
            held_in_round(c)};
}

// ---- the table ----

AlgorithmTraits row(Algorithm id, const char* name, const char* summary, bool rounds, bool pipelines, bool multi_node,
                    bool dense_dtypes, bool sparse, std::vector<const char*> keys, SettingsCheck check,
                    std::vector<Topology> topologies, std::vector<std::string> defining, RoundPeriod period,
                    MemoryModel memory) {
    AlgorithmTraits t;
    t.id = id, t.name = name, t.summary = summary;
    t.outer_rounds = rounds, t.pipelines = pipelines, t.multi_node_replicas = multi_node, t.dense_wire_dtypes = dense_dtypes;
    t.sparse_payloads = sparse;
    t.keys = std::move(keys), t.check = check, t.topologies = std::move(topologies), t.defining_keys = std::move(defining);
    t.round_period = period, t.memory = memory;
    return t;
}

// The built-in rows, in enum order.
std::deque<AlgorithmTraits> builtin_rows() {
    // clang-format off
    // Topologies: a ring sums payloads hop by hop, so the dense exchanges take it (DiLoCo and
    // Streaming DiLoCo by default); NoLoCo's groups are pairs by default, where a ring
    // sends the mesh's bytes in two hops instead of one, so it keeps the mesh unless asked; sparse
    // payloads all-gather. DDP's ring is Gloo's; none exchanges nothing.
    // None and DDP have no outer rounds; their period H is where a replica that was down comes back.
    constexpr auto kRing = Topology::kRing, kMesh = Topology::kMesh, kHub = Topology::kHub;
    //                                                   rounds pipelines multi-node dense dtypes sparse
    return {
        row(Algorithm::kNone, "none", "one node, no synchronisation", false, true, false, false, false, {}, nullptr,
            {kRing, kMesh}, {}, every_round, memory_none),
        row(Algorithm::kDdp, "ddp", "gradients all-reduced every step", false, false, true, false, false, {}, nullptr,
            {kRing}, {}, every_round, memory_ddp),
        row(Algorithm::kDiLoCo, "diloco", "dense pseudo-gradients every H steps, outer Nesterov", true, true, true, true,
            false,
            {"outer.inner_steps", "outer.lr", "outer.momentum", "outer.dtype", "outer.topology", "outer.guard_ratio",
             "outer.round_time_s", "outer.round_deadline_s"},
            nullptr, {kRing, kMesh},
            {"outer.inner_steps", "outer.lr", "outer.momentum", "outer.dtype"}, every_round, memory_diloco),
        row(Algorithm::kSparseLoCo, "sparseloco", "Top-k 2-bit pseudo-gradients with error feedback", true, true, false,
            false, true,
            {"outer.inner_steps", "outer.lr", "outer.topk_chunk", "outer.topk_k", "outer.ef_beta", "outer.aggregation",
             "outer.clip_median", "outer.topology", "outer.guard_ratio", "outer.round_time_s", "outer.round_deadline_s"},
            check_sparseloco, {kMesh, kHub},
            {"outer.inner_steps", "outer.lr", "outer.topk_k", "outer.topk_chunk"}, every_round, memory_sparseloco),
        row(Algorithm::kStreamingDiLoCo, "streaming_diloco", "fragments synced in turn, overlapped, quantised", true,
            false, false, true, false,
            {"outer.inner_steps", "outer.lr", "outer.momentum", "outer.dtype", "outer.topology", "outer.fragments",
             "outer.fragment_order", "outer.overlap_steps", "outer.mix_alpha", "outer.guard_ratio",
             "outer.round_deadline_s"},
            check_streaming_diloco, {kRing, kMesh},
            {"outer.inner_steps", "outer.lr", "outer.dtype", "outer.fragments", "outer.overlap_steps"}, every_fragment,
            memory_streaming_diloco),
        row(Algorithm::kNoLoCo, "noloco", "random groups average weights, no collective", true, true, false, false, false,
            {"outer.inner_steps", "outer.lr", "outer.momentum", "outer.topology", "outer.group_size", "outer.guard_ratio",
             "outer.round_deadline_s"},
            check_noloco, {kMesh, kRing},
            {"outer.inner_steps", "outer.lr", "outer.group_size"}, every_round, memory_noloco),
        row(Algorithm::kDeMo, "demo", "momentum, DCT per chunk, Top-k coefficients, sign update", true, false, false,
            false, true,
            {"outer.inner_steps", "outer.lr", "outer.demo_chunk", "outer.demo_topk", "outer.demo_beta",
             "outer.demo_values", "outer.demo_sign_update", "outer.topology", "outer.guard_ratio",
             "outer.round_deadline_s"},
            check_demo, {kMesh, kHub},
            {"outer.inner_steps", "outer.lr", "outer.demo_topk", "outer.demo_chunk"}, every_round, memory_demo),
    };
    // clang-format on
}

// The table, built on first use (a registration may come first) and never destroyed: rows outlive
// every static that may hold a reference to one.
std::deque<AlgorithmTraits>& table() {
    static auto* t = new std::deque<AlgorithmTraits>(builtin_rows());
    return *t;
}

[[noreturn]] void refuse_row(const std::string& name, const std::string& why) {
    std::fprintf(stderr, "register_algorithm(\"%s\"): %s\n", name.c_str(), why.c_str());
    std::abort();
}

bool well_formed(std::string_view name) {
    return !name.empty() && name.size() <= 32 && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
}

}  // namespace

Algorithm register_algorithm(AlgorithmTraits r) {
    const std::string name = r.name ? r.name : "";
    if (!well_formed(name)) refuse_row(name, "a name is 1–32 characters of a–z, 0–9 and _");
    if (parse_algorithm(name)) refuse_row(name, "the name is registered already (algorithms: " + algorithm_names() + ")");
    if (!r.summary) refuse_row(name, "the row has no summary");
    if (r.topologies.empty()) refuse_row(name, "the row names no topology its exchange runs over");
    if (!r.round_period) refuse_row(name, "the row has no round_period (its round schedule)");
    if (!r.memory) refuse_row(name, "the row has no memory model (core/memory_estimate.h)");
    auto& t = table();
    r.id = static_cast<Algorithm>(t.size());
    t.push_back(std::move(r));
    return t.back().id;
}

const std::deque<AlgorithmTraits>& algorithm_table() { return table(); }

const AlgorithmTraits& traits_of(Algorithm a) {
    const auto& t = algorithm_table();
    const auto i = static_cast<size_t>(a);
    TW_ASSERT(i < t.size() && t[i].id == a);  // the table is in id order
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
    if (auto a = named_algorithm(cfg)) cfg.outer.topology = to_string(traits_of(*a).topologies.front());
}

std::string topology_problem(const RunConfig& cfg) {
    const auto a = named_algorithm(cfg);
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
    else if (*topo == Topology::kRing && t.sparse_payloads)
        why = "its payloads are sparse (positions and values), which a ring cannot sum hop by hop, so they are "
              "all-gathered";
    else if (*topo == Topology::kHub && !t.sparse_payloads) {
        std::string sparse;
        for (auto& other : algorithm_table())
            if (other.sparse_payloads) sparse += (sparse.empty() ? "" : ", ") + std::string(other.name);
        why = "a hub relays whole payloads, which only the sparse methods (" + sparse +
              ") send as they are; dense payloads are all-reduced";
    } else
        why = std::string(t.name) + " exchanges over " + runs + " only";
    return head + " does not apply to " + t.name + ": " + why + " (outer.topology = " + runs + ")";
}

std::optional<Algorithm> named_algorithm(const RunConfig& cfg) {
    const auto i = static_cast<size_t>(cfg.outer.algorithm_id);
    const auto& t = table();
    if (i < t.size() && cfg.outer.algorithm == t[i].name) return cfg.outer.algorithm_id;
    return parse_algorithm(cfg.outer.algorithm);  // built or changed in code after parsing
}

Algorithm algorithm_of(const RunConfig& cfg) {
    auto a = named_algorithm(cfg);
    TW_ASSERT(a.has_value());  // parse_config checked the name against the table
    return *a;
}

void resolve_algorithm(RunConfig& cfg) {
    if (auto a = parse_algorithm(cfg.outer.algorithm)) cfg.outer.algorithm_id = *a;
    resolve_topology(cfg);
}

int64_t round_period(const RunConfig& cfg) { return algorithm_traits(cfg).round_period(cfg); }

}  // namespace tw
