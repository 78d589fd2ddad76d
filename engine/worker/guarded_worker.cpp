// Exceptions to error values at the node boundary; see guarded_worker.h.
#include "engine/worker/guarded_worker.h"

#include <c10/util/Exception.h>

namespace tw {
namespace {

class GuardedWorker final : public Worker {
public:
    explicit GuardedWorker(std::unique_ptr<Worker> w) : w_(std::move(w)) {}
    Result<WorkerSummary> run(WorkerControl& ctl, MetricSink& sink) override {
        try {
            return w_->run(ctl, sink);
        } catch (const std::exception& e) {
            return Result<WorkerSummary>::error("worker: " + exception_message(e));
        } catch (...) {
            return Result<WorkerSummary>::error("worker: an exception that is not a std::exception");
        }
    }

private:
    std::unique_ptr<Worker> w_;
};

}  // namespace

std::string exception_message(const std::exception& e) {
    if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return c10->what_without_backtrace();
    return e.what();
}

std::unique_ptr<Worker> guard_worker(std::unique_ptr<Worker> w) { return std::make_unique<GuardedWorker>(std::move(w)); }

WorkerFactory guard_worker_factory(WorkerFactory f) {
    return [f = std::move(f)](const RunConfig& cfg, const NodeRole& role,
                              const NodeSite& site) -> Result<std::unique_ptr<Worker>> {
        try {
            auto w = f(cfg, role, site);
            if (!w) return w;
            return guard_worker(std::move(*w));
        } catch (const std::exception& e) {
            return Status::error(exception_message(e));
        } catch (...) {
            return Status::error("an exception that is not a std::exception");
        }
    };
}

DataPreparer guard_data_preparer(DataPreparer p) {
    return [p = std::move(p)](const RunConfig& cfg, const NodeSite& site) -> Result<DataReport> {
        try {
            return p(cfg, site);
        } catch (const std::exception& e) {
            return Status::error(exception_message(e));
        } catch (...) {
            return Status::error("an exception that is not a std::exception");
        }
    };
}

}  // namespace tw
