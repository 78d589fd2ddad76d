// SkipPipe scheduling (core/skippipe.h): path rules, the checker, and randomised schedules re-checked
// here independently of check_schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "core/config_io.h"
#include "core/pipeline_schedule.h"
#include "core/routing.h"
#include "core/skippipe.h"

namespace tw {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

SkipPipeProblem uniform_problem(int S, int N, int L, int m, int memory, double f = 1.0, double b = 2.0) {
    SkipPipeProblem p;
    p.stages = S;
    p.replicas = N;
    p.path_stages = L;
    p.micro_batches = m;
    p.memory_per_node = memory;
    p.fwd_s.assign(S, f);
    p.bwd_s.assign(S, b);
    return p;
}

// ---- path rules ------------------------------------------------------------------------------------

TEST(SkipPipe, ValidateNamesEveryProblemAtOnce) {
    EXPECT_EQ(validate(uniform_problem(4, 2, 3, 4, 4)), "");
    SkipPipeProblem p = uniform_problem(4, 0, 7, 0, 0);
    p.fwd_s.pop_back();
    p.bwd_s[1] = -1;
    p.head_fraction = 1.5;
    p.max_swaps = -1;
    const std::string v = validate(p);
    for (const char* part : {"path_stages 7 exceeds stages 4", "replicas 0 is below 1", "micro_batches 0 is below 1",
                             "memory_per_node 0 is below 1", "fwd_s has 3 entries, stages is 4",
                             "bwd_s[1] -1 is negative", "head_fraction 1.5 is outside [0, 1]", "max_swaps -1"})
        EXPECT_TRUE(contains(v, part)) << part << " in\n" << v;
    EXPECT_FALSE(schedule_skippipe(p, 1));
    EXPECT_EQ(schedule_skippipe(p, 1).message(), v);
    EXPECT_FALSE(schedule_full_pipeline(p));
}

TEST(SkipPipe, PathsOfFourStagesByHand) {
    using P = std::vector<std::vector<int>>;
    EXPECT_EQ(skip_paths(4, 3, 2), (P{{0, 1, 2}, {0, 1, 3}, {0, 2, 1}, {0, 2, 3}, {0, 3, 2}}));
    EXPECT_EQ(skip_paths(4, 3, 0), (P{{0, 1, 2}, {0, 1, 3}, {0, 2, 3}}));
    // 0→2→3→1 and 0→3→1→2 step back by two: never; 0→3→2→1 takes two swaps.
    EXPECT_EQ(skip_paths(4, 4, 2), (P{{0, 1, 2, 3}, {0, 1, 3, 2}, {0, 2, 1, 3}, {0, 3, 2, 1}}));
    EXPECT_EQ(skip_paths(4, 4, 1), (P{{0, 1, 2, 3}, {0, 1, 3, 2}, {0, 2, 1, 3}}));
    EXPECT_EQ(skip_paths(2, 2, 2), (P{{0, 1}}));
    EXPECT_EQ(skip_paths(6, 4, 0).size(), 10u);  // C(5, 3) increasing paths
}

// ---- an independent re-check of a schedule -----------------------------------------------------------

double fwd_of(const SkipPipeProblem& p, int s) { return s == 0 ? (1 - p.head_fraction) * p.fwd_s[0] : p.fwd_s[s]; }
double bwd_of(const SkipPipeProblem& p, int s) { return s == 0 ? (1 - p.head_fraction) * p.bwd_s[0] : p.bwd_s[s]; }

void recheck(const SkipPipeProblem& p, const SkipSchedule& sched, const std::string& where) {
    SCOPED_TRACE(where);
    const int S = p.stages, N = p.replicas, m = p.micro_batches;
    ASSERT_EQ(sched.paths.size(), static_cast<size_t>(N * m));
    std::set<std::pair<int, int>> ids;
    struct Op {
        double a, b;
    };
    std::vector<std::vector<Op>> ops(S * N);
    std::vector<std::vector<Op>> holds(S * N);
    double last = 0;
    const double tol = 1e-9;
    for (const SkipPath& path : sched.paths) {
        ids.insert({path.replica, path.micro_batch});
        const auto& v = path.visits;
        ASSERT_EQ(static_cast<int>(v.size()), p.path_stages);
        EXPECT_EQ(v[0].stage, 0);
        EXPECT_EQ(v[0].node, path.replica);
        std::set<int> stages;
        int swaps = 0;
        for (size_t i = 0; i < v.size(); ++i) {
            stages.insert(v[i].stage);
            EXPECT_TRUE(v[i].node >= 0 && v[i].node < N);
            if (i > 0 && v[i].stage <= v[i - 1].stage) {
                EXPECT_EQ(v[i].stage, v[i - 1].stage - 1) << "a non-increasing move must be exactly -1";
                ++swaps;
            }
            EXPECT_NEAR(v[i].fwd_end_s - v[i].fwd_start_s, fwd_of(p, v[i].stage), tol);
            EXPECT_NEAR(v[i].bwd_end_s - v[i].bwd_start_s, bwd_of(p, v[i].stage), tol);
            EXPECT_GE(v[i].fwd_start_s, i == 0 ? 0.0 : v[i - 1].fwd_end_s + p.transfer_s - tol);
            const double grad = i + 1 == v.size() ? path.head_end_s : v[i + 1].bwd_end_s;
            EXPECT_GE(v[i].bwd_start_s, grad + p.transfer_s - tol);
            ops[v[i].stage * N + v[i].node].push_back({v[i].fwd_start_s, v[i].fwd_end_s});
            ops[v[i].stage * N + v[i].node].push_back({v[i].bwd_start_s, v[i].bwd_end_s});
            holds[v[i].stage * N + v[i].node].push_back({v[i].fwd_start_s, v[i].bwd_end_s});
            last = std::max(last, v[i].bwd_end_s);
        }
        EXPECT_EQ(static_cast<int>(stages.size()), p.path_stages) << "stages must be distinct";
        EXPECT_LE(swaps, p.max_swaps);
        EXPECT_GE(path.head_start_s, v.back().fwd_end_s + p.transfer_s - tol);
        EXPECT_NEAR(path.head_end_s - path.head_start_s, p.head_fraction * (p.fwd_s[0] + p.bwd_s[0]), tol);
        ops[path.replica].push_back({path.head_start_s, path.head_end_s});
    }
    EXPECT_EQ(ids.size(), static_cast<size_t>(N * m));
    EXPECT_NEAR(sched.makespan_s, last, tol);
    int peak = 0;
    for (int k = 0; k < S * N; ++k) {
        // No two ops of positive length overlap: pairwise, quadratic on purpose.
        for (size_t i = 0; i < ops[k].size(); ++i)
            for (size_t j = i + 1; j < ops[k].size(); ++j) {
                const Op &x = ops[k][i], &y = ops[k][j];
                if (x.b <= x.a || y.b <= y.a) continue;
                EXPECT_LE(std::min(x.b, y.b) - std::max(x.a, y.a), tol)
                    << "node " << k << ": [" << x.a << ", " << x.b << "] and [" << y.a << ", " << y.b << "]";
            }
        // Held count at every hold start (where it can rise), holds half-open.
        for (const Op& at : holds[k]) {
            int held = 0;
            for (const Op& h : holds[k]) held += h.a <= at.a && at.a < h.b;
            EXPECT_LE(held, p.memory_per_node) << "node " << k << " at " << at.a;
            peak = std::max(peak, held);
        }
    }
    EXPECT_EQ(sched.max_held, peak);
}

double uni(uint64_t& rng, double lo, double hi) { return lo + (hi - lo) * (splitmix64(rng) >> 11) * 0x1.0p-53; }
int pick(uint64_t& rng, int lo, int hi) { return lo + static_cast<int>(uniform_below(rng, hi - lo + 1)); }

TEST(SkipPipe, RandomInstancesGiveValidSchedules) {
    uint64_t rng = 2502199;
    int shorter = 0, skipping = 0, instances = 0;
    for (int trial = 0; trial < 240; ++trial) {
        SkipPipeProblem p;
        p.stages = pick(rng, 2, 8);
        p.replicas = pick(rng, 1, 4);
        p.path_stages = pick(rng, 2, p.stages);
        p.max_swaps = pick(rng, 0, 2);
        p.micro_batches = pick(rng, 1, 8);
        p.memory_per_node = pick(rng, 1, p.micro_batches);
        for (int s = 0; s < p.stages; ++s) {
            p.fwd_s.push_back(uni(rng, 0.2, 2.0));
            p.bwd_s.push_back(p.fwd_s.back() * uni(rng, 1.0, 3.0));
        }
        p.transfer_s = trial % 3 == 0 ? 0.0 : uni(rng, 0.0, 1.0);
        p.head_fraction = trial % 4 == 0 ? 0.0 : uni(rng, 0.0, 0.6);
        const std::string where = "trial " + std::to_string(trial) + ": S " + std::to_string(p.stages) + " N " +
                                  std::to_string(p.replicas) + " L " + std::to_string(p.path_stages) + " m " +
                                  std::to_string(p.micro_batches) + " memory " + std::to_string(p.memory_per_node);
        auto sched = schedule_skippipe(p, static_cast<uint64_t>(trial));
        ASSERT_TRUE(sched) << sched.message();
        EXPECT_EQ(check_schedule(p, *sched), "") << where;
        recheck(p, *sched, where);
        auto full = schedule_full_pipeline(p);
        ASSERT_TRUE(full);
        SkipPipeProblem full_p = p;  // the baseline's paths are full length
        full_p.path_stages = p.stages;
        EXPECT_EQ(check_schedule(full_p, *full), "") << where;
        recheck(full_p, *full, where + " (full pipeline)");
        ++instances;
        if (p.path_stages < p.stages) ++skipping, shorter += sched->makespan_s < full->makespan_s;
    }
    EXPECT_EQ(instances, 240);
    // Not a guarantee per instance (random times, tight memory), but skipping must nearly always pay
    // (136 of these 137 skipping instances when written).
    EXPECT_GT(skipping, 100);
    EXPECT_GE(shorter, skipping * 9 / 10);
}

TEST(SkipPipe, SameSeedSameScheduleAndTheSeedMatters) {
    SkipPipeProblem p = uniform_problem(6, 3, 4, 6, 3);
    const SkipSchedule a = schedule_skippipe(p, 7).value(), b = schedule_skippipe(p, 7).value();
    ASSERT_EQ(a.paths.size(), b.paths.size());
    bool any_diff = false;
    for (size_t i = 0; i < a.paths.size(); ++i)
        for (size_t k = 0; k < a.paths[i].visits.size(); ++k) {
            EXPECT_EQ(a.paths[i].visits[k].stage, b.paths[i].visits[k].stage);
            EXPECT_EQ(a.paths[i].visits[k].node, b.paths[i].visits[k].node);
            EXPECT_EQ(a.paths[i].visits[k].fwd_start_s, b.paths[i].visits[k].fwd_start_s);
        }
    for (uint64_t seed = 8; seed < 16 && !any_diff; ++seed) {
        const SkipSchedule c = schedule_skippipe(p, seed).value();
        for (size_t i = 0; i < a.paths.size(); ++i)
            for (size_t k = 0; k < a.paths[i].visits.size(); ++k)
                any_diff |= a.paths[i].visits[k].stage != c.paths[i].visits[k].stage ||
                            a.paths[i].visits[k].node != c.paths[i].visits[k].node;
    }
    EXPECT_TRUE(any_diff) << "the seed should steer tie-breaks";
}

// ---- the checker catches each violation ---------------------------------------------------------------

TEST(SkipPipe, CheckerNamesEachViolatedConstraint) {
    // Two micro-batches on one 2-stage replica, full pipeline: valid to start from.
    SkipPipeProblem p = uniform_problem(2, 1, 2, 2, 2);
    const SkipSchedule good = schedule_full_pipeline(p).value();
    ASSERT_EQ(check_schedule(p, good), "");
    auto broken = [&](auto&& edit) {
        SkipSchedule s = good;
        edit(s);
        return check_schedule(p, s);
    };
    EXPECT_TRUE(contains(broken([](SkipSchedule& s) { s.paths.pop_back(); }), "paths:"));
    EXPECT_TRUE(contains(broken([](SkipSchedule& s) { s.paths[1].micro_batch = 0; }), "paths:"));
    EXPECT_TRUE(contains(broken([](SkipSchedule& s) { s.paths[0].visits.pop_back(); }), "path (replica 0"));
    EXPECT_TRUE(contains(broken([](SkipSchedule& s) { std::swap(s.paths[0].visits[0], s.paths[0].visits[1]); }),
                         "starts at stage 1, not 0"));
    EXPECT_TRUE(contains(broken([](SkipSchedule& s) { s.paths[0].visits[1].node = 3; }), "does not exist"));
    EXPECT_TRUE(contains(broken([](SkipSchedule& s) { s.paths[0].visits[1].stage = 0; }), "visits stage 0 twice"));
    EXPECT_TRUE(contains(broken([](SkipSchedule& s) { s.paths[0].visits[0].fwd_end_s += 0.5; }), "duration:"));
    EXPECT_TRUE(contains(broken([](SkipSchedule& s) {
                             auto& v = s.paths[0].visits[1];
                             v.fwd_start_s -= 0.5, v.fwd_end_s -= 0.5;
                         }),
                         "order:"));
    // Both micro-batches at the same times on the same nodes: dependencies hold, ops collide.
    EXPECT_TRUE(contains(broken([](SkipSchedule& s) {
                             s.paths[1].visits = s.paths[0].visits;
                             s.paths[1].head_start_s = s.paths[0].head_start_s;
                             s.paths[1].head_end_s = s.paths[0].head_end_s;
                         }),
                         "collision: node (0, 0)"));
    EXPECT_TRUE(contains(broken([](SkipSchedule& s) { s.max_held = 1; }), "max_held:"));
    EXPECT_TRUE(contains(broken([](SkipSchedule& s) { s.makespan_s += 1; }), "makespan:"));
    // The same GPipe schedule holds both micro-batches at once: too much for one slot.
    SkipPipeProblem tight = p;
    tight.memory_per_node = 1;
    EXPECT_TRUE(contains(check_schedule(tight, good), "memory: node (0, 0) holds 2 micro-batches"))
        << check_schedule(tight, good);
    // Path rules need longer paths: a step back by two, and a third swap.
    SkipPipeProblem q = uniform_problem(6, 1, 4, 1, 1);
    q.max_swaps = 1;
    SkipSchedule s = schedule_skippipe(q, 0).value();
    ASSERT_EQ(check_schedule(q, s), "");
    SkipSchedule back2 = s;
    for (auto [k, st] : {std::pair{1, 3}, std::pair{2, 1}, std::pair{3, 4}}) back2.paths[0].visits[k].stage = st;
    EXPECT_TRUE(contains(check_schedule(q, back2), "steps back from stage 3 to 1")) << check_schedule(q, back2);
    SkipSchedule swaps = s;
    for (auto [k, st] : {std::pair{1, 2}, std::pair{2, 1}, std::pair{3, 5}}) swaps.paths[0].visits[k].stage = st;
    swaps.paths[0].visits.push_back(swaps.paths[0].visits.back());
    swaps.paths[0].visits[4].stage = 4;
    q.path_stages = 5;
    EXPECT_TRUE(contains(check_schedule(q, swaps), "2 swaps exceed max_swaps 1")) << check_schedule(q, swaps);
    // A problem that does not validate is reported as such.
    SkipPipeProblem bad = p;
    bad.path_stages = 3;
    EXPECT_TRUE(contains(check_schedule(bad, good), "problem: path_stages 3 exceeds stages 2"));
}

// ---- the full pipeline and the comparison --------------------------------------------------------------

TEST(SkipPipe, FullPipelineEqualsGPipeWhenMemoryAllowsAllMicroBatches) {
    uint64_t rng = 99;
    for (int trial = 0; trial < 40; ++trial) {
        const int S = pick(rng, 2, 7), m = pick(rng, 1, 8), N = pick(rng, 1, 3);
        SkipPipeProblem p = uniform_problem(S, N, S, m, m + pick(rng, 0, 2));
        for (int s = 0; s < S; ++s) p.fwd_s[s] = uni(rng, 0.2, 2), p.bwd_s[s] = uni(rng, 0.2, 4);
        p.transfer_s = trial % 2 ? uni(rng, 0, 1) : 0.0;
        const SkipSchedule full = schedule_full_pipeline(p).value();
        // The head is a zero-cost last stage on the stage-0 node; with h = 0 it never competes there.
        std::vector<double> f = p.fwd_s, b = p.bwd_s;
        f.push_back(0), b.push_back(0);
        const std::vector<double> tr(S, p.transfer_s);
        const PipeTiming g = simulate_pipeline(PipeSchedule::kGPipe, m, f, b, tr, tr);
        EXPECT_NEAR(full.makespan_s, g.makespan_s, 1e-9) << "trial " << trial;
        EXPECT_EQ(full.max_held, m);
        if (p.transfer_s == 0) {
            const std::vector<double> zero(S - 1, 0.0);
            EXPECT_NEAR(full.makespan_s,
                        simulate_pipeline(PipeSchedule::kGPipe, m, p.fwd_s, p.bwd_s, zero, zero).makespan_s, 1e-9);
        }
    }
    // And the textbook figure for uniform times: (m + S − 1)·(f + b).
    EXPECT_DOUBLE_EQ(schedule_full_pipeline(uniform_problem(4, 1, 4, 6, 6)).value().makespan_s, 9 * 3.0);
}

TEST(SkipPipe, FullPipelineRunsInWavesWhenMemoryIsShort) {
    // m = 7, memory 3: waves of 3, 3, 1, each a GPipe of its own: Σ (w + S − 1)·(f + b).
    const SkipSchedule full = schedule_full_pipeline(uniform_problem(4, 2, 4, 7, 3)).value();
    EXPECT_DOUBLE_EQ(full.makespan_s, ((3 + 3) + (3 + 3) + (1 + 3)) * 3.0);
    EXPECT_EQ(full.max_held, 3);
}

TEST(SkipPipe, GreedyOnTheFullPathMatchesGPipeOnUniformTimes) {
    // L = S with no swaps leaves one path and (N = 1) one node per stage: the greedy fills the
    // pipeline as 1F1B does and reaches the same (m + S − 1)·(f + b).
    for (int S = 2; S <= 6; ++S)
        for (int m = 1; m <= 6; ++m) {
            SkipPipeProblem p = uniform_problem(S, 1, S, m, m);
            p.max_swaps = 0;
            EXPECT_NEAR(schedule_skippipe(p, 3).value().makespan_s, (m + S - 1) * 3.0, 1e-9) << "S " << S << " m " << m;
        }
}

TEST(SkipPipe, SkippingStagesShortensTheIterationOnUniformTimes) {
    for (auto [S, N, L, m] : {std::tuple{4, 1, 3, 4}, std::tuple{6, 2, 4, 6}, std::tuple{8, 4, 4, 8},
                              std::tuple{6, 3, 3, 4}, std::tuple{5, 2, 2, 8}}) {
        for (int memory : {m, (m + 1) / 2}) {
            const SkipPipeProblem p = uniform_problem(S, N, L, m, memory);
            const double skip = schedule_skippipe(p, 1).value().makespan_s;
            const double full = schedule_full_pipeline(p).value().makespan_s;
            EXPECT_LT(skip, full) << "S " << S << " N " << N << " L " << L << " m " << m << " memory " << memory;
        }
    }
}

TEST(SkipPipe, OneMemorySlotOnOneReplicaSerialisesMicroBatches) {
    // Node (0, 0) holds every micro-batch from its first forward to its last backward, so with one
    // slot they run one after another: m times one path's 2·L ops and 2·L hops.
    SkipPipeProblem p = uniform_problem(5, 1, 3, 4, 1);
    p.transfer_s = 0.25;
    const SkipSchedule s = schedule_skippipe(p, 0).value();
    EXPECT_EQ(check_schedule(p, s), "");
    EXPECT_NEAR(s.makespan_s, 4 * (3 * (1.0 + 2.0) + 6 * 0.25), 1e-9);
    EXPECT_EQ(s.max_held, 1);
}

TEST(SkipPipe, HeadFractionSplitsStageZeroAcrossItsTwoVisits) {
    SkipPipeProblem p = uniform_problem(3, 1, 2, 1, 1);
    p.fwd_s[0] = 2.0, p.bwd_s[0] = 4.0;
    p.head_fraction = 0.25;
    const SkipSchedule s = schedule_skippipe(p, 0).value();
    const SkipPath& path = s.paths[0];
    EXPECT_DOUBLE_EQ(path.visits[0].fwd_end_s - path.visits[0].fwd_start_s, 1.5);
    EXPECT_DOUBLE_EQ(path.visits[0].bwd_end_s - path.visits[0].bwd_start_s, 3.0);
    EXPECT_DOUBLE_EQ(path.head_end_s - path.head_start_s, 1.5);  // 0.25·(2 + 4)
    // 1.5 (embed) + 1 (stage 1 or 2) + 1.5 (head) + 2 (back) + 3 (embed back): stage 0 costs 6 in all.
    EXPECT_DOUBLE_EQ(s.makespan_s, 9.0);
}

// ---- per-stage times ---------------------------------------------------------------------------------

// 6 layers on 4 stages: blocks {2, 2, 1, 1}. Block 1 ms + 2 ms, head op 4 ms + 8 ms:
//   fwd = 2·1 + 4, 2·1, 1, 1 = 6, 2, 1, 1 ms     bwd = 2·2 + 8, 2·2, 2, 2 = 12, 4, 2, 2 ms
//   head_fraction = (4 + 8) / (6 + 12) = 2/3.
TEST(SkipStageTimes, BlocksTimesBlockPlusHeadOnStageZeroByHand) {
    const SkipStageTimes st = skip_stage_times({1e-3, 2e-3}, {4e-3, 8e-3}, {2, 2, 1, 1});
    ASSERT_EQ(st.fwd_s.size(), 4u);
    ASSERT_EQ(st.bwd_s.size(), 4u);
    const double fwd[] = {6e-3, 2e-3, 1e-3, 1e-3}, bwd[] = {12e-3, 4e-3, 2e-3, 2e-3};
    for (size_t s = 0; s < 4; ++s) {
        EXPECT_NEAR(st.fwd_s[s], fwd[s], 1e-15) << "stage " << s;
        EXPECT_NEAR(st.bwd_s[s], bwd[s], 1e-15) << "stage " << s;
    }
    EXPECT_NEAR(st.head_fraction, 2.0 / 3.0, 1e-12);
    EXPECT_EQ(st.block.fwd_s, 1e-3);
    EXPECT_EQ(st.head.bwd_s, 8e-3);
    // stages of equal size get exactly equal times, bit for bit
    EXPECT_EQ(st.fwd_s[2], st.fwd_s[3]);
    EXPECT_EQ(st.bwd_s[2], st.bwd_s[3]);
}

// experiments/skippipe.toml: tiny (4 layers) on 4 stages, block_s = [1.93e-3, 3.13e-3],
// head_s = [4.34e-3, 7.25e-3]. Stage 0: 1.93 + 4.34 = 6.27 ms forward, 3.13 + 7.25 = 10.38 ms backward;
// the others one block each; head share (4.34 + 7.25) / (6.27 + 10.38) = 11.59 / 16.65 = 0.69610…
// (the command prints "stages fwd 6.27 1.93 1.93 1.93, bwd 10.38 3.13 3.13 3.13; head share 0.70").
TEST(SkipStageTimes, ExperimentFilesPinnedTimes) {
    const SkipStageTimes st = skip_stage_times({1.93e-3, 3.13e-3}, {4.34e-3, 7.25e-3}, {1, 1, 1, 1});
    const double fwd[] = {6.27e-3, 1.93e-3, 1.93e-3, 1.93e-3}, bwd[] = {10.38e-3, 3.13e-3, 3.13e-3, 3.13e-3};
    for (size_t s = 0; s < 4; ++s) {
        EXPECT_NEAR(st.fwd_s[s], fwd[s], 1e-15) << "stage " << s;
        EXPECT_NEAR(st.bwd_s[s], bwd[s], 1e-15) << "stage " << s;
    }
    EXPECT_NEAR(st.head_fraction, 11.59 / 16.65, 1e-12);
    EXPECT_NEAR(st.head_fraction, 0.6961, 1e-4);
}

// A free head op gives head_fraction 0 and leaves every stage at its blocks' time.
TEST(SkipStageTimes, FreeHeadGivesZeroHeadFraction) {
    const SkipStageTimes st = skip_stage_times({0.5, 1.5}, {0, 0}, {3, 1});
    EXPECT_EQ(st.fwd_s, (std::vector<double>{1.5, 0.5}));
    EXPECT_EQ(st.bwd_s, (std::vector<double>{4.5, 1.5}));
    EXPECT_EQ(st.head_fraction, 0.0);
}


// ---- the [skippipe] section and the node form's clock ---------------------------------------------

const char* kSkipToml =
    "[model]\nn_layer = 4\n[train]\nbatch_size = 8\n[skippipe]\nstages = 4\nreplicas = 2\nmicro_batches = 4\n"
    "block_s = [1.93e-3, 3.13e-3]\nhead_s = [4.34e-3, 7.25e-3]\n";

TEST(SkipPipeConfig, SectionParsesResolvesDefaultsAndRoundTrips) {
    auto c = parse_config(kSkipToml, "sp.toml");
    ASSERT_TRUE(c) << c.message();
    const SkipPipeConfig& k = c->skippipe;
    EXPECT_TRUE(k.enabled());
    EXPECT_EQ(k.path_stages, 3);      // max(2, S − 1)
    EXPECT_EQ(k.memory_per_node, 4);  // m
    EXPECT_EQ(k.eval_paths, (std::vector<std::vector<int64_t>>{{0, 2}, {0, 1}}));
    EXPECT_EQ(k.block_s, (std::vector<double>{1.93e-3, 3.13e-3}));
    // The resolved TOML holds the section and reads back to the same config and hash.
    const std::string text = to_toml(*c);
    EXPECT_TRUE(contains(text, "[skippipe]")) << text;
    auto again = parse_config(text, "resolved");
    ASSERT_TRUE(again) << again.message();
    EXPECT_EQ(to_toml(*again), text);
    auto other = parse_config(kSkipToml, "sp.toml", {"skippipe.full=true"});
    ASSERT_TRUE(other) << other.message();
    EXPECT_TRUE(other->skippipe.full);
    EXPECT_NE(config_hash(*other), config_hash(*c));  // hashed like every key
    // The in-order full path and repeats are dropped from eval_paths (the full model is val.loss).
    auto paths = parse_config(kSkipToml, "sp.toml", {"skippipe.eval_paths=[[0, 1, 2, 3], [0, 3], [0, 3]]"});
    ASSERT_TRUE(paths) << paths.message();
    EXPECT_EQ(paths->skippipe.eval_paths, (std::vector<std::vector<int64_t>>{{0, 3}}));
    // Off by default: no section, no SkipPipe.
    EXPECT_FALSE(unwrap(parse_config("", "<default>")).skippipe.enabled());
}

TEST(SkipPipeConfig, ErrorsNameTheKey) {
    auto expect_error = [](std::vector<std::string> sets, const std::string& part) {
        auto c = parse_config(kSkipToml, "sp.toml", sets);
        ASSERT_FALSE(c) << "accepted " << sets[0];
        EXPECT_TRUE(contains(c.message(), part)) << c.message();
    };
    expect_error({"skippipe.path_stages=7"}, "skippipe.path_stages 7 exceeds stages 4");
    expect_error({"skippipe.stages=6"}, "skippipe.stages 6 exceeds model.n_layer 4");
    expect_error({"skippipe.stages=1"}, "skippipe.stages 1");
    expect_error({"skippipe.micro_batches=3"}, "skippipe.micro_batches 3 does not divide train.batch_size 8");
    expect_error({"skippipe.block_s=[1e-3]"}, "skippipe.block_s: expected [forward_s, backward_s]");
    expect_error({"skippipe.head_s=[1e-3, -2]"}, "skippipe.head_s: value -2 is out of range");
    expect_error({"skippipe.block_s=[\"fast\"]"}, "skippipe.block_s: expected an array of numbers");
    expect_error({"skippipe.eval_paths=[[1, 2]]"}, "skippipe.eval_paths[0]: a path starts at stage 0");
    expect_error({"skippipe.eval_paths=[[0, 0]]"}, "skippipe.eval_paths[0]");
    expect_error({"skippipe.eval_paths=[0, 1]"}, "skippipe.eval_paths: expected an array of integer arrays");
    expect_error({"skippipe.head_fraction=-0.5"}, "skippipe.head_fraction");
    expect_error({"skippipe.max_swaps=-1"}, "skippipe.max_swaps: value -1 is out of range");
    expect_error({"outer.algorithm=diloco"}, "a SkipPipe run syncs its stages itself");
    expect_error({"cluster.stages=2"}, "cluster.stages and cluster.nodes_per_replica must be 1");
    expect_error({"skippipe.stagez=2"}, "skippipe.stagez: unknown key");
}

TEST(SkipPipeConfig, StageParametersAndBlocksFollowTheSplit) {
    EXPECT_EQ(skip_blocks_per_stage(6, 4), (std::vector<int64_t>{2, 2, 1, 1}));
    EXPECT_EQ(skip_blocks_per_stage(4, 4), (std::vector<int64_t>{1, 1, 1, 1}));
    ModelConfig m;  // tiny: d 128, 4 layers, d_ff 352
    m.vocab_size = 4096;
    const int64_t block = 2 * 128 + 4 * 128 * 128 + 3 * 352 * 128;  // norms, wqkv + wo, w13 + w2
    const auto p = skip_stage_parameters(m, 4);
    EXPECT_EQ(p, (std::vector<int64_t>{block + 4096 * 128 + 128, block, block, block}));
    EXPECT_EQ(p[0] + p[1] + p[2] + p[3], 1328256);  // the tiny model's count (README)
    m.tie_embeddings = false;
    EXPECT_EQ(skip_stage_parameters(m, 2)[0], 2 * block + 2 * 4096 * 128 + 128);
}

TEST(SkipPipeTiming, StepClockIsTheMakespanPlusTheStageSyncByHand) {
    auto c = parse_config(kSkipToml, "sp.toml");
    ASSERT_TRUE(c) << c.message();
    c->model.vocab_size = 4096;
    const NetworkProfile net = unwrap(network_profile(c->network));  // wan-1g: stage 1 Gb/s 20 ms; intra 100 Gb/s 10 µs
    auto t = SkipPipeTiming::create(*c, net, {1.93e-3, 3.13e-3}, {4.34e-3, 7.25e-3});
    ASSERT_TRUE(t) << t.message();
    EXPECT_EQ(t->activation_bytes(), 2u * 128 * 128 * 4);
    EXPECT_DOUBLE_EQ(t->problem().transfer_s, 0.02 + 8.0 * 131072 / 1e9);
    const auto P = skip_stage_parameters(c->model, 4);
    EXPECT_EQ(t->stage_sync_bytes(0), 4u * static_cast<uint64_t>(P[0]));  // (N − 1)·4·P_s with N = 2
    std::vector<double> clocks = unwrap(skippipe_clocks(*c, net, {1.93e-3, 3.13e-3}, {4.34e-3, 7.25e-3}, 3));
    double clock = 0;
    for (int64_t s = 0; s < 3; ++s) {
        auto st = t->step(s);
        ASSERT_TRUE(st) << st.message();
        EXPECT_EQ(st->schedule.makespan_s, unwrap(schedule_skippipe(t->problem(), 1337 + static_cast<uint64_t>(s))).makespan_s);
        EXPECT_EQ(st->iter_s, st->schedule.makespan_s);
        // Stage 0 is always visited and is the largest stage: its all-gather bounds the sync.
        const double sync = net.intra.latency_s + 8.0 * 4 * static_cast<double>(P[0]) / net.intra.bandwidth_bps +
                            net.stage.latency_s + 8.0 * 8 * 3 / net.stage.bandwidth_bps;
        EXPECT_NEAR(st->sync_s, sync, 1e-15);
        clock += st->iter_s + st->sync_s;
        EXPECT_EQ(clocks[static_cast<size_t>(s)], clock);  // the replay is the live rule, bit for bit
    }
    // The full-pipeline variant trains on GPipe's schedule, keeping the SkipPipe one as the reference.
    c->skippipe.full = true;
    auto full = SkipPipeTiming::create(*c, net, {1.93e-3, 3.13e-3}, {4.34e-3, 7.25e-3});
    auto fs = full->step(0);
    EXPECT_EQ(fs->iter_s, full->full_schedule().makespan_s);
    EXPECT_EQ(fs->skip.makespan_s, unwrap(t->step(0)).iter_s);
    for (const SkipPath& p : fs->schedule.paths) EXPECT_EQ(p.visits.size(), 4u);
}

}  // namespace
}  // namespace tw
