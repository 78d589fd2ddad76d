// `thinwire runs retime RUN --network PROFILE [--rounds]`: a stored run's simulated timeline replayed
// on another network (storage/run_traces.h: the same clock the nodes advanced live, every run kind;
// on the recorded network it reproduces the recorded clocks exactly), or a clear refusal naming the
// run kind when the run cannot be replayed.
#pragma once

#include <cstdint>
#include <string>

#include "storage/run_store.h"

namespace CLI { class App; }

namespace tw::cli {

struct RetimeArgs {
    int64_t id = 0;
    std::string network;
    double outer_bandwidth_bps = 0, outer_latency_s = 0;  // > 0: replace the outer link's
    bool rounds = false;                                  // also every round's clock, %.17g
};

void add_retime_options(CLI::App* rt, RetimeArgs& a);
int run_retime(RunStore& store, const RetimeArgs& a);

}  // namespace tw::cli
