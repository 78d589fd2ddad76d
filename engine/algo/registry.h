// The engine's side of the algorithm registry (core/algorithm.h names them): one row per
// algorithm with its construction, the checks that need the built replica (parameter count,
// names, replica index) and its planned round cost. make_outer_algorithm (outer.h) and the planner
// (engine/plan/round_cost.h) go through this table only.
//
// The built-in algorithms' rows are listed in registry.cpp, pointing at functions in each
// algorithm's own files. Another algorithm registers its row from its own file (linked into the
// binary that runs it), at static initialisation, after its core row (docs/adding_a_method.md):
//     const Algorithm kMine = register_algorithm(mine_traits());
//     [[maybe_unused]] const Algorithm kMineEngine =
//         register_outer_algorithm({kMine, mine_problems, make_mine, plan_mine_rounds});
// A row for an id core does not know, a second row for an id, or a row whose construction does not
// match its traits (an outer algorithm the engine cannot build, or a construction for an algorithm
// the worker runs itself) aborts the program at registration with a message naming it.
//
// Thread-safety: rows are added only while static objects are initialised (before main, on one
// thread); after that the table is read-only and every function here is thread-safe. A row never
// moves once added.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/algorithm.h"
#include "engine/algo/outer.h"
#include "engine/plan/round_cost.h"

namespace tw {

// Appends every problem of `b.cfg` for this algorithm, each naming the key and the reason.
using OuterProblems = void (*)(const OuterBuild& b, std::vector<std::string>& problems);
// Builds the algorithm; called only when the common and the algorithm's own checks found nothing.
using OuterMake = Result<std::unique_ptr<OuterAlgorithm>> (*)(OuterBuild b);

struct OuterRegistration {
    Algorithm id = Algorithm::kNone;
    OuterProblems problems = nullptr;  // nullptr = no checks of its own
    // Present exactly when the traits say outer_rounds: nullptr for the algorithms the worker runs
    // itself, none (no sync) and DDP (the replica worker's Gloo all-reduce inside the step,
    // engine/algo/ddp.h).
    OuterMake make = nullptr;
    // Its rounds for the planner (engine/plan/round_cost.h). nullptr: `thinwire plan` refuses a
    // layout of this algorithm, naming it.
    PlanRounds plan_rounds = nullptr;
};

// Adds `row` for an algorithm core's table has (register_algorithm returned row.id) and returns
// that id. Call it from a static initialiser only (see above); aborts on a malformed row.
Algorithm register_outer_algorithm(OuterRegistration row);

// Every row: the built-in algorithms' in enum order, then the registered ones in registration order.
const std::deque<OuterRegistration>& outer_registry();
// The row of `a`; nullptr for an algorithm of core's table that registered none.
const OuterRegistration* outer_registration(Algorithm a);

}  // namespace tw
