// The coordinator's side of an HDEE run (docs/hdee.md): once every expert node has finished, its
// scores (remote/protocol.h "scores", collected by coordinator/store_sink.h) are checked against
// the run and combined per ensemble with core/hdee_mixture.h's rules — plain arithmetic, no
// LibTorch — then stored as the run's hdee.* metrics (core/hdee_plan.h names them) and printed as
// tables. Pure functions; the session (coordinator/run_session.cpp) calls them from its thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/hdee_mixture.h"
#include "core/hdee_plan.h"
#include "core/status.h"

namespace tw {

struct HdeeResults {
    std::vector<HdeeEnsemble> plan;          // [kHdeeEnsembles], steps after match_budget
    std::vector<HdeeEvaluation> ensembles;   // [kHdeeEnsembles]: prior and per-domain figures
    std::vector<HdeeSetShape> sets;          // [D] windows and documents of each domain's two parts
    std::vector<double> unigram;             // [D] nats/token, from the homogeneous expert of the domain
    std::vector<int64_t> train_tokens;       // [D] the domain's training tokens, from the same node
    int64_t seq_len = 0;
};

// Combines the scores of every expert of `cfg` (resolved, model.vocab_size the run's), keyed by node
// name. Fails naming the node when an expert sent none, or scores that do not fit the run
// (check_scores) or that cover other windows than the first expert's (same_windows).
Result<HdeeResults> combine_hdee(const RunConfig& cfg, const std::map<std::string, ExpertScores>& scores);

// The figures as (metric name, value), in a fixed order (core/hdee_plan.h lists the names).
std::vector<std::pair<std::string, double>> hdee_metrics(const RunConfig& cfg, const HdeeResults& r);

// The tables the CLI prints: per domain, every ensemble's two rules and its best single expert;
// then how often each heterogeneous ensemble beats the homogeneous one; the plan and the priors.
std::string hdee_tables(const RunConfig& cfg, const HdeeResults& r);

}  // namespace tw
