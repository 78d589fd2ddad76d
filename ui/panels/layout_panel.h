// Layout editor: the run layout as fields (replicas and their nodes, the outer algorithm and its
// knobs, the cluster, the network's link classes), validated as `thinwire run` validates the TOML,
// each error shown next to its field; load and save the same TOML the CLI runs.
#pragma once

#include "ui/logic/layout_model.h"
#include "ui/view_state.h"

namespace tw::ui {

struct LayoutPanel {
    LayoutModel model;
    char path[512] = "experiments/diloco_threads.toml";
    int nodes_available = -1;  // from the nodes panel's remote endpoints; −1 = let the cluster decide

    void draw(ViewState& v);
};

}  // namespace tw::ui
