// History's Resume button: shown for runs that can go on from their checkpoints
// (interrupted or failed: `thinwire run --resume`), enabled while no other run of this workbench is
// in progress. Pure logic, no ImGui, so tests/ui checks it without a window.
#pragma once

#include <string>

#include "core/metrics.h"

namespace tw::ui {

struct ResumeButton {
    bool shown = false;
    bool enabled = false;
    std::string hint;  // the tooltip: what the button does, or why it is disabled
};

// `status` is the run's as the store shows it (a run whose coordinator is gone is interrupted
// there, storage/run_liveness.h); `session_busy`: this workbench's session has not ended.
ResumeButton resume_button(RunStatus status, bool session_busy);

}  // namespace tw::ui
