// One mesh member's membership state; see mesh_membership.h for the rules.
#include "remote/mesh_membership.h"

#include <algorithm>

#include "core/membership.h"

namespace tw {
namespace {
double seconds(MeshMembership::Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

MeshMembership::MeshMembership(int members, int rank, double silence_timeout_s, Clock::time_point now)
    : members_(members), rank_(rank), silence_timeout_s_(silence_timeout_s),
      heard_(static_cast<size_t>(members), now), bye_at_(static_cast<size_t>(members), now) {}

void MeshMembership::heard(int from, Clock::time_point now) { heard_[static_cast<size_t>(from)] = now; }

void MeshMembership::on_abandon(int from, uint64_t round, uint64_t mask) {
    if (round < admitted_from_) return;  // from before this process was admitted
    abandoned_[from] = round;
    const bool fenced = lost_.count(from) > 0 || round < epoch_base_;
    for (int r = 0; r < members_ && r < 64; ++r)
        if (mask >> r & 1) {
            if (r == rank_) counted_out_ = true;  // the peer counts this member out (tell_out)
            else if (!fenced) lost_.insert(r);
        }
    const uint64_t own = rank_ < 64 ? uint64_t{1} << rank_ : 0;
    if (fenced && (mask & ~own)) ++fenced_;
}

void MeshMembership::on_ready(int from, uint64_t step) {
    ready_[from] = step;
    // A process restarted after a real loss: its predecessor is gone, whatever it was doing.
    if (step == Membership::kReadyLive) lost_.insert(from);
}

void MeshMembership::on_bye(int from, uint64_t said, Clock::time_point now) {
    if (said == kByeRestarting) {  // not a leave: a fresh process takes the member's place
        restarting_until_[from] = now + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(kRestartAllowanceS));
        return;
    }
    bye_[from] = said;
    bye_at_[static_cast<size_t>(from)] = now;
}

MeshMembership::Out MeshMembership::check(int r, Clock::time_point wait_start, Clock::time_point now, double* silent_s) {
    const auto ri = static_cast<size_t>(r);
    if (lost_.count(r)) return Out::kLost;
    if (gave_up(r)) return Out::kGaveUp;
    if (auto b = bye_.find(r); b != bye_.end()) {
        if (b->second == kByeStopped && seconds(now - bye_at_[ri]) <= silence_timeout_s_) return Out::kStopping;
        lost_.insert(r);
        return Out::kLeft;
    }
    // Silence within this wait only: a member quiet before the wait began had nothing to say.
    const double silent = std::min(seconds(now - heard_[ri]), seconds(now - wait_start));
    if (silent_s) *silent_s = silent;
    const auto excused = restarting_until_.find(r);
    if (excused != restarting_until_.end() && now < excused->second) return Out::kIn;
    if (silence_timeout_s_ > 0 && silent > silence_timeout_s_) {
        lost_.insert(r);
        return Out::kSilent;
    }
    return Out::kIn;
}

void MeshMembership::own_pause(Clock::duration gap, Clock::time_point now) {
    for (auto& h : heard_) h = std::min(now, h + gap);
}

void MeshMembership::begin_epoch(uint64_t base) {
    epoch_base_ = base;
    if (awaiting_admission_) {
        // Admitted: whatever told this process out before is about its predecessor or its absence.
        admitted_from_ = base;
        counted_out_ = false;
    }
    awaiting_admission_ = false;
}

uint64_t MeshMembership::lost_mask() const {
    uint64_t mask = 0;
    for (int r : lost_)
        if (r < 64) mask |= uint64_t{1} << r;
    return mask;
}

void MeshMembership::declare_lost(int r) {
    if (r >= 0 && r < members_ && r != rank_) lost_.insert(r);
}

bool MeshMembership::gave_up(int r) const {
    auto a = abandoned_.find(r);
    return a != abandoned_.end() && epoch_base_ > 0 && a->second == epoch_base_;
}

std::optional<uint64_t> MeshMembership::ready_step(int r) const {
    auto it = ready_.find(r);
    if (it == ready_.end()) return std::nullopt;
    return it->second;
}

void MeshMembership::forgive(int r, Clock::time_point now) {
    if (r < 0 || r >= members_) return;
    lost_.erase(r);
    bye_.erase(r);
    abandoned_.erase(r);
    ready_.erase(r);
    heard_[static_cast<size_t>(r)] = now;
}

}  // namespace tw
