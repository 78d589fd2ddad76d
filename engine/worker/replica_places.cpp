// Replica places; see replica_places.h.
#include "engine/worker/replica_places.h"

#include <algorithm>
#include <string>

namespace tw {

ReplicaPlaces::ReplicaPlaces(int replicas, int mesh_size) : holder_(static_cast<size_t>(replicas)), mesh_size_(mesh_size) {
    for (int r = 0; r < replicas; ++r) holder_[static_cast<size_t>(r)] = r;
}

int ReplicaPlaces::replica_at(int rank) const {
    if (holder_.empty()) return rank;
    const auto it = std::find(holder_.begin(), holder_.end(), rank);
    return it == holder_.end() ? -1 : static_cast<int>(it - holder_.begin());
}

std::vector<int> ReplicaPlaces::by_rank(std::vector<int> replicas) const {
    std::sort(replicas.begin(), replicas.end(), [this](int a, int b) { return rank_of(a) < rank_of(b); });
    return replicas;
}

std::vector<int> ReplicaPlaces::ranks_of(const std::vector<int>& replicas) const {
    std::vector<int> out;
    for (int r : replicas) out.push_back(rank_of(r));
    return out;
}

std::vector<std::pair<int, int>> ReplicaPlaces::refill(const std::vector<int>& free,
                                                       const std::function<bool(int)>& rank_lost) {
    std::vector<std::pair<int, int>> out;
    std::vector<int> idle;  // standing by, by rank
    for (int k = static_cast<int>(holder_.size()); k < mesh_size_; ++k)
        if (replica_at(k) < 0 && !rank_lost(k)) idle.push_back(k);
    for (size_t i = 0; i < free.size() && i < idle.size(); ++i) {
        holder_[static_cast<size_t>(free[i])] = idle[i];
        out.emplace_back(free[i], idle[i]);
    }
    return out;
}

Status ReplicaPlaces::adopt(const std::vector<int>& holders) {
    if (holders.size() != holder_.size())
        return Status::error("names " + std::to_string(holders.size()) + " places for " + std::to_string(holder_.size()) +
                             " replicas");
    for (size_t r = 0; r < holders.size(); ++r) {
        if (holders[r] < 0 || holders[r] >= mesh_size_)
            return Status::error("place " + std::to_string(r) + " held by mesh rank " + std::to_string(holders[r]) +
                                 ", beyond the mesh's " + std::to_string(mesh_size_));
        for (size_t q = 0; q < r; ++q)
            if (holders[q] == holders[r]) return Status::error("mesh rank " + std::to_string(holders[r]) + " holds two places");
    }
    holder_ = holders;
    return Status::ok();
}

}  // namespace tw
