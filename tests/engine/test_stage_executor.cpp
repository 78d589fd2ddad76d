// One iteration of two stage nodes (engine/worker/stage_executor.h) against the whole model: a
// 1F1B iteration of 2 micro-batches over a real inproc mesh must give the trainer's loss, global
// gradient norm and learning rate, leave the stages' weights where one trainer step leaves the
// whole model's, and send exactly m dense boundaries plus one 8-byte norm each way. And the
// `reparam` writers (engine/pipeline/reparam.h) by hand: W = U·Z, dL/dZ = Uᵀ·dL/dW.
#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zmq.hpp>

#include "engine/pipeline/activation_codec.h"
#include "engine/pipeline/reparam.h"
#include "engine/pipeline/subspace.h"
#include "engine/worker/stage_executor.h"
#include "remote/zmq_collective.h"
#include "tests/engine/micro_run.h"
#include "tests/engine/replica_threads.h"

namespace tw {
namespace {

TEST(StageExecutor, TwoStagesStepLikeOneTrainerAndSendTheirBoundaries) {
    RunConfig c = testing_support::micro_run(53, 1);
    c.model.tie_embeddings = false;
    c.cluster.stages = 2;
    c.pipeline.micro_batches = 2;
    c.pipeline.schedule = "1f1b";
    c.run.seed = 1;
    auto data = std::make_shared<PreparedData>();
    data->vocab_size = 53;
    data->train = data->val = testing_support::synthetic_tokens();

    // The whole model, one trainer step on the same windows.
    Trainer whole(c, WindowLoader(data->train, select_spans(*data, false, {}), c.model.seq_len, c.train.batch_size, 1, 0, 1),
                  WindowLoader(data->val, select_spans(*data, true, {}), c.model.seq_len, c.train.batch_size, 1));
    const StepReport want = whole.step();
    std::map<std::string, torch::Tensor> after;
    for (auto& p : whole.model()->named_parameters()) after[p.key()] = p.value().detach().clone();

    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<StageStepReport> got(2);
    std::vector<uint64_t> sent(2);
    std::vector<double> compute(2);
    std::vector<std::map<std::string, torch::Tensor>> stage_after(2);
    testing_support::expect_no_errors(testing_support::on_threads(2, [&](int s) -> std::string {
        std::vector<std::string> eps{"inproc://stage-exec-0", "inproc://stage-exec-1"};
        auto mesh = ZmqCollective::create(ctx, eps, s, 20000).value();
        PipelineStage stage(c.model, 1, s, 2, s > 0 ? make_dense_codec(c.model.d_model) : nullptr,
                            s < 1 ? make_dense_codec(c.model.d_model) : nullptr, torch::Tensor());
        InnerOptimizer optim(stage.model()->parameters(), c.train);
        std::vector<ReparamWriter> none;
        StageExecutor exec(c, 0, s, data, stage, optim, none, [] {});
        const StageIo io{[&](int64_t, int to, const std::vector<uint8_t>& p) {
                             return mesh->send(to, p, LinkClass::kInterStage, 0);
                         },
                         [&](int from) { return mesh->recv(from); },
                         [&](int64_t, const StageEvent&, double sec) {
                             compute[s] += sec;
                             return sec;
                         }};
        auto r = exec.step(0, io);
        if (!r) return r.message();
        got[s] = *r;
        sent[s] = mesh->counters().sent_bytes[static_cast<int>(LinkClass::kInterStage)];
        for (auto& p : stage.model()->named_parameters()) stage_after[s][p.key()] = p.value().detach().clone();
        return "";
    }));
    EXPECT_NEAR(got[1].loss, want.loss, 1e-5);
    for (int s = 0; s < 2; ++s) {
        EXPECT_NEAR(got[s].grad_norm, want.grad_norm, 1e-4 * want.grad_norm) << "stage " << s;
        EXPECT_EQ(got[s].lr, want.lr);
        EXPECT_GT(got[s].compute_s, 0);
        EXPECT_DOUBLE_EQ(got[s].compute_s, compute[s]) << "every compute segment goes through the node";
        // Two micro-batches of b = 2 sequences × 16 tokens × d = 32 in fp32, plus the 8-byte norm.
        EXPECT_EQ(sent[s], 2u * (2 * 16 * 32 * 4) + 8) << "stage " << s;
        for (auto& [k, v] : stage_after[s]) {
            ASSERT_TRUE(after.count(k)) << k;
            EXPECT_LE((v - after[k]).abs().max().item<double>(), 2e-6) << k;
        }
    }
    EXPECT_EQ(stage_after[0].size() + stage_after[1].size(), after.size());
}

TEST(ReparamWriter, HoldsTheWriterAsUTimesZAndMovesItsGradient) {
    const int64_t d = 4, in = 3, k = 2;
    // U: the first two unit vectors, so U·Uᵀ keeps rows 0 and 1 of W and zeroes rows 2 and 3.
    torch::Tensor u = torch::zeros({d, k});
    u[0][0] = 1, u[1][1] = 1;
    torch::Tensor w = torch::arange(d * in, torch::kFloat32).reshape({d, in}).requires_grad_(true);
    auto writers = make_reparam_writers({"block_0.wo", "block_0.attn_norm"}, {w, torch::ones({d})}, u, k);
    ASSERT_EQ(writers.size(), 1u) << "only residual writers are held as U·Z";
    EXPECT_TRUE(torch::equal(writers[0].z, torch::arange(6, torch::kFloat32).reshape({k, in})));
    EXPECT_TRUE(torch::equal(w.detach(), torch::cat({torch::arange(6, torch::kFloat32), torch::zeros({6})}).reshape({d, in})));
    w.mutable_grad() = torch::ones({d, in});
    writers[0].move_grad();
    EXPECT_FALSE(w.grad().defined());
    EXPECT_TRUE(torch::equal(writers[0].z.grad(), torch::ones({k, in})));  // Uᵀ·1 picks rows 0 and 1
    EXPECT_TRUE(make_reparam_writers({"block_0.wo"}, {w}, u, 0).empty());
}

}  // namespace
}  // namespace tw
