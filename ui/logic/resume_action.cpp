// History's Resume button; see resume_action.h.
#include "ui/logic/resume_action.h"

namespace tw::ui {

ResumeButton resume_button(RunStatus status, bool session_busy) {
    ResumeButton b;
    // Running runs are live and finished ones complete: only the others have a next step.
    b.shown = status == RunStatus::kInterrupted || status == RunStatus::kFailed;
    if (!b.shown) return b;
    b.enabled = !session_busy;
    b.hint = session_busy ? "a run of this workbench is in progress; stop it first"
                          : "continue this run from the latest step every node checkpointed (train.ckpt_every), "
                            "with its stored layout, as `thinwire run --resume`";
    return b;
}

}  // namespace tw::ui
