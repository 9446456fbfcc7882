// The plan's trees as the lowering sees them (codegen/lower.hpp): each tree with ranks as indices, checked to span
// the ranks in the direction its collective needs, and weighed into lanes, every tree's integer weight, its share of
// the buffer as splits of kSplitScale and its thread blocks per rank (docs/codegen.md "How a buffer is cut"); and
// which allreduce root lanes fuse. The lanes without their steps are also the launch grid's model
// (codegen/launch_grid.hpp).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "codegen/schedule.hpp"
#include "planner/plan.hpp"

namespace canopy {

// Allgather and reduce-scatter trees own parts of their root's block; the others own parts of the whole buffer.
inline bool cuts_per_root_block(Collective c) { return c == Collective::allgather || c == Collective::reducescatter; }

// One plan tree with participants (ranks, then relays) as indices: parent of each (-1 at the root and for a relay
// outside the tree), children ascending.
struct TreeShape {
  int root = 0;
  std::vector<int> parent;
  std::vector<std::vector<int>> children;
};

// Tree t of `plan` with ranks as indices (`rank_of`: a rank's name to its index), then the `relays`: each
// edge whose path crosses a relay GPU (a key of `relay_participants`, its participants' indices in order) becomes a
// chain through the next unused participant of each GPU it crosses, in path order (other path nodes are switches).
// Throws canopy::Error naming the tree when a name is not a rank, a participant has two parents, a rank none, a
// relay of a reduce-like (in) tree would combine two senders, or the parents cycle.
TreeShape shape_of(const Plan& plan, int t, const std::map<std::string, int>& rank_of,
                   const std::map<std::string, std::vector<int>>& relay_participants = {},
                   const std::vector<RelayParticipant>& relays = {});

// Throws canopy::Error when a tree's direction or root does not fit the plan's collective, its fraction is not in
// (0, 1], or there is no tree.
void check_directions(const Plan& plan);

// s.tree_weights, s.tree_blocks and s.lanes (each tree's lane on every rank: role, parent, children, range, blocks)
// from the plan's fractions and s.options.blocks_per_rank.
void weigh_trees(const Plan& plan, const std::vector<TreeShape>& shapes, Schedule& s);

// lower()'s first pass: the plan and options checked (every canopy::Error lower throws about them), s.plan,
// s.options (placement and pulled edges resolved), s.ranks, the trees' shapes (into `shapes`) and their lanes
// weighed, without counters or steps.
Schedule lay_out_lanes(const Plan& plan, const CodegenOptions& options, std::vector<TreeShape>* shapes);

// Allreduce: the (reducing lane, copying lane) pairs lower() fuses: at a rank that roots exactly one in-tree and one
// out-tree, over the same range with the same blocks, where the out-tree root sends to children (a rank alone has
// none). Lanes by id, in rank order.
std::vector<std::pair<int, int>> fused_root_lanes(const Schedule& s);

}  // namespace canopy
