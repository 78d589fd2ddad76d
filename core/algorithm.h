// The algorithm registry: the one place that names every way replicas synchronise
// (outer.algorithm). Everything else asks for an Algorithm and its row; no other file compares an
// algorithm's name as a string. A row is complete: its traits, the outer.* keys it reads, its
// Torch-free settings checks, its round schedule and what its exchange holds in memory. The
// engine's side of the same algorithm (its construction and its planned round cost) is a row of
// engine/algo/registry.h under the same id.
//
// The built-in algorithms' rows are listed in core/algorithm.cpp, in enum order. Another algorithm
// is added from its own file alone, linked into the binary that runs it, by a registration at
// static initialisation (docs/adding_a_method.md):
//     const Algorithm kMine = register_algorithm(mine_traits());   // this row; its id is returned
//     ... register_outer_algorithm({kMine, ...});                   // engine/algo/registry.h
// A malformed row, or a name already taken, aborts the program at registration with a message
// naming it.
//
// Pure data, no LibTorch. Thread-safety: rows are added only while static objects are
// initialised (before main, on one thread); after that the table is read-only and every function
// here is thread-safe. A row never moves once added (references stay valid).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/algorithm_id.h"
#include "core/config.h"
#include "core/topology.h"

namespace tw {

// An algorithm's settings checks against the whole config: appends one line per problem, each
// naming the key and the reason. Called by validate_config only when cfg names this algorithm.
using SettingsCheck = void (*)(const RunConfig& cfg, std::vector<std::string>& problems);

// The round schedule: inner steps from one exchange over the wire to the next, ≥ 1. Steps that
// are multiples of it are where an exchange happens (for an algorithm with outer rounds), where
// membership may change and where a replica that was down comes back (core/fault_schedule.h).
using RoundPeriod = int64_t (*)(const RunConfig& cfg);

// What an algorithm's exchange holds in a node's memory, for core/memory_estimate.h.
struct ExchangeMemory {
    int64_t copies = 0;        // fp32 copies of the synced parameters kept besides the live weights
    bool bucket = false;       // the gradients flattened into one fp32 bucket (DDP)
    int64_t unit = 0;          // parameters one round syncs: all P, or one Streaming DiLoCo fragment's
    double payload_bytes = 0;  // one member's encoded payload of `unit` values
    int64_t held = 0;          // payloads a node holds at once during a round (0: no exchange)
};
// Of a node holding `params` parameters under cfg.
using MemoryModel = ExchangeMemory (*)(const RunConfig& cfg, int64_t params);

struct AlgorithmTraits {
    Algorithm id = Algorithm::kNone;  // set by the table (register_algorithm returns it)
    const char* name = nullptr;       // the outer.algorithm value, e.g. "sparseloco": 1–32 of a–z, 0–9, _
    const char* summary = nullptr;    // one line for help texts and the layout editor
    bool outer_rounds = false;        // syncs every outer.inner_steps steps through an OuterAlgorithm
    bool pipelines = false;           // pipeline replicas (cluster.stages > 1) can sync stage by stage
    bool multi_node_replicas = false; // a replica may span several nodes (cluster.nodes_per_replica > 1)
    bool dense_wire_dtypes = false;   // outer.dtype may be bf16 / int8 / fp4 (else fp32 only)
    // Its payloads are sparse (positions and values): all-gathered, never summed hop by hop over a
    // ring; a hub relays them as they are. What topology_problem says when a topology is refused.
    bool sparse_payloads = false;
    // The outer.* keys its settings live in, in the field table's order: what the layout editor
    // draws for it and what config_field_info's `algorithms` is derived from.
    std::vector<const char*> keys;
    SettingsCheck check = nullptr;  // its cross-field checks; nullptr = none
    // The outer.topology values its exchange can run over (core/topology.h), its default first: the
    // value an empty outer.topology resolves to when a config is parsed. At least one.
    std::vector<Topology> topologies;
    // The keys that define the method, shown for every run of it whether or not they differ
    // (core/settings_diff.h: `runs compare`, `report`, the workbench's History). May be empty.
    std::vector<std::string> defining_keys;
    RoundPeriod round_period = nullptr;  // required
    MemoryModel memory = nullptr;        // required
};

// Adds `row` as the next algorithm and returns its id (beyond the built-in ones). Call it from a
// static initialiser only (see above). Aborts, naming the row, on a malformed name, a name
// already taken, no summary, no topology, or no round_period or memory.
Algorithm register_algorithm(AlgorithmTraits row);

// Every algorithm, in id order: the built-in ones (enum order), then the registered ones.
const std::deque<AlgorithmTraits>& algorithm_table();
const AlgorithmTraits& traits_of(Algorithm a);
const char* to_string(Algorithm a);
// nullopt for a name no algorithm has.
std::optional<Algorithm> parse_algorithm(std::string_view name);
// "none, ddp, diloco, …" for messages.
std::string algorithm_names();
// The names of the algorithms whose traits satisfy `pred`, as "a, b or c" for messages.
std::string algorithm_names_where(bool (*pred)(const AlgorithmTraits&));
// The algorithms whose settings include dotted key `key` (e.g. "outer.topk_k"), in id order;
// empty for a key no algorithm lists (a general key such as outer.replicas).
std::vector<Algorithm> algorithms_using(std::string_view key);

// The algorithm cfg.outer.algorithm names; nullopt for a name no algorithm has. The parsed id
// (OuterConfig::algorithm_id) when it still matches the name (one comparison with its row's name),
// else the name looked up in the table: a config built or changed in code.
std::optional<Algorithm> named_algorithm(const RunConfig& cfg);
// The same for a config whose name was checked (parse_config, validate_config): asserts on an
// unknown name.
Algorithm algorithm_of(const RunConfig& cfg);
inline const AlgorithmTraits& algorithm_traits(const RunConfig& cfg) { return traits_of(algorithm_of(cfg)); }
// Sets OuterConfig::algorithm_id from the name (left as it is for an unknown name, which
// validate_config reports), then resolve_topology. parse_config calls it.
void resolve_algorithm(RunConfig& cfg);

// The algorithm's round schedule (its row's round_period): steps between two exchanges, where
// membership may change: H, or H/F for Streaming DiLoCo's fragments.
int64_t round_period(const RunConfig& cfg);

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

}  // namespace tw
