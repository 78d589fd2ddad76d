// Heterogeneous SparseLoCo's bookkeeping; see hetero.h.
#include "engine/pipeline/hetero.h"

#include <algorithm>

#include "engine/model/llama.h"

namespace tw {

int64_t stage_of_param(const ModelConfig& cfg, const std::string& name, int64_t n_stages) {
    if (name.rfind("tok_emb", 0) == 0) return 0;
    if (name.rfind("block_", 0) == 0) {
        const int64_t layer = std::stoll(name.substr(6, name.find('.') - 6));
        for (int64_t s = 0; s < n_stages; ++s)
            if (layer < stage_spec(cfg, s, n_stages).last_layer) return s;
    }
    return n_stages - 1;  // norm_f, head
}

GroupCollective::GroupCollective(Collective& mesh, std::vector<int> members) : mesh_(mesh), members_(std::move(members)) {
    auto it = std::find(members_.begin(), members_.end(), mesh.rank());
    rank_ = it == members_.end() ? -1 : static_cast<int>(it - members_.begin());
}

Result<std::vector<std::vector<uint8_t>>> GroupCollective::all_gather(const std::vector<uint8_t>& mine, LinkClass link,
                                                                      double sim_clock_s, std::vector<double>* clocks) {
    return mesh_.exchange(members_, mine, link, sim_clock_s, clocks);
}

Result<std::vector<std::vector<uint8_t>>> GroupCollective::exchange(const std::vector<int>& group,
                                                                    const std::vector<uint8_t>& mine, LinkClass link,
                                                                    double sim_clock_s, std::vector<double>* clocks) {
    std::vector<int> ranks;
    for (int g : group) {
        if (g < 0 || g >= size())
            return Result<std::vector<std::vector<uint8_t>>>::error("group collective: member " + std::to_string(g) +
                                                                    " outside 0.." + std::to_string(size() - 1));
        ranks.push_back(members_[static_cast<size_t>(g)]);
    }
    return mesh_.exchange(ranks, mine, link, sim_clock_s, clocks);
}

Status GroupCollective::agree(const std::vector<int>& group, uint64_t state_hash) {
    std::vector<int> ranks;
    for (int g : group) {
        if (g < 0 || g >= size())
            return Status::error("group collective: member " + std::to_string(g) + " outside 0.." +
                                 std::to_string(size() - 1));
        ranks.push_back(members_[static_cast<size_t>(g)]);
    }
    return mesh_.agree(ranks, state_hash);
}

Status GroupCollective::send(int peer, const std::vector<uint8_t>& payload, LinkClass link, double sim_clock_s,
                             bool count) {
    if (peer < 0 || peer >= size())
        return Status::error("group collective: member " + std::to_string(peer) + " outside 0.." + std::to_string(size() - 1));
    return mesh_.send(members_[static_cast<size_t>(peer)], payload, link, sim_clock_s, count);
}

Result<std::vector<uint8_t>> GroupCollective::recv(int peer, double* sender_clock_s) {
    if (peer < 0 || peer >= size())
        return Result<std::vector<uint8_t>>::error("group collective: member " + std::to_string(peer) + " outside 0.." +
                                                   std::to_string(size() - 1));
    return mesh_.recv(members_[static_cast<size_t>(peer)], sender_clock_s);
}

}  // namespace tw
