// One training iteration of a pipeline stage node, as core/pipeline_program.h's stage_iteration
// lists it for the schedule (GPipe or 1F1B): the forwards and backwards of the m micro-batches
// with their activation and gradient messages, then global gradient-norm clipping over the
// replica's stages (each sends its squared norm, 8 bytes, to the others) and the inner optimizer
// step. Re-timing replays the same list, so the order here is the order of the clock's segments.
//
// Ownership: borrows the node's stage, inner optimizer and reparam writers (the worker owns them
// and outlives this object); owns the training windows it reads. Messages and compute segments go
// through StageIo, which the worker binds to its mesh, clock and metric rows. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "core/config.h"
#include "core/pipeline_program.h"
#include "core/pipeline_schedule.h"
#include "core/status.h"
#include "engine/data/dataset.h"
#include "engine/data/loader.h"
#include "engine/pipeline/reparam.h"
#include "engine/pipeline/stage.h"
#include "engine/train/inner_step.h"

namespace tw {

// The node's side of an iteration: point-to-point messages on the stage link (mesh ranks) and
// compute segments, each at a metrics step. A segment is its compute event (a micro-batch's forward
// or backward, or the optimizer step) with the seconds measured around it; the node returns the
// seconds its clock advanced by (measured or modelled: core/compute_model.h), which the report sums.
struct StageIo {
    std::function<Status(int64_t step, int to, const std::vector<uint8_t>& payload)> send;
    std::function<Result<std::vector<uint8_t>>(int from)> recv;
    std::function<double(int64_t step, const StageEvent& e, double measured_s)> compute;
};

struct StageStepReport {
    double loss = 0;       // mean over micro-batches (last stage; 0 elsewhere)
    double compute_s = 0;  // the iteration's compute segments as the clock counted them, summed
    double grad_norm = 0;  // the replica's global norm before clipping
    double lr = 0;         // the learning rate used
};

class StageExecutor {
public:
    // `replica`'s stage node `stage`; `data` holds the run's training tokens; `project` puts the
    // constrained writers back into their subspace after a step (the `project` constraint).
    StageExecutor(const RunConfig& cfg, int replica, int64_t stage, std::shared_ptr<const PreparedData> data,
                  PipelineStage& stage_model, InnerOptimizer& optim, std::vector<ReparamWriter>& reparam,
                  std::function<void()> project);

    // Iteration `iteration` (0-based; its metrics step is iteration + 1).
    Result<StageStepReport> step(int64_t iteration, const StageIo& io);

private:
    int peer(int replica, int64_t stage) const;
    WindowLoader& loader_of(int replica);             // training windows of a replica's data part
    int origin_replica(int64_t step, int mb) const;  // whose data a micro-batch that reached here is
    Result<std::vector<uint8_t>> run_op(int64_t iteration, const PipeOp& op, std::vector<uint8_t>& in,
                                        torch::Tensor& own, std::map<int, torch::Tensor>& targets, double& loss);
    double grad_norm_sq();  // this stage's squared gradient norm (reparam: of Z), before clipping
    double optimizer_step(int64_t iteration, double grad_norm);  // returns the learning rate used

    const RunConfig cfg_;
    const int replica_;
    const int64_t stage_index_;
    std::shared_ptr<const PreparedData> data_;
    PipelineStage& stage_;
    InnerOptimizer& optim_;
    std::vector<ReparamWriter>& reparam_;
    std::function<void()> project_;
    std::map<int, std::unique_ptr<WindowLoader>> loaders_;  // by replica
};

}  // namespace tw
