// The workbench's RunDriver: the CLI's Session (the coordinator on its own thread) behind the
// interface ui/ sees, plus `thinwire node` processes spawned from the Nodes panel.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/engine_node.h"
#include "coordinator/run_session.h"
#include "remote/cluster.h"
#include "ui/run_driver.h"

namespace tw::cli {

class SessionDriver : public ui::RunDriver {
public:
    // `thinwire_exe` runs spawned nodes and local-cluster children. `data_root` (absolute,
    // canonical: coordinator_data_root) is where runs and the nodes this driver starts read and write.
    SessionDriver(std::string db_path, std::string thinwire_exe, std::string data_root);
    ~SessionDriver() override;  // stops a running session (marked interrupted) and spawned nodes

    Status start(const RunConfig& cfg) override;
    void pause() override;
    void resume() override;
    void stop() override;
    Status continue_run(int64_t id) override;
    ui::DriverSnapshot snapshot() override;
    Result<std::vector<std::string>> spawn_processes(int n) override;
    Result<ui::LayoutPlan> plan(const RunConfig& cfg) const override;  // app/layout_plan.h

private:
    std::string db_path_, exe_, data_root_;
    std::unique_ptr<Session> session_;
    std::vector<std::unique_ptr<LocalCluster>> spawned_;
};

// The `thinwire` binary next to this one (build/release/app/thinwire beside thinwire-workbench).
std::string sibling_thinwire_exe();

}  // namespace tw::cli
