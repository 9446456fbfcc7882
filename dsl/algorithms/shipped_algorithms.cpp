// The registry of shipped algorithms (see shipped_algorithms.hpp).
#include "dsl/algorithms/shipped_algorithms.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"

namespace canopy::algo {

const std::vector<ShippedAlgorithm>& shipped_algorithms() {
  static const std::vector<ShippedAlgorithm> list{
      {"ring-allreduce", "allreduce: reduce-scatter then allgather around one ring, a chunk per rank, two channels",
       [](int n) { return n >= 1; }, ring_allreduce},
      {"allpairs-allgather",
       "allgather: every rank copies its chunk to every rank in one hop, a channel per destination",
       [](int n) { return n >= 1; }, allpairs_allgather},
      {"halving-doubling-allreduce",
       "allreduce: recursive halving reduce-scatter, recursive doubling allgather (power-of-two ranks)",
       [](int n) { return n >= 1 && (n & (n - 1)) == 0; }, halving_doubling_allreduce},
      {"hierarchical-allreduce",
       "allreduce for 2 hosts: intra-host reduce-scatter, one inter-host swap per chunk, intra-host allgather",
       [](int n) { return n >= 2 && n % 2 == 0; }, hierarchical_allreduce},
      {"two-step-alltoall",
       "alltoall for 2 hosts: gather per remote peer inside each host, then one transfer per GPU pair across",
       [](int n) { return n >= 2 && n % 2 == 0; }, two_step_alltoall},
      {"alltonext",
       "custom (rank r's input to rank r+1's output): direct copies; 2 hosts split the cross-host hop over all pairs",
       [](int n) { return n >= 2; }, alltonext},
  };
  return list;
}

Program shipped_algorithm(std::string_view name, int ranks) {
  std::vector<std::string> names;
  for (const ShippedAlgorithm& a : shipped_algorithms()) {
    names.emplace_back(a.name);
    if (a.name != name) continue;
    if (!a.supports(ranks))
      throw Error(fmt::format("algorithm '{}' is not written for {} ranks ({})", name, ranks, a.summary));
    return a.build(ranks);
  }
  throw Error(fmt::format("no shipped algorithm '{}': `canopy algo list` shows {}", name, fmt::join(names, ", ")));
}

}  // namespace canopy::algo
