// Heterogeneous SparseLoCo's bookkeeping (docs/methods.md §7): which stage a parameter belongs to, which
// subspace each replica's writers are kept in, and the view of the mesh one stage's holders sync over.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/collective.h"
#include "core/config.h"
#include "core/layout.h"

namespace tw {

// Stage of a whole-model parameter in an n_stages split, by the names Llama registers:
// tok_emb → 0, block_l.* → the stage holding layer l, norm_f and head → the last.
int64_t stage_of_param(const ModelConfig& cfg, const std::string& name, int64_t n_stages);

// constraint_rank, run_constraint_rank and run_has_compression are config rules: core/layout.h.

// The mesh seen by one group (the holders of a stage): ranks are positions in `members` (mesh
// ranks, ascending). all_gather and exchange map onto the mesh's exchange, send and recv onto the
// mesh's point-to-point messages to and from the member at that position (a stage round's ring
// all-reduce runs over them; stage holders exchange no other point-to-point messages, so they
// cannot interleave with a pipeline's activations). Not thread-safe, as the mesh it wraps.
class GroupCollective : public Collective {
public:
    GroupCollective(Collective& mesh, std::vector<int> members);
    int rank() const override { return rank_; }
    int size() const override { return static_cast<int>(members_.size()); }
    Result<std::vector<std::vector<uint8_t>>> all_gather(const std::vector<uint8_t>& mine, LinkClass link,
                                                         double sim_clock_s = 0,
                                                         std::vector<double>* clocks = nullptr) override;
    Result<std::vector<std::vector<uint8_t>>> exchange(const std::vector<int>& group, const std::vector<uint8_t>& mine,
                                                       LinkClass link, double sim_clock_s = 0,
                                                       std::vector<double>* clocks = nullptr) override;
    Status agree(const std::vector<int>& group, uint64_t state_hash) override;
    Status send(int peer, const std::vector<uint8_t>& payload, LinkClass link, double sim_clock_s,
                bool count = true) override;
    Result<std::vector<uint8_t>> recv(int peer, double* sender_clock_s = nullptr) override;
    const ByteCounters& counters() const override { return mesh_.counters(); }
    double real_exchange_s() const override { return mesh_.real_exchange_s(); }
    void add_real_exchange_s(double s) override { mesh_.add_real_exchange_s(s); }

private:
    Collective& mesh_;
    std::vector<int> members_;
    int rank_ = -1;
};

}  // namespace tw
