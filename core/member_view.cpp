// A collective over the members still present; see member_view.h.
#include "core/member_view.h"

#include <algorithm>
#include <string>

#include "core/assert.h"

namespace tw {

MemberView::MemberView(Collective& base, std::vector<int> members) : base_(base), members_(std::move(members)) {
    const auto it = std::find(members_.begin(), members_.end(), base_.rank());
    TW_ASSERT(it != members_.end() && std::is_sorted(members_.begin(), members_.end()));
    rank_ = static_cast<int>(it - members_.begin());
}

Result<std::vector<int>> MemberView::base_ranks(const std::vector<int>& group) const {
    std::vector<int> out;
    out.reserve(group.size());
    for (int g : group) {
        if (g < 0 || g >= size())
            return Result<std::vector<int>>::error("member view: rank " + std::to_string(g) + " outside 0.." +
                                                   std::to_string(size() - 1));
        out.push_back(members_[static_cast<size_t>(g)]);
    }
    return out;
}

Result<std::vector<std::vector<uint8_t>>> MemberView::all_gather(const std::vector<uint8_t>& mine, LinkClass link,
                                                                 double sim_clock_s, std::vector<double>* clocks) {
    if (everyone()) return base_.all_gather(mine, link, sim_clock_s, clocks);
    return base_.exchange(members_, mine, link, sim_clock_s, clocks);
}

Result<std::vector<std::vector<uint8_t>>> MemberView::exchange(const std::vector<int>& group,
                                                               const std::vector<uint8_t>& mine, LinkClass link,
                                                               double sim_clock_s, std::vector<double>* clocks) {
    auto b = base_ranks(group);
    if (!b) return b.status();
    return base_.exchange(*b, mine, link, sim_clock_s, clocks);
}

Status MemberView::send(int peer, const std::vector<uint8_t>& payload, LinkClass link, double sim_clock_s, bool count) {
    if (peer < 0 || peer >= size()) return Status::error("member view: no member " + std::to_string(peer));
    return base_.send(members_[static_cast<size_t>(peer)], payload, link, sim_clock_s, count);
}

Result<std::vector<uint8_t>> MemberView::recv(int peer, double* sender_clock_s) {
    if (peer < 0 || peer >= size()) return Result<std::vector<uint8_t>>::error("member view: no member " + std::to_string(peer));
    return base_.recv(members_[static_cast<size_t>(peer)], sender_clock_s);
}

Status MemberView::agree(const std::vector<int>& group, uint64_t state_hash) {
    auto b = base_ranks(group);
    if (!b) return b.status();
    return base_.agree(*b, state_hash);
}

Result<std::vector<uint64_t>> MemberView::gather_words(const std::vector<int>& group, uint64_t word) {
    auto b = base_ranks(group);
    if (!b) return b.status();
    return base_.gather_words(*b, word);
}

Result<std::vector<std::vector<uint8_t>>> MemberView::hub_round(const std::vector<uint8_t>& mine, double sim_clock_s,
                                                                std::vector<double>* clocks) {
    auto* hub = dynamic_cast<HubExchange*>(&base_);
    if (!hub) return Result<std::vector<std::vector<uint8_t>>>::error("hub: this transport reaches no hub relay");
    // With every member the view is the transport itself, request for request.
    if (everyone()) return hub->hub_round(mine, sim_clock_s, clocks);
    return hub->hub_round_among(members_, mine, sim_clock_s, clocks);
}

Result<std::vector<std::vector<uint8_t>>> MemberView::hub_round_among(const std::vector<int>& members,
                                                                      const std::vector<uint8_t>& mine,
                                                                      double sim_clock_s, std::vector<double>* clocks) {
    auto* hub = dynamic_cast<HubExchange*>(&base_);
    if (!hub) return Result<std::vector<std::vector<uint8_t>>>::error("hub: this transport reaches no hub relay");
    auto b = base_ranks(members);
    if (!b) return b.status();
    return hub->hub_round_among(*b, mine, sim_clock_s, clocks);
}

bool MemberView::has_hub() const {
    auto* hub = dynamic_cast<const HubExchange*>(&base_);
    return hub && hub->has_hub();
}

}  // namespace tw
