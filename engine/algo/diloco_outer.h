// DiLoCo (Douillard et al., arXiv 2311.08105), docs/methods.md §2, as an OuterAlgorithm: fp32/bf16 on
// the wire run the DiLoCo class (diloco.h) every H steps; int8/fp4 run Streaming DiLoCo with one
// fragment, τ = 0, α = 0, which is exactly DiLoCo with the codec applied per tensor. Its registry
// row (registry.cpp) points at the three functions below.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/algo/outer.h"
#include "engine/plan/round_cost.h"

namespace tw {

// outer.dtype must be one of the wire dtypes (core/wire_dtype.h).
void diloco_problems(const OuterBuild& b, std::vector<std::string>& problems);
Result<std::unique_ptr<OuterAlgorithm>> make_diloco(OuterBuild b);
// Its planned rounds (engine/plan/round_cost.h): the dense exchange every H steps, in one segment
// (fp32, bf16) or per tensor (int8, fp4: the one-fragment Streaming DiLoCo's).
Result<std::unique_ptr<RoundCostModel>> plan_diloco_rounds(const RunConfig& cfg);

}  // namespace tw
