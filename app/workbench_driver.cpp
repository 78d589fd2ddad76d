// The workbench's RunDriver; see workbench_driver.h.
#include "app/workbench_driver.h"

#include <unistd.h>

#include <ctime>

#include "app/layout_plan.h"
#include "app/self_exe.h"
#include "coordinator/resume_plan.h"
#include "core/config_io.h"
#include "storage/run_store.h"

namespace tw::cli {

std::string sibling_thinwire_exe() {
    auto exe = beside_this_executable("thinwire");
    return exe ? *exe : "./thinwire";
}

SessionDriver::SessionDriver(std::string db_path, std::string thinwire_exe, std::string data_root)
    : db_path_(std::move(db_path)), exe_(std::move(thinwire_exe)), data_root_(std::move(data_root)) {}

SessionDriver::~SessionDriver() {
    session_.reset();  // its destructor stops the run and waits for it
    spawned_.clear();
}

Status SessionDriver::start(const RunConfig& cfg) {
    if (session_ && !session_->snapshot().done) return Status::error("a run is still in progress");
    // The same checks `thinwire run` makes on a file, so the GUI cannot start what the CLI refuses.
    auto checked = parse_config(to_toml(cfg), "layout");
    if (!checked) return checked.status();
    session_.reset();
    session_ = std::make_unique<Session>(*checked, db_path_, "workbench@" + std::to_string(std::time(nullptr)),
                                         engine_hooks(exe_),
                                         data_root_, /*print_progress=*/false);
    return Status::ok();
}

Status SessionDriver::continue_run(int64_t id) {
    if (session_ && !session_->snapshot().done) return Status::error("a run is still in progress");
    auto store = RunStore::open(db_path_);
    if (!store) return store.status();
    auto plan = plan_resume(*store, id, "", {}, data_root_, /*force=*/false);
    if (!plan) return plan.status();
    session_.reset();
    session_ = std::make_unique<Session>(plan->cfg, db_path_, plan->run.group, engine_hooks(exe_), data_root_,
                                         /*print_progress=*/false, id);
    return Status::ok();
}

void SessionDriver::pause() {
    if (session_) session_->pause();
}
void SessionDriver::resume() {
    if (session_) session_->resume();
}
void SessionDriver::stop() {
    if (session_) session_->stop();
}

ui::DriverSnapshot SessionDriver::snapshot() {
    ui::DriverSnapshot d;
    if (!session_) return d;
    SessionSnapshot s = session_->snapshot();
    d.active = true;
    d.done = s.done;
    d.phase = s.phase;
    d.run_id = s.run_id;
    d.status = s.status;
    d.reason = s.reason;
    d.nodes = std::move(s.nodes);
    d.log = std::move(s.log);
    return d;
}

Result<std::vector<std::string>> SessionDriver::spawn_processes(int n) {
    auto c = LocalCluster::start_processes(n, exe_, data_root_);
    if (!c) return c.status();
    std::vector<std::string> eps = (*c)->endpoints();
    spawned_.push_back(std::move(*c));
    return eps;
}

Result<ui::LayoutPlan> SessionDriver::plan(const RunConfig& cfg) const { return plan_layout(cfg); }

}  // namespace tw::cli
