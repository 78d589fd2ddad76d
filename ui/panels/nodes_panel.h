// Nodes panel: the nodes of the running session (state, heartbeat age, version, threads, role,
// step, throughput), nodes found by endpoint (a hello in the background), and nodes spawned
// locally with one click; found or spawned nodes can become the layout's remote cluster.
#pragma once

#include <future>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "remote/coordinator.h"
#include "ui/logic/layout_model.h"
#include "ui/run_driver.h"
#include "ui/view_state.h"

namespace tw::ui {

struct NodesPanel {
    struct Probe {
        std::string endpoint;
        std::future<Result<NodeInfo>> pending;  // hello in flight
        std::optional<NodeInfo> info;
        std::string error;
    };
    char endpoint[256] = "tcp://127.0.0.1:5555";
    int spawn_count = 2;
    std::vector<Probe> probes;
    std::map<std::string, std::pair<int64_t, double>> last_seen;  // node → (step, time) for steps/s
    std::map<std::string, double> steps_per_s;

    void draw(ViewState& v, RunDriver& driver, LayoutModel& layout);

private:
    void add_probe(const std::string& ep);
    void draw_session_nodes(const ViewState& v);
    void draw_probes(LayoutModel& layout);
};

}  // namespace tw::ui
