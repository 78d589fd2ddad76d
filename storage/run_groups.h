// A group of runs by the name the user knows it by (`report --group`, `runs compare --group`): the
// group as stored ("dp_compare@1795463535"), or a layout's name alone ("dp_compare"), which stands
// for its latest launch (the group of the newest run whose group starts with "NAME@").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "storage/run_store.h"

namespace tw {

// The ids of the group's runs, oldest first. An error naming the store (`db_label`) and the groups
// it has when there is no such group.
Result<std::vector<int64_t>> runs_in_group(RunStore& store, const std::string& group, const std::string& db_label);

}  // namespace tw
