// DeMo (engine/algo/demo.h, arXiv 2411.19870) behind make_outer_algorithm: exact bytes per replica
// per round against the formula over chunks, k, index width, value width and replicas; replicas
// bit-identical after every round; the transmitted components leave the momentum; the sign update
// moves every coordinate by η; four replicas on the micro model lower the loss. Replicas are threads
// over real ZmqCollectives on inproc://.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <zmq.hpp>

#include "core/config_io.h"
#include "engine/algo/demo.h"
#include "engine/algo/outer.h"
#include "engine/codec/dct_topk.h"
#include "engine/train/trainer.h"
#include "remote/zmq_collective.h"
#include "tests/engine/micro_run.h"
#include "tests/engine/replica_threads.h"

namespace tw {
namespace {

constexpr int kOuter = static_cast<int>(LinkClass::kOuterSync);

struct Mesh {
    std::shared_ptr<zmq::context_t> ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps;
    Mesh(const std::string& name, int R) {
        for (int r = 0; r < R; ++r) eps.push_back("inproc://" + name + "-" + std::to_string(r));
    }
    std::unique_ptr<ZmqCollective> member(int r) { return ZmqCollective::create(ctx, eps, r, 20000).value(); }
};

using testing_support::expect_no_errors;
using testing_support::flatten_copy;
using testing_support::on_threads;
using testing_support::synthetic_trainer;

RunConfig demo_cfg(int R, int64_t H, const std::string& values) {
    auto c = testing_support::micro_run(56, 100);
    c.outer.algorithm = "demo";
    c.outer.replicas = R;
    c.outer.inner_steps = H;
    c.outer.demo_chunk = 8;
    c.outer.demo_topk = 4;
    c.outer.demo_values = values;
    c.outer.lr = 1e-3;
    return c;
}

// The formula, written out independently of the codec: a matrix [a, b] in s×s tiles, anything else
// in runs of s; a chunk of n keeps min(n, ⌈k·n/s²⌉); per tensor 12-bit positions (3 bytes per pair,
// an odd one padded) plus 4 bytes per value or one bit per sign.
uint64_t formula_bytes(const std::vector<torch::Tensor>& params, int64_t s, int64_t k, bool sign) {
    uint64_t total = 0;
    for (auto& p : params) {
        std::vector<int64_t> chunk_sizes;
        if (p.dim() == 2) {
            for (int64_t r = 0; r < p.size(0); r += s)
                for (int64_t c = 0; c < p.size(1); c += s)
                    chunk_sizes.push_back(std::min(s, p.size(0) - r) * std::min(s, p.size(1) - c));
        } else {
            for (int64_t o = 0; o < p.numel(); o += s) chunk_sizes.push_back(std::min(s, p.numel() - o));
        }
        uint64_t K = 0;
        for (int64_t n : chunk_sizes) K += static_cast<uint64_t>(std::min(n, (k * n + s * s - 1) / (s * s)));
        total += 3 * ((K + 1) / 2) + (sign ? (K + 7) / 8 : 4 * K);
    }
    return total;
}

TEST(DeMo, BytesPerReplicaPerRoundEqualTheFormula) {
    const int R = 3, H = 2, rounds = 2;
    for (const char* values : {"fp32", "sign"}) {
        const auto c = demo_cfg(R, H, values);
        uint64_t expected = 0;
        {
            auto t = synthetic_trainer(c, 0, 1);
            expected = formula_bytes(t.model()->parameters(), 8, 4, std::string(values) == "sign");
        }
        // By hand for the embedding [56, 32] alone: 7×4 full 8×8 tiles keep 4 each → K = 112;
        // fp32: 168 + 448 = 616 bytes, sign: 168 + 14 = 182.
        {
            std::vector<torch::Tensor> emb{torch::zeros({56, 32})};
            EXPECT_EQ(formula_bytes(emb, 8, 4, false), 616u);
            EXPECT_EQ(formula_bytes(emb, 8, 4, true), 182u);
        }
        Mesh mesh(std::string("demo-bytes-") + values, R);
        std::vector<ByteCounters> counters(R);
        expect_no_errors(on_threads(R, [&](int r) -> std::string {
            auto coll = mesh.member(r);
            auto t = synthetic_trainer(c, r, R);
            auto algo = make_outer_algorithm(c, t.model()->parameters(), {}, r, R);
            if (!algo) return algo.message();
            auto* demo = dynamic_cast<DeMo*>(algo->get());
            if (!demo) return "not a DeMo";
            if (demo->payload_bytes() != expected) return "payload_bytes " + std::to_string(demo->payload_bytes());
            for (int64_t s = 1; s <= H * rounds; ++s) {
                (void)t.step();
                auto rep = (*algo)->after_step(s, *coll, 0.0);
                if (!rep) return rep.message();
                if (rep->synced != (s % H == 0)) return "synced at step " + std::to_string(s);
                if (!rep->synced) continue;
                if (rep->bytes_sent != (R - 1) * expected) return "bytes_sent " + std::to_string(rep->bytes_sent);
                if (demo->last_payload().size() != expected) return "payload " + std::to_string(demo->last_payload().size());
                if (rep->clocks.size() != static_cast<size_t>(R) || rep->hops != 1) return "clocks or hops";
            }
            counters[r] = coll->counters();
            return "";
        }));
        for (int r = 0; r < R; ++r) {
            EXPECT_EQ(counters[r].sent_bytes[kOuter], rounds * (R - 1) * expected) << values << " " << r;
            EXPECT_EQ(counters[r].recv_bytes[kOuter], rounds * (R - 1) * expected) << values << " " << r;
            EXPECT_EQ(counters[r].sent_msgs[kOuter], static_cast<uint64_t>(rounds * (R - 1))) << r;
        }
    }
}

// After every round all replicas hold the same θ_global bit for bit and their live weights equal it;
// under the sign update every coordinate moved by exactly η (or not at all where the mean is 0).
TEST(DeMo, ReplicasHoldBitIdenticalWeightsAndTheSignUpdateMovesEveryCoordinateByEta) {
    const int R = 3, H = 2, rounds = 2;
    for (const char* values : {"fp32", "sign"}) {
        const auto c = demo_cfg(R, H, values);
        Mesh mesh(std::string("demo-agree-") + values, R);
        std::vector<std::vector<torch::Tensor>> global(R), live(R);
        torch::Tensor initial;
        expect_no_errors(on_threads(R, [&](int r) -> std::string {
            auto coll = mesh.member(r);
            auto t = synthetic_trainer(c, r, R);
            if (r == 0) initial = flatten_copy(t.model()->parameters());
            auto algo = make_outer_algorithm(c, t.model()->parameters(), {}, r, R);
            if (!algo) return algo.message();
            for (int64_t s = 1; s <= H * rounds; ++s) {
                (void)t.step();
                auto rep = (*algo)->after_step(s, *coll, 0.0);
                if (!rep) return rep.message();
                if (!rep->synced) continue;
                global[r].push_back(flatten_copy((*algo)->eval_params()));
                live[r].push_back(flatten_copy(t.model()->parameters()));
            }
            return "";
        }));
        ASSERT_EQ(global[0].size(), static_cast<size_t>(rounds));
        for (int k = 0; k < rounds; ++k)
            for (int r = 0; r < R; ++r) {
                EXPECT_TRUE(torch::equal(global[r][k], global[0][k])) << values << " replica " << r << " round " << k;
                EXPECT_TRUE(torch::equal(live[r][k], global[r][k])) << values << " replica " << r;
            }
        const auto step = (global[0][0] - initial).abs();
        const double eta = c.outer.lr;
        const auto moved = step > 0;
        EXPECT_GT(moved.to(torch::kFloat).mean().item<double>(), 0.99) << values << ": nearly every coordinate moves";
        EXPECT_LT((step.masked_select(moved) - eta).abs().max().item<double>(), 1e-6) << values;
    }
}

// m_new = β·m_old + Δ − IDCT(q): the kept coefficients of β·m_old + Δ are (to rounding) zero in
// DCT(m_new), everything else is unchanged.
TEST(DeMo, TheTransmittedComponentsLeaveTheMomentum) {
    const int R = 2, H = 2;
    auto c = demo_cfg(R, H, "sign");
    c.outer.demo_beta = 0.9;
    Mesh mesh("demo-momentum", R);
    expect_no_errors(on_threads(R, [&](int r) -> std::string {
        auto coll = mesh.member(r);
        auto t = synthetic_trainer(c, r, R);
        DeMoConfig dc;
        dc.inner_steps = H;
        dc.beta = 0.9;
        dc.dct = {8, 4, DctValues::kSign};
        DeMo demo(t.model()->parameters(), dc, r, R);
        for (int64_t s = 1; s <= 2 * H; ++s) {
            (void)t.step();
            if (s % H != 0) {
                if (!demo.after_step(s, *coll, 0.0)) return "round";
                continue;
            }
            std::vector<torch::Tensor> before;  // β·m + Δ as the round forms it
            for (size_t i = 0; i < demo.momentum().size(); ++i)
                before.push_back(demo.momentum()[i] * 0.9f + (demo.global()[i] - t.model()->parameters()[i].detach()));
            auto rep = demo.after_step(s, *coll, 0.0);
            if (!rep) return rep.message();
            for (size_t i = 0; i < before.size(); ++i) {
                auto cb = chunked_dct(before[i].contiguous(), 8), ca = chunked_dct(demo.momentum()[i], 8);
                const auto kept = dct_topk_indices(cb, dc.dct);
                auto mask = torch::zeros({cb.numel()}, torch::kBool);
                for (int64_t k : kept) mask[k] = true;
                const double scale = cb.abs().max().item<double>();
                const double at_kept = ca.reshape({-1}).masked_select(mask).abs().max().item<double>();
                const double elsewhere = (ca - cb).reshape({-1}).masked_select(~mask).abs().max().item<double>();
                if (at_kept > 1e-5 * scale + 1e-9) return "tensor " + std::to_string(i) + " kept " + std::to_string(at_kept);
                if (elsewhere > 1e-5 * scale + 1e-9) return "tensor " + std::to_string(i) + " rest " + std::to_string(elsewhere);
            }
        }
        return "";
    }));
}

// Four replicas of the micro model, the config parsed from TOML text (so the field table and the
// traits row check it), built through the registry alone: the global model's validation loss goes
// down over 8 rounds (most of the way to the data's entropy) and every replica ends on the same weights.
TEST(DeMo, FourReplicasOnTheMicroModelLowerTheLoss) {
    const int R = 4, H = 5, rounds = 8;
    auto parsed = parse_config(
        "[outer]\nalgorithm = \"demo\"\nreplicas = 4\ninner_steps = 5\nlr = 0.01\ndemo_chunk = 8\ndemo_topk = 8\n"
        "demo_beta = 0.95\ndemo_values = \"sign\"\n",
        "demo.toml");
    ASSERT_TRUE(parsed) << parsed.message();
    RunConfig c = testing_support::micro_run(56, H * rounds);
    c.outer = parsed->outer;
    Mesh mesh("demo-run", R);
    std::vector<double> first(R), last(R);
    std::vector<torch::Tensor> final_w(R);
    expect_no_errors(on_threads(R, [&](int r) -> std::string {
        auto coll = mesh.member(r);
        auto t = synthetic_trainer(c, r, R);
        first[r] = t.evaluate();
        auto algo = make_outer_algorithm(c, t.model()->parameters(), {}, r, R);
        if (!algo) return algo.message();
        for (int64_t s = 1; s <= H * rounds; ++s) {
            (void)t.step();
            auto rep = (*algo)->after_step(s, *coll, 0.0);
            if (!rep) return rep.message();
        }
        last[r] = t.evaluate();  // live = global after the last round
        final_w[r] = flatten_copy((*algo)->eval_params());
        return "";
    }));
    for (int r = 0; r < R; ++r) {
        EXPECT_TRUE(torch::equal(final_w[r], final_w[0])) << r;
        EXPECT_EQ(last[r], last[0]) << r;
    }
    // The synthetic tokens are uniform over 53 values: no model gets below ln 53 = 3.970, and the
    // initial model starts at 4.027; 8 rounds at η = 0.01 reach 3.985 (0.003 reached 4.002, 0.03 went up).
    EXPECT_LT(last[0], first[0] - 0.03) << "first " << first[0] << " last " << last[0];
}

}  // namespace
}  // namespace tw
