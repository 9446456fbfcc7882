// simulate_hierarchical / phase_fill_us / nccl_multihost_trees (see hier_simulate.hpp).
#include "simulator/hier_simulate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace canopy {

std::vector<double> phase_fill_us(const Topology& t, const HierarchicalPlan& hp, std::int64_t chunk,
                                  const SimOptions& options) {
  std::vector<double> out;
  for (const HierPhase& p : hp.phases) {
    double slowest = 0;
    for (std::size_t i = 0; i < p.parts.size(); ++i) {
      const auto bytes = static_cast<std::int64_t>(std::llround(static_cast<double>(chunk) * p.size[i]));
      if (bytes < 1) continue;
      SimOptions o = options;
      o.launch_us = 0;
      o.chunk_bytes = bytes;  // one step: the chunk is the pipeline's unit
      SimResult r;
      if (p.scope == PhaseScope::hosts) {
        r = simulate_plan(hp.host_topologies[p.parts[i]], p.plans[i], bytes, o);
      } else {
        const Rail& rail = hp.rails[p.parts[i]];
        RingBaseline ring{"any", 1, 0, {rail.ranks}, {}};
        r = simulate_rings(t, ring, p.collective, rail.ranks, p.roots[i].empty() ? rail.ranks.front() : p.roots[i],
                           bytes, o);
      }
      slowest = std::max(slowest, r.time_us);
    }
    out.push_back(slowest);
  }
  return out;
}

SimResult simulate_hierarchical(const Topology& t, const HierarchicalPlan& hp, std::int64_t bytes,
                                const SimOptions& options) {
  if (bytes < 0) throw Error(fmt::format("cannot simulate {} bytes", bytes));
  if (options.chunk_bytes < 1) throw Error(fmt::format("chunk size {} B: use at least 1 byte", options.chunk_bytes));
  const std::int64_t chunk = std::max<std::int64_t>(1, std::min(bytes, options.chunk_bytes));
  SimResult r;
  r.chunk_bytes = chunk;
  r.time_us = options.launch_us;
  if (bytes > 0) {
    for (double us : phase_fill_us(t, hp, chunk, options)) r.time_us += us;
    r.time_us += static_cast<double>(bytes - chunk) / (hp.algbw_gbps * 1e3);
  }
  r.algbw_gbps = r.time_us > 0 ? static_cast<double>(bytes) / (r.time_us * 1e3) : 0;
  r.busbw_gbps = r.algbw_gbps * busbw_factor(hp.collective, static_cast<int>(hp.ranks.size()));
  return r;
}

namespace {

TreeEdge edge(const Topology& t, const std::string& from, const std::string& to) {
  const std::vector<NodeId> nodes = switch_path(t, *t.find(from), *t.find(to));
  if (nodes.empty()) throw Error(fmt::format("no path from {} to {} through switches in {}", from, to, t.name()));
  TreeEdge e{from, to, {}};
  if (nodes.size() > 2)
    for (NodeId v : nodes) e.path.push_back(t.node(v).name);
  return e;
}

}  // namespace

Plan nccl_multihost_trees(const Topology& t, const std::vector<Host>& hosts) {
  const int H = static_cast<int>(hosts.size());
  if (H < 1) throw Error("NCCL's trees need at least one host");
  Plan p;
  p.collective = Collective::allreduce;
  p.topology = t.name();
  for (const Host& h : hosts) p.ranks.insert(p.ranks.end(), h.gpus.begin(), h.gpus.end());
  // NCCL's binary tree over positions 0..H-1 (as double_binary_tree): 0 is the root, x hangs under (x ^ b) | 2b
  // with b its lowest set bit, or under x ^ b when that is past the end.
  auto position_parent = [H](int x) {
    const int b = x & -x;
    const int up = (x ^ b) | (b << 1);
    return up < H ? up : x ^ b;
  };
  for (int tree = 0; tree < 2; ++tree) {
    std::vector<int> at(H);  // at[position] = host
    for (int i = 0; i < H; ++i) at[i] = tree == 0 ? i : H % 2 == 0 ? H - 1 - i : (i + 1) % H;
    auto head = [&](int h) { return tree == 0 ? hosts[h].gpus.front() : hosts[h].gpus.back(); };
    std::vector<int> parent(H, -1);
    for (int x = 1; x < H; ++x) parent[at[x]] = at[position_parent(x)];
    std::vector<TreeEdge> down;
    std::vector<int> frontier{at[0]};
    for (std::size_t f = 0; f < frontier.size(); ++f) {
      const int h = frontier[f];
      std::vector<std::string> chain = hosts[h].gpus;  // the host's chain, from its head
      if (tree == 1) std::reverse(chain.begin(), chain.end());
      for (std::size_t i = 0; i + 1 < chain.size(); ++i) down.push_back(edge(t, chain[i], chain[i + 1]));
      for (int c = 0; c < H; ++c)
        if (parent[c] == h) frontier.push_back(c), down.push_back(edge(t, head(h), head(c)));
    }
    Tree out{head(at[0]), TreeDirection::out, 0, 0.5, down};
    Tree in{head(at[0]), TreeDirection::in, 0, 0.5, {}};
    for (auto it = down.rbegin(); it != down.rend(); ++it)
      in.edges.push_back({it->to, it->from, std::vector<std::string>(it->path.rbegin(), it->path.rend())});
    p.trees.push_back(in);
    p.trees.push_back(out);
  }
  return p;
}

}  // namespace canopy
