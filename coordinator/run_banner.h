// The lines a run opens with on the terminal: what runs (the algorithm or the run kind, replicas,
// nodes, threads, steps) and, for a resumed run, where it goes on from. Pure text from the resolved
// config and a few facts of the session; the CLI prints it (run_session.h's `announce`).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"

namespace tw {

struct RunBannerFacts {
    int64_t run_id = 0;
    int nodes = 0;             // nodes brought up
    bool resumed = false;      // thinwire run --resume
    int64_t resume_step = -1;  // the common checkpoint step a resumed run goes on from; −1 = none
    // A resumed run whose nodes go on from steps of their own (HDEE experts, time-budgeted rounds):
    // `node_steps` holds each node's step (−1: starts over), in role order.
    bool own_steps = false;
    bool independent = false;  // the nodes are HDEE experts (each from its own latest checkpoint)
    std::vector<std::pair<std::string, int64_t>> node_steps;
};

std::vector<std::string> run_banner(const RunConfig& cfg, const RunBannerFacts& f);

}  // namespace tw
