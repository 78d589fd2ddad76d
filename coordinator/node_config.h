// The run's config as its nodes receive it (configure): none of the coordinator's own key material
// (the nodes get their peers' keys in their roles) and nothing of where the coordinator found the
// nodes named by key, only that they were ("joined"). Pure; torch-free.
#pragma once

#include "core/config.h"

namespace tw {

RunConfig without_keys(RunConfig cfg);

}  // namespace tw
