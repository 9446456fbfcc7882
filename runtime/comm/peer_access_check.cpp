// check_peer_access (see peer_access_check.hpp).
#include "runtime/comm/peer_access_check.hpp"

#include <fmt/format.h>

#include <map>

#include "core/error.hpp"

namespace canopy {

void check_peer_access(const Plan& plan, const std::vector<std::string>& ranks, const std::vector<int>& device_of_rank,
                       const std::vector<std::vector<bool>>& peer, const std::vector<int>& ordinals) {
  std::map<std::string, int> rank_of;
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) rank_of[ranks[r]] = r;
  for (std::size_t t = 0; t < plan.trees.size(); ++t)
    for (const TreeEdge& e : plan.trees[t].edges) {
      const auto from = rank_of.find(e.from), to = rank_of.find(e.to);
      CANOPY_INTERNAL_ASSERT(from != rank_of.end() && to != rank_of.end(), "a plan edge between unknown ranks");
      const int a = device_of_rank.at(from->second), b = device_of_rank.at(to->second);
      // Data goes one way, counters the other: both directions need peer access.
      for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}})
        if (!peer.at(x).at(y))
          throw Error(fmt::format("tree {} of the {} plan sends {} -> {}, but GPU {} cannot access GPU {}'s memory (no "
                                  "peer access): Canopy's kernels write peers' memory directly. Leave one of them out "
                                  "(--gpus), or describe the machine without that link",
                                  t, to_string(plan.collective), e.from, e.to, ordinals.at(x), ordinals.at(y)));
    }
}

}  // namespace canopy
