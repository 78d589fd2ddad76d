// Nodes panel: the nodes of the running session (state, heartbeat age, version, threads, role,
// step, throughput; a node that joined a relay shown by its key and the relay's port for it),
// nodes found by endpoint or by key through the layout's relay (a hello in the background,
// remote/node_probe.h), and nodes spawned locally with one click; found or spawned nodes can
// become the layout's remote cluster.
#pragma once

#include <future>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "remote/coordinator.h"
#include "remote/node_probe.h"
#include "ui/logic/layout_model.h"
#include "ui/run_driver.h"
#include "ui/view_state.h"

namespace tw::ui {

struct NodesPanel {
    struct Probe {
        std::string endpoint;                     // as typed: an endpoint or "key:K"
        std::future<Result<ProbedNode>> pending;  // hello in flight
        std::optional<ProbedNode> info;
        std::string error;
    };
    char endpoint[256] = "tcp://127.0.0.1:5555";
    int spawn_count = 2;
    std::vector<Probe> probes;
    std::map<std::string, std::pair<int64_t, double>> last_seen;  // node → (step, time) for steps/s
    std::map<std::string, double> steps_per_s;

    void draw(ViewState& v, RunDriver& driver, LayoutModel& layout);

private:
    void add_probe(const std::string& ep, const ClusterConfig& cluster);
    void draw_session_nodes(const ViewState& v);
    void draw_probes(LayoutModel& layout);
};

}  // namespace tw::ui
