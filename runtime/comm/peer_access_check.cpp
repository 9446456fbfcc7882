// check_peer_access (see peer_access_check.hpp).
#include "runtime/comm/peer_access_check.hpp"

#include <fmt/format.h>

#include <map>

#include "core/error.hpp"

namespace canopy {

void check_peer_access(const Plan& plan, const std::vector<std::string>& ranks, const std::vector<int>& device_of_rank,
                       const std::vector<std::vector<bool>>& peer, const std::vector<int>& ordinals,
                       const std::map<std::string, int>& device_of_relay) {
  std::map<std::string, int> device_of;  // every rank's and relay's device index
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) device_of[ranks[r]] = device_of_rank.at(r);
  for (std::size_t t = 0; t < plan.trees.size(); ++t)
    for (const TreeEdge& e : plan.trees[t].edges) {
      CANOPY_INTERNAL_ASSERT(device_of.count(e.from) && device_of.count(e.to), "a plan edge between unknown ranks");
      // The hops the data takes between GPUs that run kernels: from, each relay crossed, to (switches forward alone).
      std::vector<std::string> hops{e.from};
      for (const std::string& via : e.path)
        if (via != e.from && via != e.to && device_of_relay.count(via)) hops.push_back(via);
      hops.push_back(e.to);
      for (std::size_t h = 0; h + 1 < hops.size(); ++h) {
        const auto device = [&](const std::string& gpu) {
          const auto relay = device_of_relay.find(gpu);
          return relay != device_of_relay.end() ? relay->second : device_of.at(gpu);
        };
        const int a = device(hops[h]), b = device(hops[h + 1]);
        // Data goes one way, counters the other: both directions need peer access.
        for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}})
          if (!peer.at(x).at(y))
            throw Error(fmt::format(
                "tree {} of the {} plan sends {} -> {}{}, but GPU {} cannot access GPU {}'s memory (no peer access): "
                "Canopy's kernels write peers' memory directly. Leave one of them out (--gpus{}), or describe the "
                "machine without that link",
                t, to_string(plan.collective), e.from, e.to,
                hops.size() > 2 ? fmt::format(" (hop {} -> {})", hops[h], hops[h + 1]) : "", ordinals.at(x),
                ordinals.at(y), device_of_relay.empty() ? "" : " or the relays"));
      }
    }
}

}  // namespace canopy
