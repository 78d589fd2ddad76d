// The per-stage outer rounds (engine/worker/stage_rounds.h) that full replicas and stage nodes of a
// run with pipeline replicas share. Evidence: DiLoCo is elementwise, so S rounds over the stage
// slices of two full replicas must leave exactly the weights one whole-model round leaves, with
// the same payload bytes in total; and a replica that starts from other weights is named.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zmq.hpp>

#include "engine/algo/registry.h"
#include "engine/worker/stage_rounds.h"
#include "remote/zmq_collective.h"
#include "tests/engine/micro_run.h"
#include "tests/engine/replica_threads.h"

namespace tw {
namespace {

RunConfig two_stage_diloco() {
    RunConfig c = testing_support::micro_run(53, 4);
    c.model.tie_embeddings = false;
    c.outer.algorithm = "diloco";
    c.outer.replicas = 2;
    c.outer.inner_steps = 2;
    c.outer.guard_ratio = 0;
    c.cluster.stages = 2;
    c.pipeline.replicas = 0;  // both replicas full: each holds both stages
    return c;
}

std::vector<std::string> names_of(Trainer& t) {
    std::vector<std::string> n;
    for (auto& p : t.model()->named_parameters()) n.push_back(p.key());
    return n;
}

std::vector<uint8_t> flat(Trainer& t) {
    std::vector<uint8_t> out;
    for (auto& p : t.model()->parameters()) {
        auto c = p.detach().contiguous();
        const auto* b = static_cast<const uint8_t*>(c.data_ptr());
        out.insert(out.end(), b, b + c.numel() * 4);
    }
    return out;
}

TEST(StageRounds, FullReplicasPerStageRoundsEqualOneWholeModelRound) {
    const RunConfig c = two_stage_diloco();
    RunConfig whole = c;
    whole.cluster.stages = 1;
    const int R = 2;
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::vector<uint8_t>> staged(R), single(R);
    std::vector<uint64_t> staged_bytes(R), single_bytes(R);
    std::vector<size_t> hashes(R);
    int64_t n_params = 0;
    testing_support::expect_no_errors(testing_support::on_threads(R, [&](int r) -> std::string {
        // Per-stage rounds over one mesh.
        std::vector<std::string> eps{"inproc://stage-rounds-a0", "inproc://stage-rounds-a1"};
        auto mesh = ZmqCollective::create(ctx, eps, r, 20000).value();
        auto t = testing_support::synthetic_trainer(c, r, R);
        auto rounds = StageRounds::create(c, r, 0, 1, t.model()->parameters(), names_of(t), *mesh, torch::Tensor());
        if (!rounds) return rounds.message();
        if ((*rounds)->slices().size() != 2) return "slices: " + std::to_string((*rounds)->slices().size());
        if (Status st = (*rounds)->check_weights("replica"); !st) return st.message();
        for (int64_t s = 1; s <= 2; ++s) {
            (void)t.step();
            auto rep = (*rounds)->round(s, 0.0);
            if (!rep) return rep.message();
            if (rep->synced != (s == 2)) return "synced at step " + std::to_string(s);
            if (rep->synced) staged_bytes[r] = rep->bytes, hashes[r] = rep->stage_hashes.size();
        }
        staged[r] = flat(t);
        // The same two steps and one whole-model DiLoCo round.
        std::vector<std::string> eps_b{"inproc://stage-rounds-b0", "inproc://stage-rounds-b1"};
        auto mesh_b = ZmqCollective::create(ctx, eps_b, r, 20000).value();
        auto u = testing_support::synthetic_trainer(whole, r, R);
        auto algo = make_outer_algorithm(whole, u.model()->parameters(), names_of(u), r, R);
        if (!algo) return algo.message();
        for (int64_t s = 1; s <= 2; ++s) {
            (void)u.step();
            auto rep = (*algo)->after_step(s, *mesh_b, 0.0);
            if (!rep) return rep.message();
            if (rep->synced) single_bytes[r] = rep->bytes_sent;
        }
        single[r] = flat(u);
        if (r == 0)
            for (auto& p : u.model()->parameters()) n_params += p.numel();
        return "";
    }));
    for (int r = 0; r < R; ++r) {
        EXPECT_EQ(hashes[r], 2u) << "one agreed hash per stage";
        EXPECT_EQ(staged[r], single[r]) << "replica " << r << ": per-stage rounds differ from the whole-model round";
        EXPECT_EQ(staged_bytes[r], single_bytes[r]);
        EXPECT_EQ(staged_bytes[r], static_cast<uint64_t>(n_params) * 4 * (R - 1));  // P·4 bytes to each peer
    }
    EXPECT_EQ(staged[0], staged[1]);
}

TEST(StageRounds, NamesTheStageWhereAReplicaStartsFromOtherWeights) {
    const RunConfig c = two_stage_diloco();
    const int R = 2;
    auto ctx = std::make_shared<zmq::context_t>();
    std::vector<std::string> errors(R);
    testing_support::on_threads(R, [&](int r) -> std::string {
        std::vector<std::string> eps{"inproc://stage-rounds-c0", "inproc://stage-rounds-c1"};
        auto mesh = ZmqCollective::create(ctx, eps, r, 20000).value();
        auto t = testing_support::synthetic_trainer(c, r, R);
        if (r == 1) {  // the final norm belongs to the last stage
            torch::NoGradGuard no_grad;
            for (auto& p : t.model()->named_parameters())
                if (p.key() == "norm_f") p.value().add_(1e-3);
        }
        auto rounds = StageRounds::create(c, r, 0, 1, t.model()->parameters(), names_of(t), *mesh, torch::Tensor());
        if (!rounds) return errors[r] = rounds.message();
        Status st = (*rounds)->check_weights("replica-" + std::to_string(r));
        return errors[r] = st.is_ok() ? "" : st.message();
    });
    for (int r = 0; r < R; ++r)
        EXPECT_NE(errors[r].find("stage 1: replica"), std::string::npos) << errors[r];
    EXPECT_NE(errors[0].find("starts from other weights than replica-0"), std::string::npos) << errors[0];
}

}  // namespace
}  // namespace tw
