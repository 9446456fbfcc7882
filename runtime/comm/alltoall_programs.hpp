// AlltoallPrograms: what Communicator::alltoall runs: the all-to-all planned over the communicator's topology and
// ranks (planner/alltoall.hpp), once, and its programs (planner/alltoall_program.hpp), one per chunk count a call's
// per-peer count allows, made on first use and kept for the communicator's life (its prepared kernels refer to them).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dsl/algorithm.hpp"
#include "planner/alltoall.hpp"
#include "topology/topology.hpp"

namespace canopy {

class AlltoallPrograms {
 public:
  // The chunks a pair of the program a call of `per_peer` elements runs: the plan's (alltoall_program_chunks) where
  // it divides per_peer, else the largest count below it that does (1 at least: every route keeps its path, only the
  // split between a pair's paths coarsens).
  static int chunks_for(int planned_chunks, std::uint64_t per_peer);

  // The program for a call of `per_peer` elements to each rank, over `ranks` (GPU names of `topology`, rank order).
  // Plans on the first call. Throws canopy::Error where the plan has no program (a GPU outside the ranks relays).
  const algo::Program& program(const Topology& topology, const std::vector<std::string>& ranks, std::uint64_t per_peer);

 private:
  std::mutex mutex_;
  std::optional<AlltoallPlan> plan_;
  int planned_chunks_ = 1;
  std::map<int, std::unique_ptr<algo::Program>> by_chunks_;
};

}  // namespace canopy
