// Outer algorithms behind make_outer_algorithm (docs/methods.md §2–§5): SparseLoCo's agreement, bytes,
// error feedback and aggregation switches; Streaming DiLoCo's fragments, overlap and its reduction to
// DiLoCo; NoLoCo's groups and its reduction to heavy-ball DiLoCo; the factory's checks; NaN refused.
// Replicas are threads over real ZmqCollectives on inproc://.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <zmq.hpp>

#include "core/ring_schedule.h"
#include "engine/algo/diloco.h"
#include "engine/algo/noloco.h"
#include "engine/algo/outer.h"
#include "engine/algo/sparseloco.h"
#include "engine/algo/streaming_diloco.h"
#include "engine/train/trainer.h"
#include "remote/zmq_collective.h"
#include "tests/engine/micro_run.h"
#include "tests/engine/replica_threads.h"

namespace tw {
namespace {

constexpr int kOuter = static_cast<int>(LinkClass::kOuterSync);

// R members of one inproc:// mesh.
struct Mesh {
    std::shared_ptr<zmq::context_t> ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> eps;
    Mesh(const std::string& name, int R) {
        for (int r = 0; r < R; ++r) eps.push_back("inproc://" + name + "-" + std::to_string(r));
    }
    std::unique_ptr<ZmqCollective> member(int r, int timeout_ms = 20000) {
        return ZmqCollective::create(ctx, eps, r, timeout_ms).value();
    }
};

using testing_support::expect_no_errors;
using testing_support::on_threads;
std::shared_ptr<std::vector<uint16_t>> tokens() { return testing_support::synthetic_tokens(); }
Trainer make(const RunConfig& c, int replica, int n) { return testing_support::synthetic_trainer(c, replica, n); }
std::vector<std::string> names_of(Trainer& t) { return testing_support::param_names(t); }
torch::Tensor flat(const std::vector<torch::Tensor>& ts) { return testing_support::flatten_copy(ts); }

// Vocabulary 56 keeps every matrix a multiple of 4 in both dimensions (for whole Top-k chunks).
RunConfig micro(int64_t n_layer = 2) {
    auto c = testing_support::micro_run(56, 100);
    c.model.n_layer = n_layer;
    return c;
}

std::unique_ptr<Trainer> make_ptr(const RunConfig& c, int replica, int n) {
    return std::make_unique<Trainer>(c, WindowLoader(tokens(), {{0, 30000}}, 16, 4, 1, replica, n),
                                     WindowLoader(tokens(), {{0, 30000}}, 16, 4, 2));
}

RunConfig outer_cfg(const std::string& algo, int R, int64_t H) {
    auto c = micro();
    c.outer.algorithm = algo;
    c.outer.replicas = R;
    c.outer.inner_steps = H;
    return c;
}

// ---------------------------------------------------------------------------------------------
// SparseLoCo
// ---------------------------------------------------------------------------------------------

TEST(SparseLoCo, AllReplicasHoldBitIdenticalGlobalWeightsAfterEveryRound) {
    const int R = 3, H = 2, rounds = 2;
    std::vector<torch::Tensor> finals;  // replica 0's final global per variant
    for (const char* agg : {"mean_over_replicas", "mean_over_selectors"}) {
        for (bool clip : {false, true}) {
            auto c = outer_cfg("sparseloco", R, H);
            c.outer.topk_chunk = 8;  // 53-row embedding: edge tiles too
            c.outer.topk_k = 4;
            c.outer.aggregation = agg;
            c.outer.clip_median = clip;
            Mesh mesh(std::string("sl-agree-") + agg + (clip ? "-clip" : ""), R);
            std::vector<std::vector<torch::Tensor>> global(R), live(R);  // [replica][round]
            torch::Tensor initial;
            expect_no_errors(on_threads(R, [&](int r) -> std::string {
                auto coll = mesh.member(r);
                auto t = make(c, r, R);
                if (r == 0) initial = flat(t.model()->parameters());
                auto algo = make_outer_algorithm(c, t.model()->parameters(), names_of(t), r, R);
                if (!algo) return algo.message();
                for (int64_t s = 1; s <= H * rounds; ++s) {
                    (void)t.step();
                    auto rep = (*algo)->after_step(s, *coll, 0.0);
                    if (!rep) return rep.message();
                    if (rep->synced != (s % H == 0)) return "synced at the wrong step " + std::to_string(s);
                    if (rep->synced) {
                        global[r].push_back(flat((*algo)->eval_params()));
                        live[r].push_back(flat(t.model()->parameters()));
                    }
                }
                return "";
            }));
            for (int k = 0; k < rounds; ++k) {
                ASSERT_EQ(global[0].size(), static_cast<size_t>(rounds));
                for (int r = 0; r < R; ++r) {
                    EXPECT_TRUE(torch::equal(global[r][k], global[0][k]))
                        << agg << clip << " replica " << r << " round " << k;
                    EXPECT_TRUE(torch::equal(live[r][k], global[r][k])) << agg << clip << " replica " << r;
                }
            }
            EXPECT_FALSE(torch::equal(global[0][0], initial)) << "the outer step changed nothing";
            finals.push_back(global[0].back());
        }
    }
    // The switches are live: every variant lands somewhere else.
    for (size_t a = 0; a < finals.size(); ++a)
        for (size_t b = a + 1; b < finals.size(); ++b)
            EXPECT_FALSE(torch::equal(finals[a], finals[b])) << a << " vs " << b;
}

TEST(SparseLoCo, BytesPerRoundEqualTheCodecFormula) {
    const int R = 3, H = 2, rounds = 2;
    auto c = outer_cfg("sparseloco", R, H);
    c.outer.topk_chunk = 4;  // every chunk is whole: 4×4 tiles, runs of 16 for vectors, 2 kept of 16
    c.outer.topk_k = 2;
    // Independent of the codec: K = numel / 8 per tensor; 20 + 3·ceil(K/2) + ceil(K/4) bytes.
    uint64_t expected = 0;
    {
        auto t = make(c, 0, 1);
        for (auto& p : t.model()->parameters()) {
            ASSERT_EQ(p.numel() % 8, 0);
            const uint64_t K = static_cast<uint64_t>(p.numel()) / 8;
            expected += 20 + 3 * ((K + 1) / 2) + (K + 3) / 4;
        }
    }
    Mesh mesh("sl-bytes", R);
    std::vector<ByteCounters> counters(R);
    expect_no_errors(on_threads(R, [&](int r) -> std::string {
        auto coll = mesh.member(r);
        auto t = make(c, r, R);
        SparseLoCoConfig sc;
        sc.inner_steps = H;
        sc.topk = {4, 2};
        SparseLoCo algo(t.model()->parameters(), sc, r, R);
        if (algo.payload_bytes() != expected) return "payload_bytes " + std::to_string(algo.payload_bytes());
        for (int64_t s = 1; s <= H * rounds; ++s) {
            (void)t.step();
            auto rep = algo.after_step(s, *coll, 0.0);
            if (!rep) return rep.message();
            if (!rep->synced) continue;
            if (rep->bytes_sent != (R - 1) * expected) return "bytes_sent " + std::to_string(rep->bytes_sent);
            if (algo.last_payload().size() != expected) return "payload " + std::to_string(algo.last_payload().size());
            if (rep->clocks.size() != static_cast<size_t>(R) || rep->hops != 1) return "clocks or hops";
        }
        counters[r] = coll->counters();
        return "";
    }));
    for (int r = 0; r < R; ++r) {
        EXPECT_EQ(counters[r].sent_bytes[kOuter], rounds * (R - 1) * expected) << r;
        EXPECT_EQ(counters[r].recv_bytes[kOuter], rounds * (R - 1) * expected) << r;
        EXPECT_EQ(counters[r].sent_msgs[kOuter], static_cast<uint64_t>(rounds * (R - 1))) << r;
    }
}

// β·e_old + Δ = e_new + decode(sent): exactly in the form the buffer is computed,
// e_new = fl(fl(β·e_old + Δ) − decode), and to one rounding in the symmetric form.
TEST(SparseLoCo, ErrorFeedbackKeepsEverythingThatWasNotSent) {
    const int R = 2, H = 2, rounds = 3;
    const double beta = 0.95;
    Mesh mesh("sl-ef", R);
    auto c = micro();
    std::vector<int> checked(R, 0);
    expect_no_errors(on_threads(R, [&](int r) -> std::string {
        auto coll = mesh.member(r);
        auto t = make(c, r, R);
        SparseLoCoConfig sc;
        sc.inner_steps = H;
        sc.ef_beta = beta;
        sc.topk = {8, 4};
        SparseLoCo algo(t.model()->parameters(), sc, r, R);
        auto params = t.model()->parameters();
        for (int64_t s = 1; s <= H * rounds; ++s) {
            (void)t.step();
            std::vector<torch::Tensor> e_old, delta;
            for (size_t i = 0; i < params.size(); ++i) {
                e_old.push_back(algo.error_feedback()[i].clone());
                delta.push_back((algo.global()[i] - params[i]).detach());
            }
            auto rep = algo.after_step(s, *coll, 0.0);
            if (!rep) return rep.message();
            if (!rep->synced) continue;
            const auto& sent = algo.last_payload();
            size_t off = 0;
            for (size_t i = 0; i < params.size(); ++i) {
                torch::Tensor dec;
                if (Status st = algo.codec().decode(sent.data(), sent.size(), off, params[i].sizes(), dec); !st)
                    return st.message();
                const auto& e_new = algo.error_feedback()[i];
                const auto before = e_old[i] * beta + delta[i];
                if (!torch::equal(e_new, before - dec)) return "identity not exact, tensor " + std::to_string(i);
                if (!torch::allclose(e_new + dec, before, 1e-6, 1e-7))
                    return "symmetric form, tensor " + std::to_string(i);
                if (dec.count_nonzero().item<int64_t>() == 0 || e_new.count_nonzero().item<int64_t>() == 0)
                    return "degenerate round (nothing sent or nothing kept)";
            }
            if (off != sent.size()) return "payload longer than its tensors";
            ++checked[r];
        }
        return "";
    }));
    for (int r = 0; r < R; ++r) EXPECT_EQ(checked[r], rounds);
}

// Two replicas, one chunk of 4: replica 0 selects {0, 1} with values 1, 1; replica 1 selects {1, 2}
// with 3, 3. Equal kept values quantise exactly (σ = 0: every code 2, lookup 0, decode = shift).
TEST(SparseLoCo, SelectorsAverageOnlyOverReplicasThatChoseACoordinate) {
    struct Case {
        Aggregation agg;
        bool clip;
        std::vector<float> expect;  // θ_global after one round, η = 1, from 10
    };
    // Clipping: norms √2 and √18, median (√2 + √18)/2 = 2√2, so replica 1's values scale by 2/3 to 2, 2.
    const std::vector<Case> cases = {
        {Aggregation::kMeanOverReplicas, false, {9.5f, 8.0f, 8.5f, 10.0f}},   // Δ̄ = [1/2, 4/2, 3/2, 0]
        {Aggregation::kMeanOverSelectors, false, {9.0f, 8.0f, 7.0f, 10.0f}},  // Δ̄ = [1, 4/2, 3, 0]
        {Aggregation::kMeanOverReplicas, true, {9.5f, 8.5f, 9.0f, 10.0f}},    // Δ̄ = [1/2, 3/2, 2/2, 0]
        {Aggregation::kMeanOverSelectors, true, {9.0f, 8.5f, 8.0f, 10.0f}},   // Δ̄ = [1, 3/2, 2, 0]
    };
    const std::vector<std::vector<float>> delta = {{1.0f, 1.0f, 0.25f, 0.0f}, {0.0f, 3.0f, 3.0f, 0.5f}};
    const std::vector<std::vector<float>> residual = {{0, 0, 0.25f, 0}, {0, 0, 0, 0.5f}};
    int n = 0;
    for (const auto& cs : cases) {
        Mesh mesh("sl-hand-" + std::to_string(n++), 2);
        std::vector<torch::Tensor> global(2), ef(2);
        expect_no_errors(on_threads(2, [&](int r) -> std::string {
            auto coll = mesh.member(r);
            auto p = torch::full({4}, 10.0f);
            SparseLoCoConfig sc;
            sc.inner_steps = 1;
            sc.lr_outer = 1.0;
            sc.topk = {2, 2};
            sc.aggregation = cs.agg;
            sc.clip_median = cs.clip;
            SparseLoCo algo({p}, sc, r, 2);
            p.sub_(torch::tensor(delta[r]));
            auto rep = algo.after_step(1, *coll, 0.0);
            if (!rep) return rep.message();
            global[r] = algo.global()[0].clone();
            ef[r] = algo.error_feedback()[0].clone();
            return torch::equal(p, global[r]) ? "" : "live params are not the global ones";
        }));
        for (int r = 0; r < 2; ++r) {
            EXPECT_TRUE(torch::allclose(global[r], torch::tensor(cs.expect), 0, 1e-6))
                << "agg " << int(cs.agg) << " clip " << cs.clip << ": " << global[r];
            EXPECT_TRUE(torch::equal(ef[r], torch::tensor(residual[r]))) << ef[r];
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Streaming DiLoCo
// ---------------------------------------------------------------------------------------------

TEST(StreamingDiLoCo, OneFragmentNoOverlapNoMixingIsDiLoCo) {
    const int R = 2, H = 3, rounds = 3;
    auto c = micro();
    Mesh mesh_s("sd-f1", R), mesh_d("sd-f1-diloco", R);
    std::vector<std::vector<torch::Tensor>> streaming(R), diloco(R);  // [replica][round]
    expect_no_errors(on_threads(R, [&](int r) -> std::string {
        auto cs = mesh_s.member(r), cd = mesh_d.member(r);
        auto ts = make(c, r, R), td = make(c, r, R);
        StreamingDiLoCoConfig sc{H, 1, FragmentOrder::kSequential, 0, 0.0, 0.7, 0.9, "fp32"};
        auto s = StreamingDiLoCo::create(ts.model()->parameters(), names_of(ts), sc, r, R);
        if (!s) return s.message();
        DiLoCo d(td.model()->parameters(), {0.7, 0.9, WireDtype::kFp32});
        for (int64_t step = 1; step <= H * rounds; ++step) {
            (void)ts.step();
            (void)td.step();
            auto rep = (*s)->after_step(step, *cs, 0.0);
            if (!rep) return rep.message();
            if (step % H != 0) continue;
            if (!rep->synced || rep->overlap_steps != 0) return "no sync at step " + std::to_string(step);
            if (Status st = d.sync(*cd); !st) return st.message();
            streaming[r].push_back(flat(ts.model()->parameters()));
            diloco[r].push_back(flat(td.model()->parameters()));
            if (!torch::equal(flat((*s)->eval_params()), flat(d.global()))) return "global copies differ";
        }
        return "";
    }));
    for (int r = 0; r < R; ++r) {
        ASSERT_EQ(streaming[r].size(), static_cast<size_t>(rounds));
        for (int k = 0; k < rounds; ++k)
            EXPECT_TRUE(torch::equal(streaming[r][k], diloco[r][k]))
                << "replica " << r << " round " << k << " max diff "
                << (streaming[r][k] - diloco[r][k]).abs().max().item<float>();
    }
}

TEST(StreamingDiLoCo, FragmentsPartitionTheParametersByLayerName) {
    auto c = micro(4);
    c.model.tie_embeddings = false;
    auto t = make(c, 0, 1);
    const auto names = names_of(t);
    // Pinned by name: tok_emb with layer 0's fragment, norm_f and head with layer 3's.
    auto expect = [&](FragmentOrder order, int64_t F, std::map<std::string, int> by_layer_prefix) {
        auto frag = assign_fragments(names, F, order);
        ASSERT_TRUE(frag) << frag.message();
        ASSERT_EQ(frag->size(), names.size());
        std::set<int> used;
        for (size_t i = 0; i < names.size(); ++i) {
            const std::string key = names[i].substr(0, names[i].find('.'));
            ASSERT_TRUE(by_layer_prefix.count(key)) << names[i];
            EXPECT_EQ((*frag)[i], by_layer_prefix[key]) << names[i] << " F=" << F << " order " << int(order);
            used.insert((*frag)[i]);
        }
        EXPECT_EQ(used.size(), static_cast<size_t>(F));  // no empty fragment
    };
    expect(
        FragmentOrder::kSequential, 2,
        {{"tok_emb", 0}, {"block_0", 0}, {"block_1", 0}, {"block_2", 1}, {"block_3", 1}, {"norm_f", 1}, {"head", 1}});
    expect(
        FragmentOrder::kStrided, 2,
        {{"tok_emb", 0}, {"block_0", 0}, {"block_1", 1}, {"block_2", 0}, {"block_3", 1}, {"norm_f", 1}, {"head", 1}});
    expect(
        FragmentOrder::kSequential, 3,
        {{"tok_emb", 0}, {"block_0", 0}, {"block_1", 0}, {"block_2", 1}, {"block_3", 2}, {"norm_f", 2}, {"head", 2}});
    expect(
        FragmentOrder::kStrided, 3,
        {{"tok_emb", 0}, {"block_0", 0}, {"block_1", 1}, {"block_2", 2}, {"block_3", 0}, {"norm_f", 0}, {"head", 0}});
    expect(
        FragmentOrder::kStrided, 1,
        {{"tok_emb", 0}, {"block_0", 0}, {"block_1", 0}, {"block_2", 0}, {"block_3", 0}, {"norm_f", 0}, {"head", 0}});
    EXPECT_FALSE(assign_fragments(names, 5, FragmentOrder::kSequential));  // more fragments than layers
    EXPECT_FALSE(assign_fragments({"block_0.w", "block_1.w", "bias"}, 2, FragmentOrder::kSequential));
}

// F = 2, H = 4, τ = 1, α = 0.5, η = 0.5, μ = 0, one replica; "training" adds 1 to every value per step.
TEST(StreamingDiLoCo, OverlapAppliesTheOuterStepTauStepsLater) {
    Mesh mesh("sd-tau", 1);
    auto coll = mesh.member(0);
    std::vector<torch::Tensor> params;
    for (int i = 0; i < 4; ++i) params.push_back(torch::zeros({2}));
    StreamingDiLoCoConfig sc{4, 2, FragmentOrder::kSequential, 1, 0.5, 0.5, 0.0, "fp32"};
    auto s = StreamingDiLoCo::create(params, {"tok_emb", "block_0.w", "block_1.w", "norm_f"}, sc, 0, 1);
    ASSERT_TRUE(s) << s.message();
    auto& algo = **s;
    EXPECT_EQ(algo.fragment_of(), (std::vector<int>{0, 0, 1, 1}));
    auto values = [&](size_t i) { return params[i][0].item<float>(); };
    auto global = [&](size_t i) { return algo.global()[i][0].item<float>(); };
    auto train = [&] {
        for (auto& p : params) p.add_(1.0f);
    };

    train();  // step 1: nothing
    auto rep = algo.after_step(1, *coll, 0.0);
    ASSERT_TRUE(rep && !rep->synced);
    train();  // step 2: fragment 0 starts with Δ = 0 − 2; weights untouched until step 3
    rep = algo.after_step(2, *coll, 0.0);
    ASSERT_TRUE(rep) << rep.message();
    EXPECT_TRUE(rep->synced);
    EXPECT_EQ(rep->overlap_steps, 1);
    EXPECT_EQ(rep->what, "fragment 0");
    EXPECT_EQ(algo.pending(), 1);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(values(i), 2.0f) << i;
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(global(i), 0.0f) << i;
    train();  // step 3: global_0 = 0 − 0.5·(−2) = 1; local_0 = 0.5·1 + 0.5·3 = 2; fragment 1 untouched
    rep = algo.after_step(3, *coll, 0.0);
    ASSERT_TRUE(rep && !rep->synced);
    EXPECT_EQ(algo.pending(), 0);
    for (size_t i : {0, 1}) EXPECT_FLOAT_EQ(global(i), 1.0f) << i;
    for (size_t i : {0, 1}) EXPECT_FLOAT_EQ(values(i), 2.0f) << i;
    for (size_t i : {2, 3}) EXPECT_EQ(global(i), 0.0f) << i;
    for (size_t i : {2, 3}) EXPECT_EQ(values(i), 3.0f) << i;
    train();  // step 4: fragment 1 starts with Δ = 0 − 4
    rep = algo.after_step(4, *coll, 0.0);
    ASSERT_TRUE(rep && rep->synced && rep->what == "fragment 1");
    for (size_t i : {2, 3}) EXPECT_EQ(values(i), 4.0f) << i;
    train();  // step 5: global_1 = 2; local_1 = 0.5·2 + 0.5·5 = 3.5; fragment 0 untouched
    rep = algo.after_step(5, *coll, 0.0);
    ASSERT_TRUE(rep && !rep->synced);
    for (size_t i : {2, 3}) EXPECT_FLOAT_EQ(global(i), 2.0f) << i;
    for (size_t i : {2, 3}) EXPECT_FLOAT_EQ(values(i), 3.5f) << i;
    for (size_t i : {0, 1}) EXPECT_FLOAT_EQ(values(i), 4.0f) << i;
    train();  // step 6: fragment 0 again
    rep = algo.after_step(6, *coll, 0.0);
    ASSERT_TRUE(rep && rep->synced && rep->what == "fragment 0");
}

// FP4 on the wire: 4 + ceil(n/2) bytes per tensor of the fragment over the mesh; over the ring
// (R = 3) each member's chunks of the fragment, 4 + ceil(n/2) per piece of a tensor in a chunk,
// plus the guard's 8-byte opening per peer; replicas agree after every step either way.
TEST(StreamingDiLoCo, Fp4FragmentsSendTheCodecBytesAndReplicasAgree) {
  for (const std::string topology : {"mesh", "ring"}) {
    SCOPED_TRACE(topology);
    const int R = topology == "mesh" ? 2 : 3, H = 4;
    auto c = outer_cfg("streaming_diloco", R, H);
    c.outer.fragments = 2;
    c.outer.overlap_steps = 1;
    c.outer.mix_alpha = 0.5;
    c.outer.dtype = "fp4";
    c.outer.topology = topology;
    Mesh mesh("sd-fp4-" + topology, R);
    std::vector<std::vector<torch::Tensor>> globals(R);
    std::vector<std::vector<uint64_t>> bytes(R);
    std::vector<std::vector<uint64_t>> expected(R, std::vector<uint64_t>(2, 0));  // [replica][fragment]
    {
        auto t = make(c, 0, 1);
        auto frag = assign_fragments(names_of(t), 2, FragmentOrder::kSequential).value();
        auto ps = t.model()->parameters();
        std::vector<std::vector<int64_t>> segments(2);
        for (size_t i = 0; i < ps.size(); ++i) {
            for (int r = 0; r < R; ++r) expected[r][frag[i]] += 4 + (ps[i].numel() + 1) / 2;
            segments[frag[i]].push_back(ps[i].numel());
        }
        if (topology == "ring")
            for (int f = 0; f < 2; ++f) {
                const auto chunks = ring_chunk_wire_bytes(segments[f], R, [](int64_t n) { return 4 + (n + 1) / 2; });
                for (int r = 0; r < R; ++r) expected[r][f] = ring_sent_bytes(chunks, r) + 8 * (R - 1);
            }
    }
    expect_no_errors(on_threads(R, [&](int r) -> std::string {
        auto coll = mesh.member(r);
        auto t = make(c, r, R);
        auto algo = make_outer_algorithm(c, t.model()->parameters(), names_of(t), r, R);
        if (!algo) return algo.message();
        for (int64_t s = 1; s <= 2 * H; ++s) {
            (void)t.step();
            auto rep = (*algo)->after_step(s, *coll, 0.0);
            if (!rep) return rep.message();
            if (rep->synced) bytes[r].push_back(rep->bytes_sent);
            globals[r].push_back(flat((*algo)->eval_params()));
        }
        return "";
    }));
    for (int r = 0; r < R; ++r) {
        const auto& e = expected[r];
        EXPECT_EQ(bytes[r], (std::vector<uint64_t>{e[0], e[1], e[0], e[1]})) << r;
        for (size_t k = 0; k < globals[0].size(); ++k) EXPECT_TRUE(torch::equal(globals[r][k], globals[0][k])) << k;
    }
    EXPECT_TRUE(torch::equal(globals[0][0], globals[0][1]));   // fragment 0 in flight at step 2
    EXPECT_FALSE(torch::equal(globals[0][1], globals[0][2]));  // applied at step 3
  }
}

// ---------------------------------------------------------------------------------------------
// NoLoCo
// ---------------------------------------------------------------------------------------------

// With one group of all replicas the φ_i stay equal, so φ̄ − φ_i = 0 and
//   δ ← μ·δ + η·d̄,  d̄ = mean_j θ_j − φ.
// DiLoCo's pseudo-gradient is Δ̄ = φ − mean_j θ_j = −d̄. Put b = −δ/η:
//   b ← μ·b + Δ̄;  φ ← φ + δ = φ − η·b,
// heavy-ball outer momentum (not PyTorch's Nesterov). The reference below runs exactly that.
TEST(NoLoCo, OneGroupOfAllReplicasIsHeavyBallDiLoCo) {
    const int R = 3, H = 3, rounds = 3;
    const double eta = 0.7, mu = 0.5;
    auto c = outer_cfg("noloco", R, H);
    c.outer.lr = eta;
    c.outer.momentum = mu;
    c.outer.group_size = R;

    std::vector<std::unique_ptr<Trainer>> ref;
    for (int r = 0; r < R; ++r) ref.push_back(make_ptr(c, r, R));
    std::vector<torch::Tensor> phi, b;
    for (auto& p : ref[0]->model()->parameters()) {
        phi.push_back(p.detach().clone());
        b.push_back(torch::zeros_like(p));
    }
    for (int k = 0; k < rounds; ++k) {
        for (auto& t : ref)
            for (int h = 0; h < H; ++h) (void)t->step();
        torch::NoGradGuard no_grad;
        for (size_t i = 0; i < phi.size(); ++i) {
            auto mean = torch::zeros_like(phi[i]);
            for (auto& t : ref) mean += t->model()->parameters()[i];
            mean /= static_cast<double>(R);
            b[i].mul_(mu).add_(phi[i] - mean);
            phi[i].sub_(b[i], eta);
            for (auto& t : ref) t->model()->parameters()[i].copy_(phi[i]);
        }
    }

    Mesh mesh("noloco-hb", R);
    std::vector<torch::Tensor> slow(R), live(R);
    expect_no_errors(on_threads(R, [&](int r) -> std::string {
        auto coll = mesh.member(r);
        auto t = make(c, r, R);
        auto algo = make_outer_algorithm(c, t.model()->parameters(), names_of(t), r, R);
        if (!algo) return algo.message();
        for (int64_t s = 1; s <= H * rounds; ++s) {
            (void)t.step();
            auto rep = (*algo)->after_step(s, *coll, 0.0);
            if (!rep) return rep.message();
            if (rep->synced && rep->what != "group 1 of 1") return "what: " + rep->what;
        }
        slow[r] = flat((*algo)->eval_params());
        live[r] = flat(t.model()->parameters());
        return "";
    }));
    const auto want = flat(phi);
    for (int r = 0; r < R; ++r) {
        EXPECT_TRUE(torch::equal(slow[r], slow[0])) << r;  // one group: identical sums on every member
        EXPECT_TRUE(torch::equal(live[r], slow[r])) << r;
        EXPECT_TRUE(torch::allclose(slow[r], want, 1e-5, 2e-6))  // measured: 3.6e-7
            << "replica " << r << " max diff " << (slow[r] - want).abs().max().item<float>();
    }
}

TEST(NoLoCo, GroupsAgreeOnEveryNodeWithoutAMessageAndCoverEveryReplicaOnce) {
    for (int R : {1, 2, 4, 5, 7, 8}) {
        for (int64_t g : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{R}}) {
            if (g > R) continue;
            for (int64_t step = 50; step <= 500; step += 50) {
                // Each "node" computes its own group from its own NoLoCo object.
                std::vector<std::vector<int>> group(R);
                for (int r = 0; r < R; ++r) {
                    NoLoCo node({torch::zeros({1})}, {50, 0.7, 0.5, g}, r, R);
                    group[r] = node.group_of(step);
                }
                std::vector<int> seen(R, 0);
                std::set<std::vector<int>> distinct;
                for (int r = 0; r < R; ++r) {
                    ASSERT_TRUE(std::is_sorted(group[r].begin(), group[r].end()));
                    ASSERT_TRUE(std::count(group[r].begin(), group[r].end(), r) == 1) << R << " " << g << " " << step;
                    for (int m : group[r]) EXPECT_EQ(group[m], group[r]) << "R " << R << " g " << g << " step " << step;
                    distinct.insert(group[r]);
                }
                std::multiset<size_t> sizes;
                for (auto& grp : distinct) {
                    sizes.insert(grp.size());
                    for (int m : grp) ++seen[m];
                }
                for (int r = 0; r < R; ++r) EXPECT_EQ(seen[r], 1);
                // g each, the last one g + R mod g.
                const int64_t n_groups = R / g;
                EXPECT_EQ(static_cast<int64_t>(distinct.size()), n_groups);
                if (R % g == 0) {
                    EXPECT_EQ(sizes.count(static_cast<size_t>(g)), static_cast<size_t>(n_groups));
                } else {
                    EXPECT_EQ(sizes.count(static_cast<size_t>(g)), static_cast<size_t>(n_groups - 1));
                    EXPECT_EQ(sizes.count(static_cast<size_t>(g + R % g)), 1u);
                }
            }
        }
    }
    // Platform-independent (std::mt19937_64 + own Fisher–Yates): pinned values, reproduced by an
    // independent Python implementation of mt19937_64 and the same shuffle.
    EXPECT_EQ(noloco_groups(50, 4, 2), (std::vector<std::vector<int>>{{0, 2}, {1, 3}}));
    EXPECT_EQ(noloco_groups(100, 5, 2), (std::vector<std::vector<int>>{{0, 1}, {2, 3, 4}}));
    // The grouping really changes with the step.
    std::set<std::vector<std::vector<int>>> variety;
    for (int64_t step = 50; step <= 1000; step += 50) variety.insert(noloco_groups(step, 8, 2));
    EXPECT_GT(variety.size(), 10u);
}

// R = 4 in pairs over 3 rounds: every replica's update is recomputed here from what each member
// held before the round (φ_j, θ_j − φ_j, δ_i), with the groups computed here too; only 2·P floats
// go to the one peer.
TEST(NoLoCo, PairsFollowTheUpdateWithinTheirGroupAndSendTwoPFloats) {
    const int R = 4, H = 2, rounds = 3;
    const double eta = 0.7, mu = 0.5;
    auto c = outer_cfg("noloco", R, H);
    Mesh mesh("noloco-pairs", R);
    struct Round {
        torch::Tensor phi, diff, delta, phi_after;  // flattened, before the round (phi_after: after)
    };
    std::vector<std::vector<Round>> seen(R);
    std::vector<ByteCounters> counters(R);
    int64_t P = 0;
    expect_no_errors(on_threads(R, [&](int r) -> std::string {
        auto coll = mesh.member(r);
        auto t = make(c, r, R);
        if (r == 0) P = t.model()->num_parameters();
        NoLoCo algo(t.model()->parameters(), {H, eta, mu, 2}, r, R);
        for (int64_t s = 1; s <= H * rounds; ++s) {
            (void)t.step();
            Round rd;
            rd.phi = flat(algo.slow());
            rd.diff = flat(t.model()->parameters()) - rd.phi;
            rd.delta = flat(algo.momentum());
            auto rep = algo.after_step(s, *coll, 0.0);
            if (!rep) return rep.message();
            if (!rep->synced) continue;
            if (rep->bytes_sent != algo.payload_bytes()) return "bytes_sent " + std::to_string(rep->bytes_sent);
            if (rep->clocks.size() != 2) return "clocks of " + std::to_string(rep->clocks.size()) + " members";
            rd.phi_after = flat(algo.slow());
            if (!torch::equal(rd.phi_after, flat(t.model()->parameters()))) return "θ is not φ after the round";
            seen[r].push_back(rd);
        }
        counters[r] = coll->counters();
        return "";
    }));
    for (int r = 0; r < R; ++r) {
        EXPECT_EQ(counters[r].sent_bytes[kOuter], static_cast<uint64_t>(rounds * 2 * P * 4)) << r;
        EXPECT_EQ(counters[r].sent_msgs[kOuter], static_cast<uint64_t>(rounds)) << r;
        ASSERT_EQ(seen[r].size(), static_cast<size_t>(rounds));
    }
    for (int k = 0; k < rounds; ++k) {
        for (const auto& g : noloco_groups(H * (k + 1), R, 2)) {
            ASSERT_EQ(g.size(), 2u);
            const auto phi_bar = (seen[g[0]][k].phi + seen[g[1]][k].phi) / 2;
            const auto d_bar = (seen[g[0]][k].diff + seen[g[1]][k].diff) / 2;
            for (int i : g) {
                const auto& rd = seen[i][k];
                const auto delta = mu * rd.delta + eta * d_bar + eta * (phi_bar - rd.phi);
                EXPECT_TRUE(torch::allclose(rd.phi_after, rd.phi + delta, 1e-5, 1e-6))
                    << "replica " << i << " round " << k << " max diff "
                    << (rd.phi_after - rd.phi - delta).abs().max().item<float>();
            }
        }
    }
    // Pairs really differ: nothing was averaged over all four.
    EXPECT_FALSE(torch::equal(seen[0][0].phi_after, seen[1][0].phi_after) &&
                 torch::equal(seen[0][0].phi_after, seen[2][0].phi_after));
}

// ---------------------------------------------------------------------------------------------
// The factory
// ---------------------------------------------------------------------------------------------

TEST(OuterFactory, BuildsEveryAlgorithmByName) {
    auto t = make(micro(), 0, 1);
    for (const char* a : {"diloco", "sparseloco", "streaming_diloco", "noloco"}) {
        auto c = outer_cfg(a, 2, 4);
        c.outer.fragments = 2;
        auto algo = make_outer_algorithm(c, t.model()->parameters(), names_of(t), 0, 2);
        ASSERT_TRUE(algo) << a << ": " << algo.message();
        EXPECT_EQ((*algo)->name(), a);
        EXPECT_EQ((*algo)->eval_params().size(), t.model()->parameters().size());
    }
    for (const char* d : {"bf16", "int8", "fp4"}) {
        auto c = outer_cfg("diloco", 2, 4);
        c.outer.dtype = d;
        auto algo = make_outer_algorithm(c, t.model()->parameters(), {}, 0, 2);
        ASSERT_TRUE(algo) << d << ": " << algo.message();
        EXPECT_EQ((*algo)->name(), "diloco");
    }
}

TEST(OuterFactory, RefusesBadConfigsNamingEveryProblem) {
    auto t = make(micro(), 0, 1);
    auto build = [&](const RunConfig& c, std::vector<std::string> names) {
        return make_outer_algorithm(c, t.model()->parameters(), std::move(names), 0, c.outer.replicas);
    };
    auto has = [](const std::string& msg, const std::string& part) { return msg.find(part) != std::string::npos; };

    auto c = outer_cfg("ddp", 2, 4);
    auto r = build(c, names_of(t));
    ASSERT_FALSE(r);
    EXPECT_TRUE(has(r.message(), "\"ddp\"")) << r.message();

    c = outer_cfg("sparseloco", 2, 4);
    c.outer.topk_k = 7;
    c.outer.aggregation = "median";
    c.outer.dtype = "fp4";
    r = build(c, names_of(t));
    ASSERT_FALSE(r);
    EXPECT_TRUE(has(r.message(), "outer.topk_k 7")) << r.message();
    EXPECT_TRUE(has(r.message(), "outer.aggregation \"median\"")) << r.message();
    EXPECT_TRUE(has(r.message(), "outer.dtype \"fp4\" does not apply")) << r.message();

    c = outer_cfg("streaming_diloco", 2, 4);
    c.outer.fragments = 3;
    r = build(c, names_of(t));
    ASSERT_FALSE(r);
    EXPECT_TRUE(has(r.message(), "multiple of outer.fragments 3")) << r.message();
    c.outer.fragments = 2;
    c.outer.overlap_steps = 2;
    r = build(c, names_of(t));
    ASSERT_FALSE(r);
    EXPECT_TRUE(has(r.message(), "outer.overlap_steps 2")) << r.message();
    c.outer.overlap_steps = 0;
    r = build(c, {});
    ASSERT_FALSE(r);
    EXPECT_TRUE(has(r.message(), "names")) << r.message();

    c = outer_cfg("noloco", 2, 4);
    c.outer.group_size = 3;
    r = build(c, names_of(t));
    ASSERT_FALSE(r);
    EXPECT_TRUE(has(r.message(), "outer.group_size 3")) << r.message();

    c = outer_cfg("diloco", 2, 4);
    c.outer.dtype = "fp8";
    r = build(c, names_of(t));
    ASSERT_FALSE(r);
    EXPECT_TRUE(has(r.message(), "outer.dtype \"fp8\"")) << r.message();

    // A topology the algorithm does not run is refused even in a config built in code.
    for (const char* sparse : {"sparseloco", "demo"}) {
        c = outer_cfg(sparse, 2, 4);
        c.outer.topology = "ring";
        r = build(c, names_of(t));
        ASSERT_FALSE(r) << sparse;
        EXPECT_TRUE(has(r.message(), std::string("outer.topology \"ring\" does not apply to ") + sparse)) << r.message();
    }
    c = outer_cfg("diloco", 2, 4);
    c.outer.topology = "hub";
    r = build(c, names_of(t));
    ASSERT_FALSE(r);
    EXPECT_TRUE(has(r.message(), "outer.topology \"hub\" does not apply to diloco")) << r.message();
    c.outer.topology = "star";
    r = build(c, names_of(t));
    ASSERT_FALSE(r);
    EXPECT_TRUE(has(r.message(), "outer.topology \"star\" is unknown")) << r.message();
}

// The adapter syncs every H steps, reports the bytes and the clocks of every replica, and evaluates
// the global copy; int8 on the wire goes through the codec (4 + n bytes per tensor). Over the mesh
// (R−1)·P·b; over the ring (R = 2: each member sends both chunks once) P·b for fp32/bf16 and, for
// int8, 4 + n per piece of a tensor in a chunk (the tensor the chunk boundary cuts pays two scales),
// plus the guard's 8-byte opening.
TEST(OuterFactory, DiLoCoReportsBytesAndClocksForEveryWireType) {
    const int R = 2, H = 2;
    for (const std::string topology : {"mesh", "ring"})
    for (const char* d : {"fp32", "bf16", "int8"}) {
        SCOPED_TRACE(topology);
        auto c = outer_cfg("diloco", R, H);
        c.outer.dtype = d;
        c.outer.topology = topology;
        Mesh mesh(std::string("factory-diloco-") + d + topology, R);
        std::vector<torch::Tensor> global(R);
        uint64_t expected = 0;
        {
            auto t = make(c, 0, 1);
            std::vector<int64_t> segments;
            for (auto& p : t.model()->parameters()) {
                expected += std::string(d) == "int8" ? 4 + p.numel() : p.numel() * (std::string(d) == "bf16" ? 2 : 4);
                segments.push_back(p.numel());
            }
            if (topology == "ring" && std::string(d) == "int8") {
                const auto chunks = ring_chunk_wire_bytes(segments, R, [](int64_t n) { return 4 + static_cast<uint64_t>(n); });
                expected = chunks[0] + chunks[1];
                EXPECT_EQ(expected, ring_sent_bytes(chunks, 0));
                EXPECT_EQ(expected, ring_sent_bytes(chunks, 1));
            }
            if (topology == "ring") expected += 8;
        }
        expect_no_errors(on_threads(R, [&](int r) -> std::string {
            auto coll = mesh.member(r);
            auto t = make(c, r, R);
            auto algo = make_outer_algorithm(c, t.model()->parameters(), names_of(t), r, R);
            if (!algo) return algo.message();
            for (int64_t s = 1; s <= H; ++s) {
                (void)t.step();
                auto rep = (*algo)->after_step(s, *coll, 10.0 * (r + 1));
                if (!rep) return rep.message();
                if (rep->synced != (s == H)) return "synced at step " + std::to_string(s);
                if (!rep->synced) continue;
                if (rep->bytes_sent != (R - 1) * expected) return "bytes_sent " + std::to_string(rep->bytes_sent);
                if (rep->hops != (topology == "mesh" ? 1 : 2)) return "hops " + std::to_string(rep->hops);
                if (rep->clocks != std::vector<double>{10.0, 20.0}) return "clocks";
                if (coll->counters().sent_bytes[kOuter] != rep->bytes_sent) return "transport counted otherwise";
            }
            global[r] = flat((*algo)->eval_params());
            if (!torch::equal(global[r], flat(t.model()->parameters()))) return "eval_params is not the global copy";
            return "";
        }));
        EXPECT_TRUE(torch::equal(global[0], global[1])) << d;
    }
}

// A replica whose Δ holds NaN (or Inf) fails, and so do its peers, at once and naming it.
TEST(OuterFactory, NonFiniteOuterGradientIsAnErrorOnEveryReplica) {
    const int R = 2;
    struct Case {
        std::string algo, dtype;
        float bad;
    };
    const std::vector<Case> cases = {{"diloco", "fp32", NAN},          {"diloco", "fp4", NAN},
                                     {"sparseloco", "fp32", NAN},      {"sparseloco", "fp32", INFINITY},
                                     {"streaming_diloco", "fp4", NAN}, {"streaming_diloco", "int8", INFINITY},
                                     {"noloco", "fp32", NAN}};
    int n = 0;
    for (const std::string topology : {"mesh", "ring"})
    for (const auto& cs : cases) {
        if (topology == "ring" && cs.algo == "sparseloco") continue;  // sparse payloads: mesh only
        SCOPED_TRACE(topology);
        auto c = outer_cfg(cs.algo, R, 2);
        c.outer.dtype = cs.dtype;
        c.outer.topology = topology;
        c.outer.fragments = 2;  // streaming: fragment 0 (tok_emb, block_0) syncs at step 1
        const int64_t step = cs.algo == "streaming_diloco" ? 1 : 2;
        Mesh mesh("nan-" + std::to_string(n++), R);
        const auto t0 = std::chrono::steady_clock::now();
        auto errors = on_threads(R, [&](int r) -> std::string {
            auto coll = mesh.member(r, 5000);
            std::vector<torch::Tensor> params;
            for (int i = 0; i < 4; ++i) params.push_back(torch::zeros({8, 8}));
            auto algo = make_outer_algorithm(c, params, {"tok_emb", "block_0.w", "block_1.w", "norm_f"}, r, R);
            if (!algo) return "factory: " + algo.message();
            params[0].sub_(0.1f);
            if (r == 1) params[0][3][5] = cs.bad;
            auto rep = (*algo)->after_step(step, *coll, 0.0);
            return rep ? "" : rep.message();
        });
        const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const std::string label = cs.algo + "/" + cs.dtype;
        EXPECT_NE(errors[1], "") << label;
        EXPECT_NE(errors[0], "") << label;
        EXPECT_EQ(errors[0].find("factory"), std::string::npos) << label << ": " << errors[0];
        EXPECT_NE(errors[0].find("replica 1"), std::string::npos) << label << ": " << errors[0];
        EXPECT_EQ(errors[0].find("timed out"), std::string::npos) << label << ": " << errors[0];
        EXPECT_LT(took_s, 4.0) << label;
    }
}

}  // namespace
}  // namespace tw
