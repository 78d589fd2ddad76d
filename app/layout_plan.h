// The workbench's Plan view behind RunDriver::plan: the layout in the editor planned by the code
// `thinwire plan` runs (engine/plan/planner.h), its Plan copied into ui/layout_plan.h's plain
// values (ui/ links neither the planner's library nor LibTorch). Pure: no I/O; thread-safe.
#pragma once

#include "core/config.h"
#include "core/status.h"
#include "ui/layout_plan.h"

namespace tw::cli {

// As `thinwire plan` does with a layout file: compute.model taken as "flops" (the layout's
// hardware, efficiency and node speeds apply), the same config checks as a file (parse_config),
// model.vocab_size = data.vocab_size when unresolved; then plan_run. The error is the config's
// problems or the planner's refusal, as the CLI prints them.
Result<ui::LayoutPlan> plan_layout(const RunConfig& layout);

}  // namespace tw::cli
