// Building transfer DAGs for plans, rings and double binary trees, and running them (see simulate.hpp).
#include "simulator/simulate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "simulator/transfer_dag.hpp"

namespace canopy {

using simulator::LinkMap;
using simulator::check_size;
using simulator::node_of;
using simulator::steps_of;

namespace {

// Fewest-hop path from -> to through switches only (as NCCL's P2P paths), over NVLink arcs alone when asked.
std::vector<int> route(const Topology& t, int from, int to, bool nvlink_only) {
  const std::vector<NodeId> nodes = switch_path(t, NodeId{from}, NodeId{to}, nvlink_only ? is_nvlink : nullptr);
  if (nodes.empty())
    throw Error(fmt::format("no path from {} to {} through switches{}", t.nodes()[from].name, t.nodes()[to].name,
                            nvlink_only ? " over NVLink" : ""));
  std::vector<int> path;
  for (NodeId v : nodes) path.push_back(v.index);
  return path;
}

SimResult finish(const LinkMap& lm, const std::vector<SimTransfer>& transfers, Collective c, int ranks,
                 std::int64_t bytes, const SimOptions& o) {
  return simulator::run_dag(lm, transfers, bytes, busbw_factor(c, ranks), o);
}

}  // namespace

SimResult simulate_plan(const Topology& topology, const Plan& plan, std::int64_t bytes, const SimOptions& o) {
  if (bytes < 0) throw Error(fmt::format("cannot simulate {} bytes", bytes));
  if (o.chunk_bytes < 1) throw Error(fmt::format("chunk size {} B: use at least 1 byte", o.chunk_bytes));
  const LinkMap lm(topology, o.latency_scale);
  const int trees = static_cast<int>(plan.trees.size());
  std::vector<int> chunks(trees);  // pipeline steps of each tree
  std::int64_t total = 0;
  for (int t = 0; t < trees; ++t) {
    chunks[t] = steps_of(static_cast<double>(bytes) * plan.trees[t].fraction, o.chunk_bytes);
    total += static_cast<std::int64_t>(chunks[t]) * static_cast<std::int64_t>(plan.trees[t].edges.size());
  }
  check_size(total, o, static_cast<double>(bytes), to_string(plan.collective).c_str());

  std::vector<SimTransfer> transfers;
  // have[t][node][j]: the transfers whose arrival gives `node` chunk j of tree t (empty: held from the start).
  std::vector<std::map<int, std::vector<std::vector<int>>>> have(trees);
  auto run_tree = [&](int t) {
    const Tree& tree = plan.trees[t];
    const double tree_bytes = static_cast<double>(bytes) * tree.fraction;
    const int k = chunks[t];
    for (const TreeEdge& e : tree.edges) {
      std::vector<int> nodes;
      if (e.path.empty()) nodes = {node_of(topology, e.from), node_of(topology, e.to)};
      for (const std::string& n : e.path) nodes.push_back(node_of(topology, n));
      const auto [path, latency] = lm.along(topology, nodes);
      const int from = nodes.front(), to = nodes.back();
      auto& from_have = have[t][from];
      from_have.resize(k);
      auto& to_have = have[t][to];
      to_have.resize(k);
      for (int j = 0; j < k; ++j) {
        // The runtime's blocks per tree follow the fraction: so does its share of a contended link.
        SimTransfer x = simulator::chunk_transfer(tree_bytes / k, path, latency, tree.fraction, o);
        x.after_arrived = from_have[j];
        if (j > 0) x.after_sent = {static_cast<int>(transfers.size()) - 1};
        to_have[j].push_back(static_cast<int>(transfers.size()));
        transfers.push_back(std::move(x));
      }
    }
  };
  for (int t = 0; t < trees; ++t)
    if (plan.trees[t].direction == TreeDirection::in) run_tree(t);
  if (plan.collective == Collective::allreduce) {
    // An out-tree's root holds chunk j once its in-trees have reduced the bytes it covers: the root's part is cut
    // among its in-trees and, separately, among its out-trees, both in plan order.
    std::map<std::string, std::vector<int>> in_of, out_of;
    for (int t = 0; t < trees; ++t)
      (plan.trees[t].direction == TreeDirection::in ? in_of : out_of)[plan.trees[t].root].push_back(t);
    for (const auto& [root, outs] : out_of) {
      const int r = node_of(topology, root);
      double out_at = 0;
      for (int o_t : outs) {
        const double f = plan.trees[o_t].fraction;
        auto& held = have[o_t][r];
        held.assign(chunks[o_t], {});
        for (int j = 0; j < chunks[o_t]; ++j) {
          const double lo = out_at + f * j / chunks[o_t], hi = out_at + f * (j + 1) / chunks[o_t];
          double in_at = 0;
          for (int i_t : in_of[root]) {
            const double g = plan.trees[i_t].fraction, step = g / chunks[i_t];
            const auto& reduced = have[i_t][r];
            for (int m = std::max(0, static_cast<int>(std::floor((lo - in_at) / step)));
                 m < chunks[i_t] && in_at + m * step < hi; ++m)
              if (in_at + (m + 1) * step > lo && m < static_cast<int>(reduced.size()))
                held[j].insert(held[j].end(), reduced[m].begin(), reduced[m].end());
            in_at += g;
          }
        }
        out_at += f;
      }
    }
  }
  for (int t = 0; t < trees; ++t)
    if (plan.trees[t].direction == TreeDirection::out) run_tree(t);
  return finish(lm, transfers, plan.collective, static_cast<int>(plan.ranks.size()), bytes, o);
}

SimResult simulate_rings(const Topology& topology, const RingBaseline& rings, Collective c,
                         const std::vector<std::string>& ranks, const std::string& root, std::int64_t bytes,
                         const SimOptions& o) {
  if (rings.rings < 1 || rings.orders.empty())
    throw Error(fmt::format("no ring over {} ranks of {}: nothing to simulate", ranks.size(), topology.name()));
  const LinkMap lm(topology, o.latency_scale);
  const int n = static_cast<int>(ranks.size());
  const int R = static_cast<int>(rings.orders.size());
  const bool chain = c == Collective::broadcast || c == Collective::reduce;
  const int steps = chain ? n - 1 : c == Collective::allreduce ? 2 * (n - 1) : n - 1;
  const double piece =
      chain ? static_cast<double>(bytes) / R : static_cast<double>(bytes) / (static_cast<double>(R) * n);
  const int k = steps_of(piece, o.chunk_bytes);
  check_size(static_cast<std::int64_t>(R) * k * steps * (chain ? 1 : n), o, static_cast<double>(bytes), "rings");
  std::vector<SimTransfer> transfers;
  const bool nvlink_only = rings.link_class == "nvlink";
  for (std::size_t ring = 0; ring < rings.orders.size(); ++ring) {
    const std::vector<std::string>& names = rings.orders[ring];
    std::vector<int> order;
    for (const std::string& name : names) order.push_back(node_of(topology, name));
    // Each hop along the path the ring search reserved for it (its own NIC, as NCCL binds a ring to one), else the
    // fewest-hop route (a RingBaseline made by hand).
    const bool reserved = ring < rings.hop_paths.size() && static_cast<int>(rings.hop_paths[ring].size()) == n;
    std::vector<std::pair<std::vector<int>, double>> hop(n);  // order[i] -> order[i + 1]
    for (int i = 0; i < n; ++i) {
      std::vector<int> nodes;
      if (reserved)
        for (const std::string& name : rings.hop_paths[ring][i]) nodes.push_back(node_of(topology, name));
      if (nodes.size() < 2 || nodes.front() != order[i] || nodes.back() != order[(i + 1) % n])
        nodes = route(topology, order[i], order[(i + 1) % n], nvlink_only);
      hop[i] = lm.along(topology, nodes);
    }
    auto add = [&](int h, double size, std::vector<int> after_arrived, std::vector<int> after_sent) {
      SimTransfer x = simulator::chunk_transfer(size, hop[h].first, hop[h].second, 1, o);
      x.after_arrived = std::move(after_arrived);
      x.after_sent = std::move(after_sent);
      transfers.push_back(std::move(x));
      return static_cast<int>(transfers.size()) - 1;
    };
    if (chain) {
      // Broadcast: from the root around the ring; reduce: around the ring into the root.
      const int at = static_cast<int>(std::find(names.begin(), names.end(), root) - names.begin());
      if (at == n) throw Error(fmt::format("root '{}' is not on the ring", root));
      const int first = c == Collective::broadcast ? at : (at + 1) % n;
      std::vector<int> previous(k, -1);
      for (int s = 0; s < n - 1; ++s) {
        int last = -1;
        for (int j = 0; j < k; ++j) {
          std::vector<int> arrived;
          if (previous[j] >= 0) arrived.push_back(previous[j]);
          last = add((first + s) % n, piece / k, arrived, last >= 0 ? std::vector<int>{last} : std::vector<int>{});
          previous[j] = last;
        }
      }
      continue;
    }
    // Steps s = 0..steps-1: rank i sends a block to i+1 after receiving it from i-1 in step s-1. Each rank sends
    // slice j's steps in order, slice after slice, over its one outgoing hop.
    std::vector<std::vector<int>> sent(n, std::vector<int>(k, -1));  // the step-(s-1) transfer from rank i, slice j
    std::vector<int> last(n, -1);
    for (int j = 0; j < k; ++j)
      for (int s = 0; s < steps; ++s) {
        std::vector<std::vector<int>> now(n);
        for (int i = 0; i < n; ++i) {
          std::vector<int> arrived;
          if (s > 0) arrived.push_back(sent[(i + n - 1) % n][j]);
          now[i] = {add(i, piece / k, arrived, last[i] >= 0 ? std::vector<int>{last[i]} : std::vector<int>{})};
          last[i] = now[i][0];
        }
        for (int i = 0; i < n; ++i) sent[i][j] = now[i][0];
      }
  }
  return finish(lm, transfers, c, n, bytes, o);
}

Plan double_binary_tree(const Topology& topology, const std::vector<std::string>& ranks) {
  const int n = static_cast<int>(ranks.size());
  if (n < 2) throw Error("a double binary tree needs at least 2 ranks");
  Plan p;
  p.collective = Collective::allreduce;
  p.topology = topology.name();
  p.ranks = ranks;
  // NCCL's shape: over positions 0..n-1, position 0 is the root with one child, the largest power of two below n; any
  // other position x with lowest set bit b hangs under (x ^ b) | 2b, or under x ^ b when that is past the end. The
  // second tree takes the positions mirrored (n even) or shifted by one (n odd), so that a rank that is a leaf in one
  // tree is inside the other.
  auto position_parent = [n](int x) {
    if (x == 0) return -1;
    const int b = x & -x;
    const int up = (x ^ b) | (b << 1);
    return up < n ? up : x ^ b;
  };
  auto build = [&](const std::vector<int>& at) {  // at[position] = rank
    std::vector<int> parent(n, -1);
    for (int x = 1; x < n; ++x) parent[at[x]] = at[position_parent(x)];
    return std::pair{at[0], parent};
  };
  std::vector<int> forward(n), second(n);
  for (int i = 0; i < n; ++i) forward[i] = i, second[i] = n % 2 == 0 ? n - 1 - i : (i + 1) % n;
  for (const auto& at : {forward, second}) {
    const auto [root, parent] = build(at);
    // Out-tree edges parent before child (breadth first); the in-tree takes them reversed.
    std::vector<TreeEdge> down;
    std::vector<int> frontier{root};
    for (std::size_t f = 0; f < frontier.size(); ++f)
      for (int v = 0; v < n; ++v)
        if (parent[v] == frontier[f]) {
          frontier.push_back(v);
          TreeEdge e{ranks[frontier[f]], ranks[v], {}};
          const std::vector<int> path = route(topology, node_of(topology, e.from), node_of(topology, e.to), false);
          if (path.size() > 2)
            for (int x : path) e.path.push_back(topology.nodes()[x].name);
          down.push_back(e);
        }
    Tree out{ranks[root], TreeDirection::out, 0, 0.5, down};
    Tree in{ranks[root], TreeDirection::in, 0, 0.5, {}};
    for (auto it = down.rbegin(); it != down.rend(); ++it) {
      TreeEdge e{it->to, it->from, std::vector<std::string>(it->path.rbegin(), it->path.rend())};
      in.edges.push_back(e);
    }
    p.trees.push_back(in);
    p.trees.push_back(out);
  }
  return p;
}

std::vector<std::int64_t> default_chunk_candidates() {
  std::vector<std::int64_t> c;
  for (std::int64_t b = 64 << 10; b <= (64 << 20); b *= 2) c.push_back(b);
  return c;
}

SimResult best_chunk(const std::function<SimResult(const SimOptions&)>& simulate, const SimOptions& options,
                     std::int64_t bytes, std::vector<std::int64_t> candidates) {
  if (candidates.empty()) candidates = default_chunk_candidates();
  std::sort(candidates.begin(), candidates.end());
  std::optional<SimResult> best;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::int64_t c = candidates[i];
    if (c * 4096 < bytes && i + 1 < candidates.size()) continue;
    SimOptions o = options;
    o.chunk_bytes = c;
    SimResult r = simulate(o);
    if (!best || r.time_us < best->time_us) best = std::move(r);
    if (c >= bytes) break;  // larger chunks all make one step
  }
  return *best;
}

}  // namespace canopy
