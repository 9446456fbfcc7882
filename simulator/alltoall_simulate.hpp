// Predicting an all-to-all's time from its routes (planner/alltoall.hpp: a plan's paths, or NCCL-style direct routes)
// on simulator/sim_engine.hpp's link model, with the same costs as the other collectives (simulate.hpp's SimOptions).
//
// `bytes` is nccl-tests' alltoall size S: what each rank sends, S/N to every rank (its own block a local copy, not
// simulated). Each path of a pair carries its share of S/N, cut into chunks; a relaying GPU forwards chunk j once it has
// arrived (store and forward), switches pass it on within one hop; every pair runs at once, paths sharing a link in
// proportion to their shares. algbw = S / time and busbw = algbw·(N−1)/N, as nccl-tests' alltoall_perf reports.
#pragma once

#include <cstdint>
#include <vector>

#include "topology/topology.hpp"
#include "planner/alltoall.hpp"
#include "simulator/simulate.hpp"

namespace canopy {

SimResult simulate_alltoall(const Topology& topology, const std::vector<AlltoallPair>& routes, int ranks,
                            std::int64_t bytes, const SimOptions& options);

}  // namespace canopy
