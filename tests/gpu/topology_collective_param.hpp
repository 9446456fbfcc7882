// TopologyCollective: the parameter of the GPU tests that run every collective on each of a list of cases
// (collectives_gpu_test, ll128_gpu_test), the list of them, and the test names they print.
#pragma once

#include <iterator>
#include <string>
#include <vector>

#include "core/collective.hpp"

namespace canopy::testing {

struct TopologyCollective {
  int topology;  // index into the test's cases
  Collective collective;
};

// Every collective of every case in `cases` (an array of structs with a `name`), case by case.
template <typename Cases>
std::vector<TopologyCollective> every_collective_of(const Cases& cases) {
  std::vector<TopologyCollective> out;
  for (int t = 0; t < static_cast<int>(std::size(cases)); ++t)
    for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
                         Collective::reducescatter})
      out.push_back({t, c});
  return out;
}

// "<case name>_<collective>", e.g. "h200x2_allreduce".
template <typename Cases>
std::string topology_collective_name(const Cases& cases, const TopologyCollective& p) {
  return std::string(cases[p.topology].name) + "_" + to_string(p.collective);
}

}  // namespace canopy::testing
