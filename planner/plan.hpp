// Plan: what the planner decides, as plain data that round-trips through the plan JSON of docs/planner.md. Nodes are
// named, so a plan can be saved, read back and checked against a topology by another tool.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/collective.hpp"

namespace canopy {

enum class TreeDirection { out, in };  // out: root to leaves (broadcast-like); in: leaves to root, reducing

struct TreeEdge {
  std::string from;               // sends ...
  std::string to;                 // ... to this rank
  std::vector<std::string> path;  // every node crossed, from..to, switches included; empty when direct
  friend bool operator==(const TreeEdge&, const TreeEdge&) = default;
};

struct Tree {
  std::string root;
  TreeDirection direction = TreeDirection::out;
  int phase = 0;         // trees of one phase run concurrently; phases run in order
  double fraction = 0;   // share of the collective's size S crossing every edge of this tree
  std::vector<TreeEdge> edges;  // in data-flow order: a sender appears as `to` (or is the root) before it sends
  friend bool operator==(const Tree&, const Tree&) = default;
};

struct Plan {
  Collective collective = Collective::broadcast;
  std::string topology;
  std::vector<std::string> ranks;  // rank order
  std::optional<std::string> root;  // broadcast and reduce only
  double algbw_gbps = 0;            // predicted from link loads alone
  double bound_algbw_gbps = 0;      // proven upper bound for this collective (see docs/planner.md)
  std::vector<Tree> trees;
  friend bool operator==(const Plan&, const Plan&) = default;
};

std::string to_string(TreeDirection d);

// How an allreduce plan composes its trees (two phases or one), derived from the tree phases; "trees" otherwise.
std::string plan_strategy(const Plan& plan);

}  // namespace canopy
