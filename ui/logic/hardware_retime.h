// The what-if on hardware: a finished run's stored compute seconds re-timed for
// another hardware profile and efficiency, before the timeline replay (core/timeline.h) re-times
// its communication. Loss per step does not depend on how fast a node computes, so only the clocks
// change — except where the run's training itself depended on its compute times, which is refused.
//
//   recorded under compute.model = "flops": every compute second is FLOPs / rate, so it becomes
//     seconds × (recorded rate / new rate) of its replica (node speeds kept);
//   recorded under "measured": each segment's FLOPs come from the compute model over the run's
//     model shapes — the same ComputeTime the flops clock uses — divided by the new rate, so the
//     result is what a flops run of the layout on that hardware records. Whole-model steps and
//     pipeline stage segments (in core/pipeline_program.h's event order) are covered.
// Refused, naming why: time-budgeted rounds (outer.round_time_s: the steps per round follow the
// rate), SkipPipe (its scheduler's paths follow the stage times), HDEE recorded under measured (each
// expert's width is its own config), a stored config without a resolved vocabulary, and a trace
// whose segments do not match the schedule.
//
// Pure: no I/O. Thread-safe (no shared state). Units: seconds, FLOP/s.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"
#include "core/status.h"
#include "core/timeline.h"

namespace tw::ui {

struct HardwareWhatIf {
    std::string hardware;   // a profile of core/compute_model.h: cpu-here | rtx4090 | a100 | h100 | custom
    double efficiency = 0;  // share of the peak, (0, 1]; 0 = the profile's
    double peak_flops = 0;  // FLOP/s; 0 = the profile's (custom: required)
};

// The [compute] section a run of `cfg` would have had on `hw`: model "flops", `hw`'s hardware,
// efficiency and peak, and the run's own node speeds (empty for a run recorded under measured,
// which has none).
ComputeConfig what_if_compute(const RunConfig& cfg, const HardwareWhatIf& hw);

// Checks `hw` against `cfg` as `thinwire run` would check that [compute] section (core/compute_model.h
// validate_compute): unknown profile, custom without a peak, a rate below 1 FLOP/s.
Status check_hardware_what_if(const RunConfig& cfg, const HardwareWhatIf& hw);

// `nodes` (a finished run's traces under its resolved config `cfg`) with every compute second
// re-timed for `hw` as the header comment says; messages, rounds and bytes unchanged.
Result<std::vector<TraceNode>> retime_compute(const RunConfig& cfg, const std::vector<TraceNode>& nodes,
                                              const HardwareWhatIf& hw);

// One sentence on how `retime_compute` re-times `cfg`'s compute for `hw`, for the panel: the rate
// ratio of a flops run, or a measured run's FLOPs per step and the new rate. Assumes a valid `hw`.
std::string describe_compute_what_if(const RunConfig& cfg, const HardwareWhatIf& hw);

}  // namespace tw::ui
