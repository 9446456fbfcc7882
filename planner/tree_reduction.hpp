// Fewer trees: each tree costs a thread-block group and a pipeline at run time.
//  - merge_identical_trees folds trees with the same root, direction, phase and edges into one (fractions add);
//  - merge_trees replaces each group of trees with one root, direction and phase by a single breadth-first tree
//    of their total fraction -- all at once, else two at a time -- wherever the links' spare budget allows, so
//    the predicted algbw never drops (greedy merging, as Blink reduces its tree count).
#pragma once

#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "planner/plan.hpp"

namespace canopy {

std::vector<Tree> merge_identical_trees(std::vector<Tree> trees);

std::vector<Tree> merge_trees(const Topology& topology, const std::vector<std::string>& ranks, std::vector<Tree> trees);

}  // namespace canopy
