// A planned all-to-all as a collective-algorithm program (alltoall_program.hpp).
#include "planner/alltoall_program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>

#include "core/error.hpp"

namespace canopy {

std::vector<AlltoallPair> rounded_alltoall_routes(const AlltoallPlan& plan, int chunks) {
  if (chunks < 1) throw Error(fmt::format("an all-to-all program needs at least 1 chunk a pair, got {}", chunks));
  std::vector<AlltoallPair> out;
  for (const AlltoallPair& pair : plan.pairs) {
    const std::size_t k = pair.paths.size();
    std::vector<int> dealt(k);
    std::vector<double> remainder(k);
    int left = chunks;
    for (std::size_t i = 0; i < k; ++i) {
      const double ideal = pair.paths[i].share * chunks;
      dealt[i] = std::min(left, static_cast<int>(std::floor(ideal + 1e-9)));
      remainder[i] = ideal - dealt[i];
      left -= dealt[i];
    }
    std::vector<std::size_t> order(k);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
    for (std::size_t i = 0; left > 0 && k > 0; i = (i + 1) % k, --left) ++dealt[order[i]];
    AlltoallPair rounded{pair.from, pair.to, {}};
    for (std::size_t i = 0; i < k; ++i)
      if (dealt[i] > 0) rounded.paths.push_back({pair.paths[i].nodes, static_cast<double>(dealt[i]) / chunks});
    out.push_back(std::move(rounded));
  }
  return out;
}

int alltoall_program_chunks(const Topology& topology, const AlltoallPlan& plan, double keep, int max_chunks) {
  for (int c = 1; c < max_chunks; ++c)
    if (routes_pair_gbps(topology, rounded_alltoall_routes(plan, c)) >= keep * plan.pair_gbps) return c;
  return max_chunks;
}

algo::Program alltoall_program(const Topology& topology, const AlltoallPlan& plan, int chunks) {
  const int n = static_cast<int>(plan.ranks.size());
  std::map<std::string, int> rank_of;
  for (int r = 0; r < n; ++r) rank_of[plan.ranks[r]] = r;
  // One chunk's journey: the ranks it crosses, source first, and which of the pair's chunks it is.
  struct Journey {
    std::vector<int> ranks;
    int from = 0, to = 0, chunk = 0;
  };
  std::vector<Journey> journeys;
  for (const AlltoallPair& pair : rounded_alltoall_routes(plan, chunks)) {
    int next_chunk = 0;
    for (const AlltoallPath& path : pair.paths) {
      Journey j{{}, rank_of.at(pair.from), rank_of.at(pair.to), 0};
      for (const std::string& name : path.nodes) {
        const std::optional<NodeId> id = topology.find(name);
        if (!id) throw Error(fmt::format("all-to-all path {} -> {}: no node '{}' in topology {}", pair.from, pair.to,
                                         name, topology.name()));
        if (topology.node(*id).kind != NodeKind::gpu) continue;  // a switch carries it
        const auto rank = rank_of.find(name);
        if (rank == rank_of.end())
          throw Error(fmt::format("all-to-all path {} -> {} relays through GPU {}, which is not a rank: relays outside "
                                  "the ranks do not run yet; plan without --relay",
                                  pair.from, pair.to, name));
        j.ranks.push_back(rank->second);
      }
      const int dealt = static_cast<int>(std::lround(path.share * chunks));
      for (int c = 0; c < dealt; ++c, ++next_chunk) {
        j.chunk = next_chunk;
        journeys.push_back(j);
      }
    }
  }
  algo::Program p("planned-alltoall", algo::AllToAll{}, n, chunks);
  // Each rank's own block is a local copy.
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < chunks; ++c) p.input(r, r * chunks + c).copy(p.output(r, r * chunks + c));
  std::vector<int> scratch_used(n, 0);
  std::vector<algo::ChunkRef> at(journeys.size());  // where each journey's chunk waits after its last hop so far
  std::size_t longest = 0;
  for (const Journey& j : journeys) longest = std::max(longest, j.ranks.size());
  for (std::size_t hop = 1; hop < longest; ++hop)
    for (std::size_t k = 0; k < journeys.size(); ++k) {
      const Journey& j = journeys[k];
      if (hop >= j.ranks.size()) continue;
      const algo::Chunk source = hop == 1 ? p.input(j.from, j.to * chunks + j.chunk)
                                          : p.scratch(at[k].rank, at[k].index);
      const int next = j.ranks[hop];
      const algo::Hints hints{next, {}};  // channel: the next GPU, so a rank's sends to different GPUs run side by side
      if (hop + 1 == j.ranks.size())
        source.copy(p.output(j.to, j.from * chunks + j.chunk), hints);
      else
        at[k] = source.copy(p.scratch(next, scratch_used[next]++), hints).ref();
    }
  return p;
}

algo::Program alltoall_program(const Topology& topology, const AlltoallPlan& plan) {
  return alltoall_program(topology, plan, alltoall_program_chunks(topology, plan));
}

}  // namespace canopy
