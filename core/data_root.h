// A node's data root: the one folder a run configured from outside may read and write. Paths in a
// configure (corpus, cache, shards, checkpoints) are relative to it and must resolve under it: an
// absolute path, or one that leaves the root through ".." or a symbolic link, is refused with an
// error naming the key and the path. Torch-free; used by the node server at configure.
#pragma once

#include <string>

#include "core/config.h"
#include "core/status.h"

namespace tw {

// The default data root of `thinwire node`: its cache folder, relative to the working directory.
inline constexpr const char* kDefaultDataRoot = ".cache/thinwire";

// `given` (or kDefaultDataRoot when empty) made absolute and canonical; created (0700) when missing.
Result<std::string> resolve_node_data_root(const std::string& given);

// Rewrites every path of `cfg` that names a file or folder to an absolute path under `root`
// (absolute and canonical, as resolve_node_data_root returns it), refusing what would leave it.
Status confine_paths(RunConfig& cfg, const std::string& root);

}  // namespace tw
