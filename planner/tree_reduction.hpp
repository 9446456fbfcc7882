// Fewer trees: each tree costs a thread-block group and a pipeline at run time. merge_identical_trees folds trees
// with the same root, direction, phase and edges into one (fractions add).
#pragma once

#include <vector>

#include "planner/plan.hpp"

namespace canopy {

std::vector<Tree> merge_identical_trees(std::vector<Tree> trees);

}  // namespace canopy
