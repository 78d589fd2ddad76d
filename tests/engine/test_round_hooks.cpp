// The outer-algorithm interface's round hooks and replay (engine/algo/outer.h), which heterogeneous
// SparseLoCo's AD switches use without knowing the algorithm: SparseLoCo runs every hook and can be
// replayed from the leading tensor's payloads bit for bit; DiLoCo runs none and says so.
#include <gtest/gtest.h>
#include <cstring>
#include <torch/torch.h>

#include "core/collective.h"
#include "engine/algo/outer.h"

namespace tw {
namespace {

// A collective of one member: a round returns this member's own payload.
class SoloCollective : public Collective {
public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    Result<std::vector<std::vector<uint8_t>>> all_gather(const std::vector<uint8_t>& mine, LinkClass, double clock,
                                                         std::vector<double>* clocks) override {
        if (clocks) *clocks = {clock};
        return std::vector<std::vector<uint8_t>>{mine};
    }
    Result<std::vector<std::vector<uint8_t>>> exchange(const std::vector<int>&, const std::vector<uint8_t>& mine,
                                                       LinkClass link, double clock, std::vector<double>* clocks) override {
        return all_gather(mine, link, clock, clocks);
    }
    Status send(int, const std::vector<uint8_t>&, LinkClass, double, bool) override { return Status::error("solo"); }
    Result<std::vector<uint8_t>> recv(int, double*) override { return Status::error("solo"); }
    Status agree(const std::vector<int>&, uint64_t) override { return Status::ok(); }
    const ByteCounters& counters() const override { return counters_; }
    double real_exchange_s() const override { return 0; }

private:
    ByteCounters counters_;
};

RunConfig cfg_of(const char* algorithm) {
    RunConfig c;
    c.outer.algorithm = algorithm;
    c.outer.replicas = 1;
    c.outer.inner_steps = 1;
    c.outer.topk_chunk = 8;
    c.outer.topk_k = 4;
    return c;
}

std::vector<torch::Tensor> params() {
    torch::manual_seed(8);
    return {torch::randn({16, 8}), torch::randn({8})};
}

void train_a_little(std::vector<torch::Tensor>& p) {
    torch::NoGradGuard no_grad;
    for (auto& t : p) t.add_(torch::randn_like(t) * 0.1);
}

TEST(RoundHooks, SparseLoCoRunsEveryHookOncePerTensorAndRound) {
    auto p = params();
    auto algo = make_outer_algorithm(cfg_of("sparseloco"), p, {"tok_emb", "norm_f"}, 0, 1);
    ASSERT_TRUE(algo) << algo.message();
    int encoded = 0, rounds = 0;
    RoundHooks h;
    h.before_encode = [&](size_t, torch::Tensor&) { ++encoded; };
    h.after_round = [&](std::vector<torch::Tensor>& global, std::vector<torch::Tensor>& live) {
        ++rounds;
        EXPECT_EQ(global.size(), 2u);
        EXPECT_EQ(live.size(), 2u);
    };
    h.delta_from_start = true;
    const HookSupport s = (*algo)->set_round_hooks(std::move(h));
    EXPECT_TRUE(s.before_encode && s.after_round && s.delta_from_start);
    SoloCollective solo;
    for (int64_t step = 1; step <= 2; ++step) {
        train_a_little(p);
        ASSERT_TRUE((*algo)->after_step(step, solo, 0.0));
    }
    EXPECT_EQ(encoded, 4);
    EXPECT_EQ(rounds, 2);
}

TEST(RoundHooks, AReplayOfTheLeadingTensorsPayloadsKeepsABitIdenticalCopy) {
    // A member's round over [tok_emb, norm_f]; a non-member holds tok_emb alone and replays the
    // round from tok_emb's part of the payloads (AD2 on a pipeline's later stages).
    auto p = params();
    auto member = make_outer_algorithm(cfg_of("sparseloco"), p, {"tok_emb", "norm_f"}, 0, 1);
    auto copy = p[0].clone();
    auto shadow = make_outer_algorithm(cfg_of("sparseloco"), {copy}, {"tok_emb"}, 0, 1);
    ASSERT_TRUE(member && shadow);
    SoloCollective solo;
    for (int64_t step = 1; step <= 3; ++step) {
        train_a_little(p);
        ASSERT_TRUE((*member)->after_step(step, solo, 0.0));
        auto lead = (*member)->leading_tensor_payloads();
        ASSERT_TRUE(lead.has_value());
        ASSERT_TRUE((*shadow)->replay_round(*lead, 1));
        EXPECT_TRUE(torch::equal((*shadow)->eval_params()[0], (*member)->eval_params()[0])) << "round " << step;
    }
    auto bad = (*shadow)->replay_round(std::vector<uint8_t>(3), 1);
    EXPECT_FALSE(bad);
    // The bytes say how many members the round had (a round among survivors has fewer than the
    // run's replicas); more encodings than the run has replicas are refused before anything changes.
    auto lead = (*member)->leading_tensor_payloads();
    std::vector<uint8_t> two = *lead;
    two.insert(two.end(), lead->begin(), lead->end());
    auto too_many = (*shadow)->replay_round(two, 1);
    ASSERT_FALSE(too_many);
    EXPECT_NE(too_many.message().find("1 to 1 members"), std::string::npos) << too_many.message();
    EXPECT_TRUE(torch::equal((*shadow)->eval_params()[0], (*member)->eval_params()[0]));
}

// A collective of two members whose other member's payload is fixed: a round returns {mine, other}.
class PairCollective : public SoloCollective {
public:
    explicit PairCollective(std::vector<uint8_t> other) : other_(std::move(other)) {}
    int size() const override { return 2; }
    Result<std::vector<std::vector<uint8_t>>> all_gather(const std::vector<uint8_t>& mine, LinkClass, double clock,
                                                         std::vector<double>* clocks) override {
        if (clocks) *clocks = {clock, clock};
        return std::vector<std::vector<uint8_t>>{mine, other_};
    }
    Result<std::vector<std::vector<uint8_t>>> exchange(const std::vector<int>&, const std::vector<uint8_t>& mine,
                                                       LinkClass link, double clock, std::vector<double>* clocks) override {
        return all_gather(mine, link, clock, clocks);
    }

private:
    std::vector<uint8_t> other_;
};

// A solo round that keeps the payload this member sent.
class RecordingCollective : public SoloCollective {
public:
    Result<std::vector<std::vector<uint8_t>>> all_gather(const std::vector<uint8_t>& mine, LinkClass link, double clock,
                                                         std::vector<double>* clocks) override {
        sent = mine;
        return SoloCollective::all_gather(mine, link, clock, clocks);
    }
    std::vector<uint8_t> sent;
};

TEST(RoundHooks, AReplayAppliesTheGuardFactorsOfTheMembersRound) {
    // Member 1's contribution is far larger than member 0's, so the aggregation guard (ratio 4)
    // scales it. The replayer sees tok_emb alone and could not judge whole contributions: the
    // leading payloads carry the members' factors, and its copy stays bit-identical.
    RunConfig c = cfg_of("sparseloco");
    c.outer.replicas = 2;
    auto p = params();
    auto q = params();
    {
        torch::NoGradGuard no_grad;
        for (auto& t : q) t.add_(torch::randn_like(t) * 50);
    }
    RecordingCollective rec;
    RunConfig solo_cfg = cfg_of("sparseloco");
    auto other = make_outer_algorithm(solo_cfg, q, {"tok_emb", "norm_f"}, 0, 1);
    ASSERT_TRUE(other);
    // q moved far from the copy its algorithm took: a large Δ.
    {
        torch::NoGradGuard no_grad;
        for (auto& t : q) t.add_(torch::randn_like(t) * 50);
    }
    ASSERT_TRUE((*other)->after_step(1, rec, 0.0));
    auto member = make_outer_algorithm(c, p, {"tok_emb", "norm_f"}, 0, 2);
    RunConfig shadow_cfg = c;
    shadow_cfg.outer.guard_ratio = 0;  // as a pipeline's later stage builds it
    auto copy = p[0].clone();
    auto shadow = make_outer_algorithm(shadow_cfg, {copy}, {"tok_emb"}, 0, 2);
    auto unaware = make_outer_algorithm(shadow_cfg, {p[0].clone()}, {"tok_emb"}, 0, 2);
    ASSERT_TRUE(member && shadow && unaware);
    train_a_little(p);
    PairCollective pair(rec.sent);
    auto rep = (*member)->after_step(1, pair, 0.0);
    ASSERT_TRUE(rep) << rep.message();
    ASSERT_GT(rep->guard_clipped, 0);
    auto lead = (*member)->leading_tensor_payloads();
    ASSERT_TRUE(lead.has_value());
    ASSERT_TRUE((*shadow)->replay_round(*lead, 2));
    EXPECT_TRUE(torch::equal((*shadow)->eval_params()[0], (*member)->eval_params()[0]));
    // Without the factors (the 2 × 4 + 8 bytes of the trailer) the copy would differ.
    std::vector<uint8_t> bare(lead->begin(), lead->end() - 16);
    ASSERT_TRUE((*unaware)->replay_round(bare, 2));
    EXPECT_FALSE(torch::equal((*unaware)->eval_params()[0], (*member)->eval_params()[0]));
    // A factor outside (0, 1] is refused by name.
    std::vector<uint8_t> forged = *lead;
    const float two = 2.0f;
    std::memcpy(forged.data() + forged.size() - 16, &two, 4);
    auto bad = (*shadow)->replay_round(forged, 2);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.message().find("guard factor outside (0, 1]"), std::string::npos) << bad.message();
}

TEST(RoundHooks, DiLoCoRunsNoneAndCannotBeReplayed) {
    auto p = params();
    auto algo = make_outer_algorithm(cfg_of("diloco"), p, {"tok_emb", "norm_f"}, 0, 1);
    ASSERT_TRUE(algo) << algo.message();
    RoundHooks h;
    h.after_round = [](std::vector<torch::Tensor>&, std::vector<torch::Tensor>&) { FAIL() << "not DiLoCo's hook"; };
    const HookSupport s = (*algo)->set_round_hooks(std::move(h));
    EXPECT_FALSE(s.before_encode || s.after_round || s.delta_from_start);
    SoloCollective solo;
    train_a_little(p);
    ASSERT_TRUE((*algo)->after_step(1, solo, 0.0));
    EXPECT_FALSE((*algo)->leading_tensor_payloads().has_value());
    auto r = (*algo)->replay_round({}, 1);
    ASSERT_FALSE(r);
    EXPECT_NE(r.message().find("cannot be replayed"), std::string::npos) << r.message();
}

}  // namespace
}  // namespace tw
