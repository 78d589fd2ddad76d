// Settings that run but probably do not do what the researcher meant: a run whose last steps are
// never synchronised, or that has no outer round at all, reports a global model that did not see
// that training. Warnings, not errors: a layout may want them (a smoke test of 10 steps). The
// coordinator stores each as a "config" warning event when the run starts (printed by the CLI,
// listed by the workbench and `runs show`). Torch-free; pure.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"

namespace tw {

std::vector<std::string> config_warnings(const RunConfig& cfg);

}  // namespace tw
