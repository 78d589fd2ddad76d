// Writing a file the user named (exports, reports) without losing what was there: the content goes
// to a temporary file beside the target and is moved into place only once it is complete, so a
// failed export never touches the target, and an existing target is replaced only when the caller
// was told to (`--force`). Torch-free; thread-safe (no shared state).
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "core/status.h"

namespace tw {

enum class Overwrite { kRefuse, kReplace };

// Calls `write` with a stream on `path`.tmp-<pid>-<n> in the target's directory; when it returns ok
// and the stream is good, moves the file to `path`. With kRefuse an existing `path` is an error
// before anything is written ("FILE exists; --force replaces it"), and the move itself refuses a
// file that appeared meanwhile (link(2), not rename(2)). On any failure the temporary file is
// removed and `path` is as it was.
Status write_output_file(const std::string& path, Overwrite overwrite,
                         const std::function<Status(std::ostream&)>& write);

}  // namespace tw
