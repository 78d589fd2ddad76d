// Where this process's executable lies, for the executables that start their siblings: `thinwire`
// execs thinwire-engine, a run starts its child-process nodes from its own executable, the
// workbench starts `thinwire`. Linux: /proc/self/exe.
#pragma once

#include <string>

#include "core/status.h"

namespace tw::cli {

// The absolute path of this process's executable; an error names the reason it cannot be read.
Result<std::string> this_executable();

// `name` in this executable's folder (whether it exists or not).
Result<std::string> beside_this_executable(const std::string& name);

}  // namespace tw::cli
