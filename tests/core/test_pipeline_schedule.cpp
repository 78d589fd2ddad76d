// GPipe and 1F1B op orders and their simulated time (core/pipeline_schedule.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/pipeline_schedule.h"
#include "core/routing.h"

namespace tw {
namespace {

// "F0 F1 B0" → ops; the hand-written orders below read like the papers' figures.
std::vector<PipeOp> ops_of(const std::string& text) {
    std::vector<PipeOp> ops;
    size_t i = 0;
    while (i < text.size()) {
        if (text[i] == ' ') {
            ++i;
            continue;
        }
        const PipeOpKind kind = text[i] == 'F' ? PipeOpKind::kForward : PipeOpKind::kBackward;
        size_t end = text.find(' ', i);
        if (end == std::string::npos) end = text.size();
        ops.push_back({kind, std::stoi(text.substr(i + 1, end - i - 1))});
        i = end;
    }
    return ops;
}

std::string text_of(const std::vector<PipeOp>& ops) {
    std::string s;
    for (const PipeOp& op : ops)
        s += (s.empty() ? "" : " ") + std::string(op.kind == PipeOpKind::kForward ? "F" : "B") +
             std::to_string(op.micro_batch);
    return s;
}

TEST(PipelineSchedule, ParsesNamesAndNamesTheBadValue) {
    EXPECT_EQ(parse_pipe_schedule("gpipe").value(), PipeSchedule::kGPipe);
    EXPECT_EQ(parse_pipe_schedule("1f1b").value(), PipeSchedule::k1F1B);
    EXPECT_STREQ(to_string(PipeSchedule::kGPipe), "gpipe");
    EXPECT_STREQ(to_string(PipeSchedule::k1F1B), "1f1b");
    auto bad = parse_pipe_schedule("interleaved");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.message().find("\"interleaved\""), std::string::npos) << bad.message();
    EXPECT_NE(bad.message().find("\"1f1b\""), std::string::npos) << bad.message();
}

TEST(PipelineSchedule, GPipeOrderForFourStagesSixMicroBatchesByHand) {
    const std::string expected = "F0 F1 F2 F3 F4 F5 B5 B4 B3 B2 B1 B0";
    for (int s = 0; s < 4; ++s) EXPECT_EQ(text_of(stage_ops(PipeSchedule::kGPipe, s, 4, 6)), expected) << "stage " << s;
}

TEST(PipelineSchedule, OneFOneBOrderForFourStagesSixMicroBatchesByHand) {
    EXPECT_EQ(text_of(stage_ops(PipeSchedule::k1F1B, 0, 4, 6)), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
    EXPECT_EQ(text_of(stage_ops(PipeSchedule::k1F1B, 1, 4, 6)), "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5");
    EXPECT_EQ(text_of(stage_ops(PipeSchedule::k1F1B, 2, 4, 6)), "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5");
    EXPECT_EQ(text_of(stage_ops(PipeSchedule::k1F1B, 3, 4, 6)), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
    // Fewer micro-batches than warm-up slots: stage 0 of 4 with m = 2 only warms up.
    EXPECT_EQ(stage_ops(PipeSchedule::k1F1B, 0, 4, 2).size(), 4u);
    EXPECT_EQ(text_of(stage_ops(PipeSchedule::k1F1B, 0, 4, 2)), text_of(ops_of("F0 F1 B0 B1")));
}

TEST(PipelineSchedule, EveryStageRunsEachForwardOnceBeforeItsBackwardOnce) {
    for (PipeSchedule sched : {PipeSchedule::kGPipe, PipeSchedule::k1F1B})
        for (int S = 1; S <= 6; ++S)
            for (int m = 1; m <= 9; ++m)
                for (int s = 0; s < S; ++s) {
                    const auto ops = stage_ops(sched, s, S, m);
                    ASSERT_EQ(ops.size(), static_cast<size_t>(2 * m));
                    std::vector<int> fwd_at(m, -1), bwd_at(m, -1);
                    for (size_t i = 0; i < ops.size(); ++i) {
                        auto& at = ops[i].kind == PipeOpKind::kForward ? fwd_at : bwd_at;
                        ASSERT_EQ(at[ops[i].micro_batch], -1) << "twice: " << text_of(ops);
                        at[ops[i].micro_batch] = static_cast<int>(i);
                    }
                    for (int j = 0; j < m; ++j) EXPECT_LT(fwd_at[j], bwd_at[j]) << text_of(ops);
                }
}

int max_in_flight(const std::vector<PipeOp>& ops) {
    int held = 0, peak = 0;
    for (const PipeOp& op : ops) {
        held += op.kind == PipeOpKind::kForward ? 1 : -1;
        peak = std::max(peak, held);
    }
    return peak;
}

TEST(PipelineSchedule, OneFOneBBoundsMicroBatchesInFlightWhereGPipeHoldsAll) {
    for (int S = 1; S <= 6; ++S)
        for (int m = 1; m <= 9; ++m)
            for (int s = 0; s < S; ++s) {
                EXPECT_EQ(max_in_flight(stage_ops(PipeSchedule::k1F1B, s, S, m)), std::min(S - s, m))
                    << "S " << S << " m " << m << " stage " << s;
                EXPECT_EQ(max_in_flight(stage_ops(PipeSchedule::kGPipe, s, S, m)), m);
            }
}

TEST(PipelineSchedule, UniformTimesGiveTheBubbleFormulaForBothSchedules) {
    for (int S = 1; S <= 6; ++S)
        for (int m = 1; m <= 8; ++m)
            for (auto [f, b] : {std::pair{1.0, 1.0}, std::pair{1.0, 2.0}, std::pair{0.3, 0.7}}) {
                const std::vector<double> fwd(S, f), bwd(S, b), zero(S - 1, 0.0);
                const double makespan = (m + S - 1) * (f + b);
                const double bubble = (S - 1.0) / (m + S - 1.0);
                for (PipeSchedule sched : {PipeSchedule::kGPipe, PipeSchedule::k1F1B}) {
                    const PipeTiming t = simulate_pipeline(sched, m, fwd, bwd, zero, zero);
                    SCOPED_TRACE(std::string(to_string(sched)) + " S " + std::to_string(S) + " m " + std::to_string(m));
                    EXPECT_NEAR(t.makespan_s, makespan, 1e-9);
                    for (int s = 0; s < S; ++s) {
                        EXPECT_NEAR(t.busy_s[s], m * (f + b), 1e-9);
                        EXPECT_NEAR(t.idle_s[s] / t.makespan_s, bubble, 1e-9);
                    }
                    EXPECT_NEAR(t.utilisation, 1.0 - bubble, 1e-9);
                }
            }
}

TEST(PipelineSchedule, TransfersDelayTwoStagesOneMicroBatchByExactlyTheirSum) {
    // F on stage 0 [0, 1]; 0.25 s to stage 1; F there [1.25, 3.25]; B there [3.25, 7.25]; 0.5 s back;
    // B on stage 0 [7.75, 9.75].
    for (PipeSchedule sched : {PipeSchedule::kGPipe, PipeSchedule::k1F1B}) {
        const PipeTiming t = simulate_pipeline(sched, 1, {1.0, 2.0}, {2.0, 4.0}, {0.25}, {0.5});
        EXPECT_DOUBLE_EQ(t.makespan_s, 9.75);
        ASSERT_EQ(t.op_times.size(), 2u);
        EXPECT_DOUBLE_EQ(t.op_times[1][0].first, 1.25);
        EXPECT_DOUBLE_EQ(t.op_times[1][1].second, 7.25);
        EXPECT_DOUBLE_EQ(t.op_times[0][1].first, 7.75);
        EXPECT_DOUBLE_EQ(t.idle_s[0], 9.75 - 3.0);
        EXPECT_DOUBLE_EQ(t.idle_s[1], 9.75 - 6.0);
        const PipeTiming none = simulate_pipeline(sched, 1, {1.0, 2.0}, {2.0, 4.0}, {0.0}, {0.0});
        EXPECT_DOUBLE_EQ(t.makespan_s - none.makespan_s, 0.75);
    }
}

// Independent re-derivation: every op starts exactly when both its stage is free and its input is
// there (as soon as possible, never earlier), for random times and transfers.
TEST(PipelineSchedule, EveryOpStartsAsSoonAsItsStageAndInputAllow) {
    uint64_t rng = 42;
    auto uni = [&](double lo, double hi) { return lo + (hi - lo) * (splitmix64(rng) >> 11) * 0x1.0p-53; };
    for (int trial = 0; trial < 60; ++trial) {
        const int S = 1 + trial % 5, m = 1 + (trial / 5) % 7;
        std::vector<double> f(S), b(S), ft(S - 1), bt(S - 1);
        for (int s = 0; s < S; ++s) f[s] = uni(0.1, 2), b[s] = uni(0.1, 4);
        for (int s = 0; s + 1 < S; ++s) ft[s] = uni(0, 1), bt[s] = uni(0, 1);
        for (PipeSchedule sched : {PipeSchedule::kGPipe, PipeSchedule::k1F1B}) {
            const PipeTiming t = simulate_pipeline(sched, m, f, b, ft, bt);
            std::vector<std::vector<double>> fe(S, std::vector<double>(m)), be = fe;
            for (int s = 0; s < S; ++s) {
                const auto ops = stage_ops(sched, s, S, m);
                for (size_t i = 0; i < ops.size(); ++i)
                    (ops[i].kind == PipeOpKind::kForward ? fe : be)[s][ops[i].micro_batch] = t.op_times[s][i].second;
            }
            double last = 0;
            for (int s = 0; s < S; ++s) {
                const auto ops = stage_ops(sched, s, S, m);
                double free_at = 0;
                for (size_t i = 0; i < ops.size(); ++i) {
                    const int j = ops[i].micro_batch;
                    const bool fwd = ops[i].kind == PipeOpKind::kForward;
                    const double input =
                        fwd ? (s == 0 ? 0 : fe[s - 1][j] + ft[s - 1]) : (s == S - 1 ? fe[s][j] : be[s + 1][j] + bt[s]);
                    EXPECT_DOUBLE_EQ(t.op_times[s][i].first, std::max(free_at, input));
                    EXPECT_NEAR(t.op_times[s][i].second - t.op_times[s][i].first, fwd ? f[s] : b[s], 1e-12);
                    free_at = t.op_times[s][i].second;
                }
                last = std::max(last, free_at);
            }
            EXPECT_DOUBLE_EQ(t.makespan_s, last);
        }
    }
}

TEST(PipelineSchedule, GPipePaysUniformTransfersOncePerBoundaryEachWay) {
    // Forwards stream back to back behind the first one, so each boundary's transfer is exposed once
    // per direction: (m + S − 1)·(f + b) + 2·(S − 1)·t.
    for (int S = 1; S <= 5; ++S)
        for (int m = 1; m <= 8; ++m) {
            const std::vector<double> f(S, 1.0), b(S, 2.0), tr(S - 1, 0.3);
            EXPECT_NEAR(simulate_pipeline(PipeSchedule::kGPipe, m, f, b, tr, tr).makespan_s,
                        (m + S - 1) * 3.0 + 2 * (S - 1) * 0.3, 1e-9)
                << "S " << S << " m " << m;
        }
}

TEST(PipelineSchedule, OneFOneBExposesRoundTripsThatGPipeHides) {
    // S = 2, m = 3, f = 1, b = 2, t = 0.3 by hand. Stage 0 runs F0 F1 B0 F2 B1 B2: F0 [0, 1], F1 [1, 2];
    // stage 1 F0 [1.3, 2.3], B0 [2.3, 4.3]; stage 0 waits for that gradient: B0 [4.6, 6.6], and only
    // then F2 [6.6, 7.6]; stage 1 F1 [4.3, 5.3], B1 [5.3, 7.3]; stage 0 B1 [7.6, 9.6]; stage 1 F2
    // [7.9, 8.9], B2 [8.9, 10.9]; stage 0 B2 [11.2, 13.2]. GPipe: 4·3 + 2·0.3 = 12.6.
    const std::vector<double> f{1.0, 1.0}, b{2.0, 2.0}, tr{0.3};
    const PipeTiming o = simulate_pipeline(PipeSchedule::k1F1B, 3, f, b, tr, tr);
    EXPECT_NEAR(o.makespan_s, 13.2, 1e-12);
    EXPECT_NEAR(o.op_times[0][3].first, 6.6, 1e-12);  // F2 on stage 0 waits for B0
    EXPECT_NEAR(simulate_pipeline(PipeSchedule::kGPipe, 3, f, b, tr, tr).makespan_s, 12.6, 1e-12);
}

}  // namespace
}  // namespace tw
