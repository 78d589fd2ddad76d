// The algorithm registry: the one place that names every way replicas synchronise
// (outer.algorithm). Everything else asks for an Algorithm and its traits; no other file
// compares an algorithm's name as a string. Adding a method: one enum value and one row in
// core/algorithm.cpp (its traits, the outer.* keys it reads, its Torch-free settings checks), its
// keys in the field table (core/config.h, core/config_io.cpp), plus its own files under
// engine/algo/ registered once in engine/algo/registry.cpp (README "Adding a method").
//
// Pure data, no LibTorch; every function is thread-safe (the table is immutable).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/topology.h"

namespace tw {

enum class Algorithm : int {
    kNone,             // one node, no synchronisation (`thinwire train`)
    kDdp,              // gradients all-reduced every step (docs/methods.md §1)
    kDiLoCo,           // dense pseudo-gradients every H steps, outer Nesterov (§2)
    kSparseLoCo,       // Top-k + 2-bit pseudo-gradients with error feedback (§3)
    kStreamingDiLoCo,  // fragments synced in turn, overlapped, quantised (§4)
    kNoLoCo,           // random groups average weights, no collective (§5)
    kDeMo,             // momentum, DCT per chunk, Top-k of the transform, sign update (docs/demo.md)
};

// An algorithm's settings checks against the whole config: appends one line per problem, each
// naming the key and the reason. Called by validate_config only when cfg names this algorithm.
using SettingsCheck = void (*)(const RunConfig& cfg, std::vector<std::string>& problems);

struct AlgorithmTraits {
    Algorithm id;
    const char* name;          // the outer.algorithm value, e.g. "sparseloco"
    const char* summary;       // one line for help texts and the layout editor
    bool outer_rounds;         // syncs every outer.inner_steps steps through an OuterAlgorithm
    bool pipelines;            // pipeline replicas (cluster.stages > 1) can sync stage by stage
    bool multi_node_replicas;  // a replica may span several nodes (cluster.nodes_per_replica > 1)
    bool dense_wire_dtypes;    // outer.dtype may be bf16 / int8 / fp4 (else fp32 only)
    // The outer.* keys its settings live in, in the field table's order: what the layout editor
    // draws for it and what config_field_info's `algorithms` is derived from.
    std::vector<const char*> keys;
    SettingsCheck check;  // its cross-field checks; nullptr = none
    // The outer.topology values its exchange can run over (core/topology.h), its default first: the
    // value an empty outer.topology resolves to when a config is parsed.
    std::vector<Topology> topologies;
};

// Every algorithm, in enum order.
const std::vector<AlgorithmTraits>& algorithm_table();
const AlgorithmTraits& traits_of(Algorithm a);
const char* to_string(Algorithm a);
// nullopt for a name no algorithm has.
std::optional<Algorithm> parse_algorithm(std::string_view name);
// "none, ddp, diloco, …" for messages.
std::string algorithm_names();
// The names of the algorithms whose traits satisfy `pred`, as "a, b or c" for messages.
std::string algorithm_names_where(bool (*pred)(const AlgorithmTraits&));
// The algorithms whose settings include dotted key `key` (e.g. "outer.topk_k"), in enum order;
// empty for a key no algorithm lists (a general key such as outer.replicas).
std::vector<Algorithm> algorithms_using(std::string_view key);

// The topology a config's outer rounds use: outer.topology, or the algorithm's default when it is
// empty (a config built in code; parse_config fills it in). Asserts on an unknown algorithm or
// topology name, as algorithm_of does (parse_config checked both).
Topology topology_of(const RunConfig& cfg);
// Fills an empty outer.topology with the algorithm's default (a config naming an unknown algorithm
// is left as it is, for validate_config to report).
void resolve_topology(RunConfig& cfg);
// The problem with cfg's outer.topology for its algorithm ("" = none): a name that is not a
// topology, or one the algorithm does not run, saying which it does and why.
std::string topology_problem(const RunConfig& cfg);

// The algorithm a config names. cfg.outer.algorithm is checked against the table when a config is
// parsed (core/config_io.h), so this asserts on an unknown name.
Algorithm algorithm_of(const RunConfig& cfg);
inline const AlgorithmTraits& algorithm_traits(const RunConfig& cfg) { return traits_of(algorithm_of(cfg)); }

}  // namespace tw
