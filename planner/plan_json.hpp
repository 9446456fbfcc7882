// Plan <-> JSON, exactly the plan format of docs/planner.md (`canopy plan --json`, CANOPY_PLAN_FILE). Reading reports
// every malformed field as a canopy::Error naming the input and the JSON path (e.g. trees[3].edges[0].to).
#pragma once

#include <string>
#include <string_view>

#include "planner/plan.hpp"

namespace canopy {

std::string plan_to_json(const Plan& plan);
Plan plan_from_json(std::string_view text, std::string_view origin);

}  // namespace canopy
