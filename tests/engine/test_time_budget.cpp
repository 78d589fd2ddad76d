// Time-budgeted rounds in the outer algorithms (core/time_budget.h): a DiLoCo round with token
// weights 2/3 and 1/3 (mesh and ring) against the weighted mean by hand; SparseLoCo's weighted
// aggregate against the weighted combination of the decoded payloads.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>
#include <zmq.hpp>

#include "engine/algo/diloco.h"
#include "engine/algo/sparseloco.h"
#include "remote/zmq_collective.h"

namespace tw {
namespace {

// Two replicas on threads: θ = [1, 2, 3, 4] everywhere; replica 0 moves to θ − [3, 0, 6, −3]·(1/4)…
// by hand: Δ_0 = [0.75, 0, 1.5, −0.75], Δ_1 = [−1.5, 3, 0, 0.75]; weights 2/3 (four steps) and 1/3
// (two): Δ̄ = [0, 1, 1, −0.25]. With η = 1 and μ = 0, θ_new = θ − Δ̄ = [1, 1, 2, 4.25].
void weighted_diloco(Topology topo, const std::string& name) {
    auto ctx = std::make_shared<zmq::context_t>();
    const std::vector<std::string> eps{"inproc://tb-" + name + "-0", "inproc://tb-" + name + "-1"};
    const std::vector<torch::Tensor> delta{torch::tensor({0.75f, 0.0f, 1.5f, -0.75f}),
                                           torch::tensor({-1.5f, 3.0f, 0.0f, 0.75f})};
    const std::vector<double> scale{4.0 / 3, 2.0 / 3};  // R·w_r/Σw
    std::vector<torch::Tensor> out(2);
    std::vector<std::string> err(2);
    std::vector<std::thread> th;
    for (int r = 0; r < 2; ++r)
        th.emplace_back([&, r] {
            auto c = ZmqCollective::create(ctx, eps, r, 20000).value();
            auto p = torch::tensor({1.0f, 2.0f, 3.0f, 4.0f});
            DiLoCoConfig dc{1.0, 0.0, WireDtype::kFp32, 0.0, topo};
            dc.contribution_scale = scale[static_cast<size_t>(r)];
            DiLoCo d({p}, dc);
            p.sub_(delta[static_cast<size_t>(r)]);
            if (Status s = d.sync(*c); !s) err[static_cast<size_t>(r)] = s.message();
            out[static_cast<size_t>(r)] = p.clone();
        });
    for (auto& t : th) t.join();
    const auto want = torch::tensor({1.0f, 1.0f, 2.0f, 4.25f});
    for (int r = 0; r < 2; ++r) {
        ASSERT_EQ(err[static_cast<size_t>(r)], "") << r;
        EXPECT_TRUE(torch::allclose(out[static_cast<size_t>(r)], want, 0, 1e-6)) << r << " " << out[static_cast<size_t>(r)];
    }
    // Unweighted, the same deltas would give the plain mean [−0.375, 1.5, 0.75, 0]: the weights
    // matter, so the result is not the unweighted one.
    const auto unweighted = torch::tensor({1.375f, 0.5f, 2.25f, 4.0f});
    for (int r = 0; r < 2; ++r) EXPECT_FALSE(torch::allclose(out[static_cast<size_t>(r)], unweighted, 0, 1e-3)) << r;
}

TEST(TimeBudget, WeightedDiLoCoMesh) { weighted_diloco(Topology::kMesh, "mesh"); }
TEST(TimeBudget, WeightedDiLoCoRing) { weighted_diloco(Topology::kRing, "ring"); }

// SparseLoCo keeps every entry here (one chunk of 4 values, k = 4): the 2-bit quantiser still rounds
// the values, so the check is against the decoded payloads each replica sent, weighted by hand.
TEST(TimeBudget, WeightedSparseLoCoAggregate) {
    for (auto agg : {Aggregation::kMeanOverReplicas, Aggregation::kMeanOverSelectors}) {
        auto ctx = std::make_shared<zmq::context_t>();
        const std::string tag = agg == Aggregation::kMeanOverReplicas ? "r" : "s";
        const std::vector<std::string> eps{"inproc://tbs-" + tag + "-0", "inproc://tbs-" + tag + "-1"};
        const std::vector<torch::Tensor> delta{torch::tensor({0.75f, 0.0f, 1.5f, -0.75f}),
                                               torch::tensor({-1.5f, 3.0f, 0.5f, 0.75f})};
        std::vector<torch::Tensor> out(2), sent(2);
        std::vector<std::string> err(2);
        std::vector<std::thread> th;
        for (int r = 0; r < 2; ++r)
            th.emplace_back([&, r] {
                auto c = ZmqCollective::create(ctx, eps, r, 20000).value();
                auto p = torch::tensor({1.0f, 2.0f, 3.0f, 4.0f});
                SparseLoCoConfig sc;
                sc.inner_steps = 1;
                sc.lr_outer = 1.0;
                sc.ef_beta = 0.0;
                sc.topk = TopkConfig{2, 4};
                sc.aggregation = agg;
                sc.replica_weights = {4.0 / 3, 2.0 / 3};
                SparseLoCo s({p}, sc, r, 2);
                p.sub_(delta[static_cast<size_t>(r)]);
                auto rep = s.after_step(1, *c, 0);
                if (!rep) err[static_cast<size_t>(r)] = rep.message();
                out[static_cast<size_t>(r)] = p.clone();
            });
        for (auto& t : th) t.join();
        for (int r = 0; r < 2; ++r) ASSERT_EQ(err[static_cast<size_t>(r)], "") << r;
        // Each replica's decoded contribution, from the same codec on the same Δ.
        auto codec = make_sparseloco_codec(TopkConfig{2, 4});
        for (int r = 0; r < 2; ++r) {
            std::vector<uint8_t> bytes;
            ASSERT_TRUE(codec->encode(delta[static_cast<size_t>(r)], bytes).is_ok());
            SparsePayload d;
            size_t off = 0;
            ASSERT_TRUE(codec->decode_sparse(bytes.data(), bytes.size(), off, delta[0].sizes(), d).is_ok());
            sent[static_cast<size_t>(r)] = torch::zeros({4});
            for (size_t k = 0; k < d.index.size(); ++k) sent[static_cast<size_t>(r)][d.index[k]] = d.value[k];
        }
        // Every entry is selected by both, so both rules give Σ w_r v_r / Σ w = (2/3)·v_0 + (1/3)·v_1.
        auto mean = sent[0] * (2.0f / 3) + sent[1] * (1.0f / 3);
        auto want = torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}) - mean;
        for (int r = 0; r < 2; ++r)
            EXPECT_TRUE(torch::allclose(out[static_cast<size_t>(r)], want, 0, 1e-6))
                << tag << r << " " << out[static_cast<size_t>(r)] << " want " << want;
        auto plain = torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}) - (sent[0] + sent[1]) * 0.5f;
        EXPECT_FALSE(torch::allclose(plain, want, 0, 1e-3));
    }
}

}  // namespace
}  // namespace tw
