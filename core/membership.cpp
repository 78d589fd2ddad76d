// The membership of a transport that never loses a member; see membership.h.
#include "core/membership.h"

namespace tw {
namespace {

class NeverLost final : public Membership {
public:
    std::vector<int> lost_members() const override { return {}; }
    void begin_epoch(uint64_t) override {}
    void abandon(const std::vector<int>&) override {}
    bool gave_up(int) const override { return false; }
    void tell_out(const std::vector<int>&) override {}
    bool counted_out() const override { return false; }
    void forgive(int) override {}
    void declare_lost(int) override {}
    void tell_ready(int, uint64_t) override {}
    Status wait_ready(int, uint64_t) override { return Status::ok(); }
    bool heard_live(int) override { return false; }
    void await_admission() override {}
    void go_quiet(bool) override {}
};

}  // namespace

Membership& Membership::never_lost() {
    static NeverLost none;
    return none;
}

}  // namespace tw
