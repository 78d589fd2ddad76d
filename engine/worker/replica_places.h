// Which data-plane node holds each replica's place (docs/faults.md "Spares"). A place is a
// replica's identity — its index, its part of the training data, its name in the rounds — and is
// held by one mesh rank: replica r by rank r until a spare (ranks R, R+1, … of the mesh) takes it
// over after the replica was lost for good. Every member of a round computes the same refills, and
// a joiner or spare adopts its donor's table after checking it. Member lists of rounds are replicas
// in the order of the ranks holding them (a MemberView's order).
//
// Pure data: no LibTorch, no sockets. Not thread-safe (the replica worker's thread).
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "core/status.h"

namespace tw {

class ReplicaPlaces {
public:
    ReplicaPlaces() = default;  // no table: replica r is rank r (runs that cannot lose replicas)
    // Every replica in its own place; mesh ranks replicas..mesh_size−1 stand by.
    ReplicaPlaces(int replicas, int mesh_size);

    bool empty() const { return holder_.empty(); }
    int rank_of(int replica) const { return holder_.empty() ? replica : holder_[static_cast<size_t>(replica)]; }
    // The replica whose place mesh rank `rank` holds; −1 for a spare standing by.
    int replica_at(int rank) const;
    // Whether replica r's place is held by a spare.
    bool refilled(int replica) const { return rank_of(replica) != replica; }
    // `replicas` ordered by the ranks holding them, and those ranks (a round's member order).
    std::vector<int> by_rank(std::vector<int> replicas) const;
    std::vector<int> ranks_of(const std::vector<int>& replicas) const;
    // Gives the places `free` (ascending replicas) to the ranks standing by that `rank_lost` does not
    // name, ascending, as far as they go; returns the (replica, rank) pairs made.
    std::vector<std::pair<int, int>> refill(const std::vector<int>& free, const std::function<bool(int)>& rank_lost);
    const std::vector<int>& holders() const { return holder_; }
    // A donor's table (untrusted): one place per replica, each held by a distinct rank of the mesh.
    // The error says what is wrong; nothing changes then.
    Status adopt(const std::vector<int>& holders);

private:
    std::vector<int> holder_;  // holder_[r]: the mesh rank holding replica r's place
    int mesh_size_ = 0;
};

}  // namespace tw
