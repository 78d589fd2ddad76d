// The settings put side by side for several runs: one rule for `thinwire runs compare`,
// `thinwire report` and the workbench's History. Torch-free, pure.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/algorithm.h"

namespace tw {

// The keys that define a method's outer algorithm (its row's defining_keys, core/algorithm.h),
// shown for every run of it whether or not they differ (e.g. Streaming DiLoCo's fragments and wire
// dtype: FP4 or not; SparseLoCo's top-k; NoLoCo's group size). Empty for none and DDP, which have
// no outer algorithm of their own.
const std::vector<std::string>& defining_keys(Algorithm a);

// A stored config's dotted key → value text, as this build's TOML writer writes it (floats in their
// shortest round-trip form), when the text parses; as stored otherwise (a config of another build).
std::map<std::string, std::string> stored_key_values(const std::string& resolved_toml);

struct SettingsDiff {
    std::vector<std::string> keys;                // the rows, in order
    std::vector<std::vector<std::string>> cells;  // [row][run]: the value as a reader writes it
                                                  // (strings unquoted), "n/a" where the run's
                                                  // algorithm does not read the key, "-" where the
                                                  // run's config lacks it
};

// The rows for `configs` (config_key_values maps, one per run): outer.algorithm and the defining
// keys of the runs' algorithms first (always, in the algorithms' order of appearance), then every
// other key whose value differs between the runs it applies to, in key order. run.name is never a
// row; a key no run's algorithm reads (an outer learning rate when every run is DDP) is never one.
SettingsDiff settings_that_differ(const std::vector<std::map<std::string, std::string>>& configs);

}  // namespace tw
