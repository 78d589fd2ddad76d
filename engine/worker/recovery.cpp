// The recovery message; see recovery.h.
#include "engine/worker/recovery.h"

#include <cmath>
#include <cstring>
#include <string>

#include <torch/torch.h>

#include "core/little_endian.h"
#include "engine/algo/outer_state_io.h"

namespace tw {
namespace {

constexpr char kMagic[4] = {'T', 'W', 'R', 'C'};

}  // namespace

bool is_recovery_message(const std::vector<uint8_t>& bytes) {
    return bytes.size() >= 4 && std::memcmp(bytes.data(), kMagic, 4) == 0;
}

std::vector<uint8_t> encode_recovery(const RecoveryState& s) {
    std::vector<uint8_t> out(kMagic, kMagic + 4);
    le::Appender w{out};
    w.i64(s.step);
    w.i64(s.rounds);
    w.f64(s.clock_s);
    for (const auto* list : {&s.members, &s.lost}) {
        w.u16(static_cast<uint16_t>(list->size()));
        for (int r : *list) w.u16(static_cast<uint16_t>(r));
    }
    w.u32(static_cast<uint32_t>(s.slot + 1));
    w.u16(static_cast<uint16_t>(s.holders.size()));
    for (int r : s.holders) w.u16(static_cast<uint16_t>(r));
    const auto block = encode_outer_state(s.outer);
    out.insert(out.end(), block.begin(), block.end());
    return out;
}

Result<RecoveryState> decode_recovery(const std::vector<uint8_t>& in) {
    using R = Result<RecoveryState>;
    if (!is_recovery_message(in)) return R::error("recovery: not a recovery message");
    RecoveryState s;
    le::Reader r{in.data(), in.size(), 4};
    if (!r.i64(s.step) || !r.i64(s.rounds) || !r.f64(s.clock_s)) return R::error("recovery: truncated header");
    if (s.step < 0 || s.rounds < 0 || !(s.clock_s >= 0) || !std::isfinite(s.clock_s))
        return R::error("recovery: step, round count or clock out of range");
    for (auto* list : {&s.members, &s.lost, &s.holders}) {
        if (list == &s.holders) {
            uint32_t slot = 0;
            if (!r.u32(slot) || slot > 0xffff) return R::error("recovery: truncated or impossible place");
            s.slot = static_cast<int>(slot) - 1;
        }
        uint16_t n = 0;
        if (!r.u16(n)) return R::error("recovery: truncated member list");
        for (uint16_t i = 0; i < n; ++i) {
            uint16_t m = 0;
            if (!r.u16(m)) return R::error("recovery: truncated member list");
            list->push_back(m);
        }
    }
    if (s.slot < -1 || s.slot >= static_cast<int>(s.holders.size()))
        return R::error("recovery: place " + std::to_string(s.slot) + " is not one of the " +
                        std::to_string(s.holders.size()) + " replicas");
    auto outer = decode_outer_state(in.data() + r.at, r.left());
    if (!outer) return R::error("recovery: " + outer.message());
    s.outer = std::move(*outer);
    return s;
}

OuterState donor_state(const OuterAlgorithm& algo, const std::vector<torch::Tensor>& live) {
    OuterState out;
    for (auto& entry : algo.save_state())
        if (!algo.private_state(entry.first)) out.push_back(std::move(entry));
    const auto global = algo.eval_params();
    bool same = global.size() == live.size();
    for (size_t i = 0; same && i < live.size(); ++i) same = torch::equal(live[i], global[i]);
    if (!same) put_tensors(out, "live", live);
    return out;
}

Status apply_donor_state(OuterAlgorithm& algo, std::vector<torch::Tensor>& live, const OuterState& s) {
    OuterState outer, mine;
    for (auto& entry : s) (entry.first.rfind("live.", 0) == 0 ? mine : outer).push_back(entry);
    if (Status st = algo.load_state(outer); !st) return st;
    torch::NoGradGuard no_grad;
    if (!mine.empty()) {
        auto got = take_tensors(mine, "live", live);
        if (!got) return Status::error("recovery: " + got.message());
        return Status::ok();
    }
    const auto global = algo.eval_params();
    if (global.size() != live.size()) return Status::error("recovery: the global weights do not match the model");
    for (size_t i = 0; i < live.size(); ++i) live[i].copy_(global[i]);
    return Status::ok();
}

std::vector<int> admitted_by_every_word(const std::vector<uint64_t>& words, int64_t replicas) {
    uint64_t agreed = ~uint64_t{0};
    for (uint64_t w : words) agreed &= w;
    std::vector<int> out;
    for (int r = 0; r < replicas && r < 64; ++r)
        if (agreed >> r & 1) out.push_back(r);
    return out;
}

}  // namespace tw
