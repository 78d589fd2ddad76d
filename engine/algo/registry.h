// The engine's side of the algorithm registry (core/algorithm.h names them): one row per
// algorithm with its construction and the checks that need the built replica (parameter count,
// names, replica index). make_outer_algorithm (outer.h) goes through this table only, so adding a
// method is one row here plus its own files (README "Adding a method").
//
// The table is immutable; every function is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/algorithm.h"
#include "engine/algo/outer.h"

namespace tw {

// Appends every problem of `b.cfg` for this algorithm, each naming the key and the reason.
using OuterProblems = void (*)(const OuterBuild& b, std::vector<std::string>& problems);
// Builds the algorithm; called only when the common and the algorithm's own checks found nothing.
using OuterMake = Result<std::unique_ptr<OuterAlgorithm>> (*)(OuterBuild b);

struct OuterRegistration {
    Algorithm id;
    OuterProblems problems;  // nullptr = no checks of its own
    // nullptr for the algorithms the worker runs itself: none (no sync) and DDP (the replica
    // worker's Gloo all-reduce inside the step, engine/algo/ddp.h).
    OuterMake make;
};

// Every algorithm of core/algorithm.h's table, in enum order.
const std::vector<OuterRegistration>& outer_registry();
const OuterRegistration& outer_registration(Algorithm a);

}  // namespace tw
