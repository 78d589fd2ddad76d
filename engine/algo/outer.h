// The interface every outer algorithm implements for the replica worker (docs/methods.md §2–§5, §11):
// after each inner step the worker calls after_step(); the algorithm does whatever it does at that
// step (most steps: nothing) over the byte-level Collective, and reports what crossed the wire and
// whose clocks it waited for, so the worker can advance the node's simulated clock by one rule.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "core/collective.h"
#include "core/config.h"
#include "core/status.h"

namespace tw {

struct RoundReport {
    bool synced = false;              // a synchronisation happened at this step
    uint64_t bytes_sent = 0;          // payload bytes this node sent in it (what the transport counted)
    int64_t hops = 1;                 // sequential transfers (latencies) of the exchange
    std::vector<double> clocks;       // simulated clocks of every member it exchanged with, own included
    std::vector<int> members;         // replica indices of those members, ascending (empty = all replicas)
    int64_t overlap_steps = 0;        // Streaming DiLoCo's τ: the result is applied this many steps later,
                                      // so the transfer overlaps them (0 = applied now, fully exposed)
    std::string what;                 // e.g. "fragment 2", "group 1 of 2", for events and metrics
    int guard_clipped = 0;            // contributions the aggregation guard scaled down (outer.guard_ratio)
};

// What the members of the last round must now hold identically, for the round agreement
// (Collective::agree): `group` in the collective's ranks, ascending, this member included (empty =
// every rank), and the tensors whose state_hash (engine/algo/state_hash.h) they compare.
struct AgreedState {
    std::vector<int> group;
    std::vector<torch::Tensor> tensors;
};

// Adaptations a worker attaches to whatever outer algorithm it holds: heterogeneous SparseLoCo's AD
// switches (docs/methods.md §7) keep subspace-constrained replicas inside their subspace through the
// algorithm's rounds. Empty hooks change nothing.
struct RoundHooks {
    // AD3: runs on each tensor's outer-gradient buffer (SparseLoCo: the error feedback after
    // e ← β·e + Δ) before it is encoded; `tensor` is its position in the algorithm's parameters.
    std::function<void(size_t tensor, torch::Tensor& buffer)> before_encode;
    // AD1 / AD2: runs after the round's outer step and θ_r ← θ_global, on the global copy and the
    // live weights (both in parameter order); may change either.
    std::function<void(std::vector<torch::Tensor>& global, std::vector<torch::Tensor>& live)> after_round;
    // AD6: Δ_r from the live weights as they stood after the last round's hooks, not from θ_global.
    bool delta_from_start = false;
};

// Which hooks an algorithm runs itself; the worker applies what it can of the rest (AD1 after the
// round) and the others have no place in that algorithm.
// Everything an algorithm carries from one round to the next, by name (θ_global, outer momentum,
// error feedback, fragment results still queued, ...), as copies: what a joining replica receives
// (docs/faults.md), what a checkpoint holds and what a round interrupted by a lost member is rolled
// back to before it is redone among the survivors.
using OuterState = std::vector<std::pair<std::string, torch::Tensor>>;

struct HookSupport {
    bool before_encode = false;
    bool after_round = false;
    bool delta_from_start = false;
};

class OuterAlgorithm {
public:
    virtual ~OuterAlgorithm() = default;
    virtual std::string name() const = 0;
    // Called after inner step `step` (1-based) with this node's simulated clock. The algorithm may
    // exchange over `c` (LinkClass::kOuterSync) and change the model's parameters in place.
    virtual Result<RoundReport> after_step(int64_t step, Collective& c, double sim_clock_s) = 0;
    // The global (outer) parameters to evaluate; the live parameters when the algorithm keeps none.
    virtual std::vector<torch::Tensor> eval_params() const = 0;
    // After a round (a report with synced = true): what its members now hold identically.
    virtual AgreedState agreed_state() const = 0;
    // Whether after_step(step) runs an exchange over the collective (a round, or a fragment's).
    virtual bool round_at(int64_t step) const = 0;

    // ---- state (recovery, checkpoints, rollback) ----
    // Copies of the state, by name (outer.cpp's put_tensors names a list "global.0", "global.1", ...).
    virtual OuterState save_state() const = 0;
    // Restores a save_state() of the same algorithm over the same model. A name this algorithm
    // keeps that `s` lacks is a newcomer's: reset as at construction (SparseLoCo's error feedback
    // starts at zero). Errors: a tensor of another shape or an unknown name; the algorithm's state is
    // then undefined (the caller stops using it).
    virtual Status load_state(const OuterState& s) = 0;
    // Whether state `name` is this replica's own, which a newcomer does not receive (error
    // feedback, DeMo's momentum): it starts as at construction instead. Default: none.
    virtual bool private_state(const std::string& name) const { return false; }

    // ---- hooks (optional) ----
    // Installs `hooks` and returns which of them this algorithm runs (default: none).
    virtual HookSupport set_round_hooks(RoundHooks hooks) { return {}; }

    // ---- replaying rounds elsewhere (optional; AD2 on a pipeline's later stages) ----
    // Every member's encoding of the leading tensor (parameter 0) in the last round, concatenated in
    // member order, when this algorithm's payloads hold it as a separable prefix; nullopt otherwise
    // (then the worker sends the tensor the round produced itself).
    virtual std::optional<std::vector<uint8_t>> leading_tensor_payloads() const { return std::nullopt; }
    // Replays a round from such bytes on an algorithm built over that tensor alone, exactly as the
    // members ran it (aggregation, outer step, hooks), so a non-member keeps a bit-identical copy.
    // The round's members are as many as the bytes hold encodings (a round among survivors has
    // fewer than the run's replicas); more than `max_members` is an error. Default: not replayable.
    virtual Status replay_round(const std::vector<uint8_t>& leading_payloads, int max_members) {
        return Status::error(name() + " rounds cannot be replayed from their payloads");
    }
};

// The state helpers every algorithm's save_state / load_state use: `list` as "prefix.0", "prefix.1"...
// (copies), and back into `list` (copy_, shapes checked); a missing list is left alone and reported
// by the return value (false), so the caller can reset it as a newcomer's.
void put_tensors(OuterState& s, const std::string& prefix, const std::vector<torch::Tensor>& list);
Result<bool> take_tensors(const OuterState& s, const std::string& prefix, std::vector<torch::Tensor>& list);
// Names in `s` that no prefix of `known` accounts for (an unknown name is an error of load_state).
std::string unknown_state(const OuterState& s, const std::vector<std::string>& known);

// The round agreement after a synced round: hashes `a`'s agreed_state() and compares it among the
// round's members over `c` (one mesh round, no payload bytes). Returns the hash; a mismatch is an
// error naming the member(s) that differ.
Result<uint64_t> agree_on_round(const OuterAlgorithm& a, Collective& c);

// For an evaluation of the global model: copies an algorithm's eval_params() into the live
// parameters and puts the live values back when it goes out of scope (the algorithms that keep
// local weights differing from the global ones need this; for the others it is a no-op in effect).
class GlobalWeightsSwap {
public:
    GlobalWeightsSwap() = default;
    // Swaps in `global` for `live` (paired by position); callable once per slice of parameters.
    void add(std::vector<torch::Tensor> live, const std::vector<torch::Tensor>& global);
    ~GlobalWeightsSwap();
    GlobalWeightsSwap(const GlobalWeightsSwap&) = delete;
    GlobalWeightsSwap& operator=(const GlobalWeightsSwap&) = delete;

private:
    std::vector<std::pair<torch::Tensor, torch::Tensor>> saved_;  // (live, its values before)
};

// What an algorithm's constructor receives (engine/algo/registry.h): the run's config, the
// replica's live parameters (their order and shapes identical on every replica; the algorithm
// keeps these handles and changes the values in place), their names (for fragments; may be
// empty), and this node's place among the replicas.
struct OuterBuild {
    const RunConfig& cfg;
    std::vector<torch::Tensor> params;
    std::vector<std::string> names;
    int replica = 0, replicas = 1;
};

// Builds the algorithm cfg.outer.algorithm names, through its row of the engine's registry
// (engine/algo/registry.h), over the replica's live parameters (their order and shapes identical
// on every replica). `names` are the parameters' names (for fragments). `replica` / `replicas`
// place this node among the replicas. Every problem of the config for that algorithm comes back
// in one message; an algorithm without an OuterAlgorithm (ddp, none) is an error naming it.
// Defined in registry.cpp.
Result<std::unique_ptr<OuterAlgorithm>> make_outer_algorithm(const RunConfig& cfg, std::vector<torch::Tensor> params,
                                                             std::vector<std::string> names, int replica,
                                                             int replicas);

}  // namespace tw
