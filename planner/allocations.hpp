// Distinct GPU allocations of a topology up to its symmetries (the "Blink table": every allocation of k GPUs of a
// machine, where allocations that an automorphism of the machine maps onto each other perform the same).
//
//   auto table = canopy::distinct_allocations(canopy::load_topology("dgx1-v100"), 4);
//   for (const auto& a : table) plan(select_gpus(t, a.gpus), ...);  // a.count allocations share each result
#pragma once

#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace canopy {

// One orbit of allocations: its representative and how many allocations of the machine it stands for.
struct Allocation {
  std::vector<std::string> gpus;  // GPU names in rank order: the orbit's lexicographically smallest index subset
  int count = 1;                  // size of the orbit
  friend bool operator==(const Allocation&, const Allocation&) = default;
};

// Every automorphism of `topology`: permutations p of all nodes (p[i] is the index of node i's image) that map
// GPUs to GPUs and switches to switches and every arc u -> v onto an arc p[u] -> p[v] of the same kind and GB/s.
// Sorted, so the identity comes first. Throws canopy::Error when the group is too large to list (the search and
// the list together may take at most 10 million steps).
std::vector<std::vector<int>> topology_automorphisms(const Topology& topology);

// Every subset of `gpus` GPUs of `topology`, grouped into orbits under its automorphisms, ordered by
// representative; the counts add up to C(gpu_count, gpus). Throws canopy::Error if `gpus` is not in
// 1..gpu_count, if the topology has more than 64 GPUs or more than 10 million subsets of that size, or if the
// symmetry search exceeds its work budget.
std::vector<Allocation> distinct_allocations(const Topology& topology, int gpus);

}  // namespace canopy
