#include "core/algorithm.h"

#include "core/assert.h"

namespace tw {

const std::vector<AlgorithmTraits>& algorithm_table() {
    //                                                      rounds pipelines multi-node dense dtypes
    static const std::vector<AlgorithmTraits> table = {
        {Algorithm::kNone, "none", "one node, no synchronisation", false, true, false, false},
        {Algorithm::kDdp, "ddp", "gradients all-reduced every step", false, false, true, false},
        {Algorithm::kDiLoCo, "diloco", "dense pseudo-gradients every H steps, outer Nesterov", true, true, true, true},
        {Algorithm::kSparseLoCo, "sparseloco", "Top-k 2-bit pseudo-gradients with error feedback", true, true, false,
         false},
        {Algorithm::kStreamingDiLoCo, "streaming_diloco", "fragments synced in turn, overlapped, quantised", true,
         false, false, true},
        {Algorithm::kNoLoCo, "noloco", "random groups average weights, no collective", true, true, false, false},
    };
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

Algorithm algorithm_of(const RunConfig& cfg) {
    auto a = parse_algorithm(cfg.outer.algorithm);
    TW_ASSERT(a.has_value());  // parse_config checked the name against the table
    return *a;
}

}  // namespace tw
