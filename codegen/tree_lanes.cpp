// The plan's trees with ranks as indices, their checks, and their weighing into lanes (see tree_lanes.hpp).
#include "codegen/tree_lanes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "codegen/lower.hpp"
#include "core/error.hpp"

namespace canopy {

namespace {

// Integer parts of kSplitScale proportional to `shares` (largest remainder), each at least 1, summing to
// kSplitScale exactly, so every cut is a shift on the GPU.
std::vector<std::int64_t> parts_of_scale(const std::vector<double>& shares) {
  const double total = std::accumulate(shares.begin(), shares.end(), 0.0);
  const std::int64_t n = static_cast<std::int64_t>(shares.size());
  CANOPY_INTERNAL_ASSERT(n >= 1 && n <= kSplitScale && total > 0, "weights for an empty or oversized group");
  std::vector<std::int64_t> parts(n);
  std::vector<std::pair<double, std::int64_t>> remainders;
  std::int64_t used = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const double exact = shares[k] / total * static_cast<double>(kSplitScale - n);  // reserve 1 each
    parts[k] = 1 + static_cast<std::int64_t>(std::floor(exact));
    used += parts[k];
    remainders.push_back({exact - std::floor(exact), k});
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](auto& x, auto& y) { return x.first > y.first; });
  for (std::int64_t k = 0; used < kSplitScale; ++k, ++used) ++parts[remainders[k % n].second];
  return parts;
}

// Whether `node` of e's path is crossed on the way (not the edge's sender or receiver, which the path also lists).
bool crosses(const TreeEdge& e, const std::string& node) { return node != e.from && node != e.to; }

}  // namespace

TreeShape shape_of(const Plan& plan, int t, const std::map<std::string, int>& rank_of,
                   const std::map<std::string, std::vector<int>>& relay_participants,
                   const std::vector<RelayParticipant>& relays) {
  const Tree& tree = plan.trees[t];
  const int n = static_cast<int>(plan.ranks.size());
  const int participants = n + static_cast<int>(relays.size());
  auto name = [&](int r) -> const std::string& { return r < n ? plan.ranks[r] : relays[r - n].name; };
  auto index = [&](const std::string& name, const char* what) {
    const auto it = rank_of.find(name);
    if (it == rank_of.end())
      throw Error(fmt::format("plan tree {} (root {}): {} '{}' is not one of the plan's ranks; code generation "
                              "runs trees over ranks only (plan without --relay)",
                              t, tree.root, what, name));
    return it->second;
  };
  TreeShape s;
  s.root = index(tree.root, "root");
  s.parent.assign(participants, -1);
  s.children.assign(participants, {});
  std::vector<bool> has_parent(participants, false);
  std::map<std::string, int> crossed;  // relay GPU -> its participants this tree has used
  auto link = [&](int from, int to, const TreeEdge& e) {
    // "out": data flows parent -> child; "in": child -> parent.
    const int parent = tree.direction == TreeDirection::out ? from : to;
    const int child = tree.direction == TreeDirection::out ? to : from;
    if (child == s.root || has_parent[child])
      throw Error(fmt::format("plan tree {} (root {}): {} {} receives from two parents (edge {} -> {}); a tree "
                              "gives every rank one parent",
                              t, tree.root, child < n ? "rank" : "relay", name(child), e.from, e.to));
    has_parent[child] = true;
    s.parent[child] = parent;
    s.children[parent].push_back(child);
  };
  for (const TreeEdge& e : tree.edges) {
    std::vector<int> chain = {index(e.from, "edge sender")};
    if (!relays.empty())
      for (const std::string& via : e.path) {
        const auto it = relay_participants.find(via);
        if (it == relay_participants.end() || !crosses(e, via)) continue;
        const int k = crossed[via]++;
        CANOPY_INTERNAL_ASSERT(k < static_cast<int>(it->second.size()), "too few participants for a relay GPU");
        chain.push_back(it->second[k]);
      }
    chain.push_back(index(e.to, "edge receiver"));
    for (std::size_t h = 0; h + 1 < chain.size(); ++h) link(chain[h], chain[h + 1], e);
  }
  for (int r = 0; r < participants; ++r) {
    if (r < n && r != s.root && !has_parent[r])
      throw Error(fmt::format("plan tree {} (root {}) does not reach rank {}: every tree must span all ranks",
                              t, tree.root, plan.ranks[r]));
    std::sort(s.children[r].begin(), s.children[r].end());
    if (r >= n && tree.direction == TreeDirection::in && s.children[r].size() > 1)
      throw Error(fmt::format("plan tree {} (root {}): relay {} would combine the data of {} senders; a relay only "
                              "forwards, one input to one output (plan it again: the planner splits relays so)",
                              t, tree.root, name(r), s.children[r].size()));
  }
  // Every participant in the tree reaches the root by parents (no cycle).
  for (int r = 0; r < participants; ++r) {
    if (r != s.root && !has_parent[r]) continue;
    int v = r;
    for (int hops = 0; v != s.root; ++hops) {
      if (hops > participants)
        throw Error(fmt::format("plan tree {} (root {}) has a cycle through {} {}", t, tree.root,
                                r < n ? "rank" : "relay", name(r)));
      v = s.parent[v];
    }
  }
  return s;
}

void check_directions(const Plan& plan) {
  for (std::size_t t = 0; t < plan.trees.size(); ++t) {
    const Tree& tree = plan.trees[t];
    const bool out = tree.direction == TreeDirection::out;
    bool ok = true;
    switch (plan.collective) {
      case Collective::broadcast: ok = out && plan.root && tree.root == *plan.root; break;
      case Collective::reduce: ok = !out && plan.root && tree.root == *plan.root; break;
      case Collective::allgather: ok = out; break;
      case Collective::reducescatter: ok = !out; break;
      case Collective::allreduce: ok = true; break;
    }
    if (!ok)
      throw Error(fmt::format("plan tree {} (root {}, direction {}) does not fit a {} plan{}", t, tree.root,
                              to_string(tree.direction), to_string(plan.collective),
                              plan.root ? fmt::format(" rooted at {}", *plan.root) : std::string()));
    if (!(tree.fraction > 0 && tree.fraction <= 1))
      throw Error(fmt::format("plan tree {} (root {}) has fraction {}: a tree carries a share of the buffer, "
                              "more than 0 and at most 1",
                              t, tree.root, tree.fraction));
  }
  if (plan.trees.empty()) throw Error("the plan has no trees: nothing to generate");
}

// Integer weights and range specs of every tree (docs/codegen.md "How a buffer is cut").
void weigh_trees(const Plan& plan, const std::vector<TreeShape>& shapes, Schedule& s) {
  const int n = s.ranks;
  const int trees = static_cast<int>(plan.trees.size());
  s.tree_weights.assign(trees, 0);
  std::vector<RangeSpec> specs(trees);
  auto split_group = [&](const std::vector<int>& group, RangeSpec base) {
    std::vector<double> shares;
    for (int t : group) shares.push_back(plan.trees[t].fraction);
    const std::vector<std::int64_t> parts = parts_of_scale(shares);
    std::int64_t prefix = 0;
    for (std::size_t k = 0; k < group.size(); ++k) {
      const int t = group[k];
      s.tree_weights[t] = parts[k];
      RangeSpec spec = base;
      spec.splits.push_back({prefix, prefix + parts[k]});
      prefix += parts[k];
      specs[t] = spec;
    }
  };
  const bool per_root = cuts_per_root_block(plan.collective);
  if (plan.collective == Collective::broadcast || plan.collective == Collective::reduce) {
    std::vector<int> all(trees);
    std::iota(all.begin(), all.end(), 0);
    split_group(all, RangeSpec{});
  } else if (per_root) {
    for (int r = 0; r < n; ++r) {
      std::vector<int> group;
      for (int t = 0; t < trees; ++t)
        if (shapes[t].root == r) group.push_back(t);
      if (group.empty())
        throw Error(fmt::format("{} plan has no tree rooted at {}: every rank's block needs one",
                                to_string(plan.collective), plan.ranks[r]));
      split_group(group, RangeSpec{r, {}});
    }
  } else {  // allreduce: the buffer is cut among roots by their in-trees' fractions; each root's part is cut
            // among its in-trees and, separately, among its out-trees.
    std::vector<int> roots;
    std::vector<double> root_share;
    for (int r = 0; r < n; ++r) {
      double share = 0;
      for (int t = 0; t < trees; ++t)
        if (shapes[t].root == r && plan.trees[t].direction == TreeDirection::in) share += plan.trees[t].fraction;
      if (share > 0) roots.push_back(r), root_share.push_back(share);
    }
    if (roots.empty()) throw Error("allreduce plan has no in-trees: nothing reduces the buffer");
    const std::vector<std::int64_t> root_parts = parts_of_scale(root_share);
    std::int64_t prefix = 0;
    for (std::size_t k = 0; k < roots.size(); ++k) {
      const int r = roots[k];
      std::vector<int> in, out;
      for (int t = 0; t < trees; ++t)
        if (shapes[t].root == r) (plan.trees[t].direction == TreeDirection::in ? in : out).push_back(t);
      if (out.empty())
        throw Error(fmt::format("allreduce plan: rank {} reduces a part of the buffer (in-trees) but no out-tree "
                                "rooted there broadcasts it",
                                plan.ranks[r]));
      RangeSpec base;
      base.splits.push_back({prefix, prefix + root_parts[k]});
      prefix += root_parts[k];
      split_group(in, base);
      split_group(out, base);
    }
    for (int t = 0; t < trees; ++t)
      if (s.tree_weights[t] == 0)
        throw Error(fmt::format("allreduce plan: out-tree {} is rooted at {}, which reduces nothing (no in-tree)", t,
                                plan.trees[t].root));
  }
  // Thread blocks: blocks_per_rank shared by fraction, at least one per tree. An allreduce root's out-tree lane
  // that fuse_allreduce_roots folds into its reducing lane frees its blocks: share them out too, so a rank still
  // runs about blocks_per_rank blocks.
  double sum = 0, fused = 0;
  for (const Tree& tree : plan.trees) sum += tree.fraction;
  if (plan.collective == Collective::allreduce)
    for (int r = 0; r < n; ++r) {
      std::vector<int> in, out;
      for (int t = 0; t < trees; ++t)
        if (shapes[t].root == r) (plan.trees[t].direction == TreeDirection::in ? in : out).push_back(t);
      if (in.size() == 1 && out.size() == 1) fused += plan.trees[out[0]].fraction / n;
    }
  if (fused > 0 && fused < sum) sum -= fused;
  s.tree_blocks.assign(trees, 1);
  for (int t = 0; t < trees; ++t)
    s.tree_blocks[t] =
        std::max(1, static_cast<int>(std::lround(s.options.blocks_per_rank * plan.trees[t].fraction / sum)));
  for (int t = 0; t < trees; ++t)
    for (int r = 0; r < s.participants(); ++r) {
      if (s.is_relay(r) && shapes[t].parent[r] < 0) continue;  // a relay takes part only in the trees that cross it
      Lane lane;
      lane.id = static_cast<int>(s.lanes.size());
      lane.tree = t;
      lane.blocks = s.tree_blocks[t];
      lane.rank = r;
      lane.parent = shapes[t].parent[r];
      lane.children = shapes[t].children[r];
      lane.role = r == shapes[t].root ? LaneRole::root : lane.children.empty() ? LaneRole::leaf : LaneRole::relay;
      lane.range = specs[t];
      s.lanes.push_back(std::move(lane));
    }
}

Schedule lay_out_lanes(const Plan& plan, const CodegenOptions& options, std::vector<TreeShape>* shapes) {
  const int n = static_cast<int>(plan.ranks.size());
  if (n < 1) throw Error("the plan has no ranks");
  if (n > kMaxCodegenRanks)
    throw Error(fmt::format("the plan has {} ranks; generated kernels take every rank's addresses as launch "
                            "arguments, which fit {} ranks at most",
                            n, kMaxCodegenRanks));
  check_codegen_options(options, n);
  check_directions(plan);
  std::map<std::string, int> rank_of;
  for (int r = 0; r < n; ++r)
    if (!rank_of.emplace(plan.ranks[r], r).second)
      throw Error(fmt::format("plan lists rank '{}' twice", plan.ranks[r]));

  Schedule s;
  s.plan = plan;
  s.options = options;
  s.ranks = n;
  if (s.options.device_of_rank.empty()) s.options.device_of_rank = block_placement(n, n);
  s.options.pull = resolve_pull(s.options.pull, plan.collective == Collective::reduce);
  if (s.options.own_buffers_only) s.options.pull = PullEdges::none;  // a pulled edge reads the owner's send buffer
  // Relay participants: each relay GPU gets as many as the most times one tree crosses it, on its device.
  std::map<std::string, std::vector<int>> relay_participants;
  if (!options.relay_gpus.empty()) {
    int next_device = *std::max_element(s.options.device_of_rank.begin(), s.options.device_of_rank.end()) + 1;
    for (std::size_t g = 0; g < options.relay_gpus.size(); ++g) {
      const std::string& gpu = options.relay_gpus[g];
      if (rank_of.count(gpu))
        throw Error(fmt::format("relay GPU '{}' is also a rank of the plan: a GPU either holds a rank or relays", gpu));
      if (relay_participants.count(gpu)) throw Error(fmt::format("relay GPU '{}' is listed twice", gpu));
      std::size_t most = 0;
      for (const Tree& tree : plan.trees) {
        std::size_t crossings = 0;
        for (const TreeEdge& e : tree.edges)
          for (const std::string& via : e.path) crossings += via == gpu && crosses(e, via) ? 1 : 0;
        most = std::max(most, crossings);
      }
      std::vector<int>& ids = relay_participants[gpu];
      const int device = options.device_of_relay.empty() ? next_device++ : options.device_of_relay[g];
      for (std::size_t k = 0; k < most; ++k) {
        ids.push_back(s.participants());
        s.relays.push_back({k == 0 ? gpu : fmt::format("{}#{}", gpu, k + 1), gpu, device});
      }
    }
  }
  shapes->clear();
  for (int t = 0; t < static_cast<int>(plan.trees.size()); ++t)
    shapes->push_back(shape_of(plan, t, rank_of, relay_participants, s.relays));
  weigh_trees(plan, *shapes, s);
  return s;
}

std::vector<std::pair<int, int>> fused_root_lanes(const Schedule& s) {
  std::vector<std::pair<int, int>> fused;
  if (s.plan.collective != Collective::allreduce) return fused;
  auto same_range = [](const RangeSpec& a, const RangeSpec& b) {
    if (a.block_of != b.block_of || a.units != b.units || a.splits.size() != b.splits.size()) return false;
    for (std::size_t k = 0; k < a.splits.size(); ++k)
      if (a.splits[k].lo != b.splits[k].lo || a.splits[k].hi != b.splits[k].hi) return false;
    return true;
  };
  for (int r = 0; r < s.ranks; ++r) {
    std::vector<int> in, out;
    for (const Lane& lane : s.lanes)
      if (lane.rank == r && lane.role == LaneRole::root)
        (s.plan.trees[lane.tree].direction == TreeDirection::in ? in : out).push_back(lane.id);
    if (in.size() != 1 || out.size() != 1) continue;
    const Lane& reducer = s.lanes[in[0]];
    const Lane& copier = s.lanes[out[0]];
    // The copier's step sends to its out-tree children; without any it has no step to fold in.
    if (same_range(reducer.range, copier.range) && reducer.blocks == copier.blocks && !copier.children.empty())
      fused.emplace_back(reducer.id, copier.id);
  }
  return fused;
}

}  // namespace canopy
