// A node's data root: the one folder a run configured from outside may read and write. Paths in a
// configure (corpus, cache, shards, checkpoints) are relative to it and must resolve under it: an
// absolute path, or one that leaves the root through ".." or a symbolic link, is refused with an
// error naming the key and the path. Torch-free; used by the node server at configure and by the
// coordinator (`thinwire run --data-root`) before it starts any node.
//
// Ownership: these functions hold no state; a RunConfig passed in is rewritten in place.
#pragma once

#include <string>

#include "core/config.h"
#include "core/status.h"

namespace tw {

// The default data root of every command (`run`, `train`, `node`, the workbench, ...):
// $THINWIRE_DATA_ROOT when set (relative to the working directory when relative), else the user's
// cache folder as the XDG Base Directory rules name it, $XDG_CACHE_HOME/thinwire when
// XDG_CACHE_HOME is an absolute path, else $HOME/.cache/thinwire (the password database's home
// when HOME is unset), so runs work from any directory. Not created here; an error when no home is known.
Result<std::string> default_data_root();

// `given` (or default_data_root() when empty) made absolute and canonical; created (0700) when missing.
Result<std::string> resolve_node_data_root(const std::string& given);

// The keys of a RunConfig that name a file or folder the engine reads or writes (every file the
// engine touches for a run is one of them or under data.cache_dir): data.corpus (unless the
// keyword "brown", the built-in corpus under data.cache_dir), data.cache_dir, data.train_shard,
// data.val_shard and train.ckpt_path. Empty optional paths name nothing.

// Node side. Rewrites every path of `cfg` that names a file or folder to an absolute path under
// `root` (absolute and canonical, as resolve_node_data_root returns it), refusing what would leave
// it: an absolute path, an empty data.cache_dir, and a relative path that at any step of its
// resolution (each ".." and every symbolic link, which must exist) is outside the root. The
// rewritten paths hold no "..", "." or symbolic link in their existing part, so the engine opens
// exactly what was checked. Errors name the key and the path as given, not what a link points to.
Status confine_paths(RunConfig& cfg, const std::string& root);

// Coordinator side, on the operator's own layout: an absolute path under `root` becomes relative
// to it (so every node resolves it under its own root); a relative path is kept as written. Every
// path is then checked as confine_paths would on a node sharing this root, so a bad path is
// refused before any node starts. Errors name the key, the path and the root.
Status relative_to_root(RunConfig& cfg, const std::string& root);

}  // namespace tw
