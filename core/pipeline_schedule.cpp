// GPipe and 1F1B op orders and their simulated time; see pipeline_schedule.h.
#include "core/pipeline_schedule.h"

#include <algorithm>

#include "core/assert.h"

namespace tw {

Result<PipeSchedule> parse_pipe_schedule(const std::string& s) {
    if (s == "gpipe") return PipeSchedule::kGPipe;
    if (s == "1f1b") return PipeSchedule::k1F1B;
    return Result<PipeSchedule>::error("pipeline schedule \"" + s + "\" is unknown (expected \"gpipe\" or \"1f1b\")");
}

const char* to_string(PipeSchedule s) {
    switch (s) {
        case PipeSchedule::kGPipe:
            return "gpipe";
        case PipeSchedule::k1F1B:
            return "1f1b";
    }
    return "unknown";
}

std::vector<PipeOp> stage_ops(PipeSchedule schedule, int stage, int stages, int micro_batches) {
    TW_ASSERT(stages >= 1 && stage >= 0 && stage < stages && micro_batches >= 1);
    const int m = micro_batches;
    std::vector<PipeOp> ops;
    ops.reserve(static_cast<size_t>(2 * m));
    auto fwd = [&](int j) { ops.push_back({PipeOpKind::kForward, j}); };
    auto bwd = [&](int j) { ops.push_back({PipeOpKind::kBackward, j}); };
    if (schedule == PipeSchedule::kGPipe) {
        for (int j = 0; j < m; ++j) fwd(j);
        for (int j = m - 1; j >= 0; --j) bwd(j);
        return ops;
    }
    const int warmup = std::min(stages - 1 - stage, m);
    for (int j = 0; j < warmup; ++j) fwd(j);
    for (int i = 0; i < m - warmup; ++i) {
        fwd(warmup + i);
        bwd(i);
    }
    for (int j = m - warmup; j < m; ++j) bwd(j);
    return ops;
}

PipeTiming simulate_pipeline(PipeSchedule schedule, int micro_batches, const std::vector<double>& fwd_s,
                             const std::vector<double>& bwd_s, const std::vector<double>& fwd_transfer_s,
                             const std::vector<double>& bwd_transfer_s) {
    const int S = static_cast<int>(fwd_s.size());
    const int m = micro_batches;
    TW_ASSERT(S >= 1 && m >= 1);
    TW_ASSERT(bwd_s.size() == fwd_s.size());
    TW_ASSERT(static_cast<int>(fwd_transfer_s.size()) == S - 1 && static_cast<int>(bwd_transfer_s.size()) == S - 1);

    std::vector<std::vector<PipeOp>> ops(static_cast<size_t>(S));
    for (int s = 0; s < S; ++s) ops[s] = stage_ops(schedule, s, S, m);

    // End times per (stage, micro-batch); negative = not simulated yet. Ops are taken in each
    // stage's own order whenever their input is known, so the sweep below is a topological order of
    // the dependency graph (stage order edges + activation/gradient edges).
    std::vector<std::vector<double>> f_end(S, std::vector<double>(m, -1.0)), b_end = f_end;
    PipeTiming t;
    t.op_times.assign(S, std::vector<std::pair<double, double>>(static_cast<size_t>(2 * m)));
    std::vector<size_t> next(S, 0);
    std::vector<double> free_at(S, 0.0);
    size_t remaining = static_cast<size_t>(2 * m * S);
    while (remaining > 0) {
        bool progress = false;
        for (int s = 0; s < S; ++s) {
            while (next[s] < ops[s].size()) {
                const PipeOp op = ops[s][next[s]];
                const int j = op.micro_batch;
                double ready = 0;
                if (op.kind == PipeOpKind::kForward) {
                    if (s > 0) {
                        if (f_end[s - 1][j] < 0) break;
                        ready = f_end[s - 1][j] + fwd_transfer_s[s - 1];
                    }
                } else {
                    if (f_end[s][j] < 0) break;
                    ready = f_end[s][j];
                    if (s < S - 1) {
                        if (b_end[s + 1][j] < 0) break;
                        ready = std::max(ready, b_end[s + 1][j] + bwd_transfer_s[s]);
                    }
                }
                const double start = std::max(free_at[s], ready);
                const double end = start + (op.kind == PipeOpKind::kForward ? fwd_s[s] : bwd_s[s]);
                (op.kind == PipeOpKind::kForward ? f_end : b_end)[s][j] = end;
                t.op_times[s][next[s]] = {start, end};
                free_at[s] = end;
                ++next[s];
                --remaining;
                progress = true;
            }
        }
        TW_ASSERT(progress && "both schedules are deadlock-free");
    }

    t.busy_s.assign(S, 0.0);
    t.idle_s.assign(S, 0.0);
    double busy_total = 0;
    for (int s = 0; s < S; ++s) {
        t.makespan_s = std::max(t.makespan_s, free_at[s]);
        t.busy_s[s] = m * (fwd_s[s] + bwd_s[s]);
        busy_total += t.busy_s[s];
    }
    for (int s = 0; s < S; ++s) t.idle_s[s] = t.makespan_s - t.busy_s[s];
    t.utilisation = t.makespan_s > 0 ? busy_total / (S * t.makespan_s) : 0.0;
    return t;
}

}  // namespace tw
