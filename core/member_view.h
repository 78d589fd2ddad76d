// A round among the members still present (docs/faults.md): a Collective over a subset of another
// collective's members, renumbered 0..k−1 in ascending order of their ranks there. An outer
// algorithm handed a view runs its round among the survivors unchanged — its all-gathers, rings,
// groups and agreements see k members — while the bytes, clocks and liveness stay the underlying
// transport's. With every member in it the view is the transport itself, frame for frame.
//
// The hub (core/hub_exchange.h) runs among the view's members: the view names them to the
// transport (hub_round_among), and the relay waits for their uploads only.
//
// Not owned: `base` outlives the view. Thread-safety: the base's (one thread).
#pragma once

#include <vector>

#include "core/collective.h"
#include "core/hub_exchange.h"

namespace tw {

class MemberView : public Collective, public HubExchange {
public:
    // `members`: ranks of `base`, ascending, base.rank() among them (asserted).
    MemberView(Collective& base, std::vector<int> members);

    int rank() const override { return rank_; }
    int size() const override { return static_cast<int>(members_.size()); }
    // The view's member `i` as a rank of the base (a replica index, for the replica worker).
    int base_rank(int i) const { return members_[static_cast<size_t>(i)]; }
    const std::vector<int>& members() const { return members_; }
    bool everyone() const { return static_cast<int>(members_.size()) == base_.size(); }
    // View ranks as ranks of the base, in their order; an error names a rank outside the view.
    Result<std::vector<int>> base_ranks(const std::vector<int>& view_ranks) const;

    // A group's exchange in view ranks; all_gather is the exchange among the view's members (with
    // every member, the base's own all-gather).
    Result<std::vector<std::vector<uint8_t>>> exchange(const std::vector<int>& group, const std::vector<uint8_t>& mine,
                                                       LinkClass link, double sim_clock_s = 0,
                                                       std::vector<double>* clocks = nullptr) override;
    Result<std::vector<std::vector<uint8_t>>> all_gather(const std::vector<uint8_t>& mine, LinkClass link,
                                                         double sim_clock_s = 0,
                                                         std::vector<double>* clocks = nullptr) override;
    Status send(int peer, const std::vector<uint8_t>& payload, LinkClass link, double sim_clock_s,
                bool count = true) override;
    Result<std::vector<uint8_t>> recv(int peer, double* sender_clock_s = nullptr) override;
    Status agree(const std::vector<int>& group, uint64_t state_hash) override;
    Result<std::vector<uint64_t>> gather_words(const std::vector<int>& group, uint64_t word) override;
    const ByteCounters& counters() const override { return base_.counters(); }
    double real_exchange_s() const override { return base_.real_exchange_s(); }
    void add_real_exchange_s(double s) override { base_.add_real_exchange_s(s); }
    // The base's membership, in the base's ranks (base_ranks translates a view's).
    Membership& membership() override { return base_.membership(); }

    Result<std::vector<std::vector<uint8_t>>> hub_round(const std::vector<uint8_t>& mine, double sim_clock_s,
                                                        std::vector<double>* clocks) override;
    // `members` in view ranks.
    Result<std::vector<std::vector<uint8_t>>> hub_round_among(const std::vector<int>& members,
                                                              const std::vector<uint8_t>& mine, double sim_clock_s,
                                                              std::vector<double>* clocks) override;
    bool has_hub() const override;

private:
    Collective& base_;
    std::vector<int> members_;
    int rank_ = 0;
};

}  // namespace tw
