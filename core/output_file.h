// Writing a file the user named (exports, reports, screenshots) without losing what was there: the
// content goes to a temporary file beside the target and is moved into place only once it is
// complete, so a failed export never touches the target, and an existing target is replaced only
// when the caller was told to (`--force`). The run store is never a target, whatever the flags:
// every writer of an output file checks it with check_output_target first. Torch-free;
// thread-safe (no shared state).
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "core/status.h"

namespace tw {

enum class Overwrite { kRefuse, kReplace };

// Refuses `target` when it is the run store at `store_path` or one of the files SQLite keeps for
// it beside the database (`-wal`, `-shm`, `-journal`): replacing any of them loses the store, and
// SQLite holds them open while the store is. Compared by identity, not by spelling: an existing
// target by device and inode (a relative path, `./`, `..`, a symlink or a hard link are all the
// same file), a target that does not exist yet (a `-journal` SQLite has not made) by the device
// and inode of its folder and its name, following a dangling symlink. The database's own symlinks
// are followed as SQLite follows them (its `-wal` lies beside the real file). The error names both
// paths. `store_path` "" or ":memory:" refuses nothing.
Status check_output_target(const std::string& target, const std::string& store_path);

// Calls `write` with a stream on `path`.tmp-<pid>-<n> in the target's directory; when it returns ok
// and the stream is good, moves the file to `path`. First refuses `path` when it is the run store
// at `store_path` (check_output_target; even with kReplace). With kRefuse an existing `path` is an
// error before anything is written ("FILE exists; --force replaces it"), and the move itself
// refuses a file that appeared meanwhile (link(2), not rename(2)). On any failure the temporary
// file is removed and `path` is as it was.
Status write_output_file(const std::string& path, Overwrite overwrite, const std::string& store_path,
                         const std::function<Status(std::ostream&)>& write);

}  // namespace tw
