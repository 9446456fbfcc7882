// canopy::plan_alltoall: takes a Topology and the ranks (PlanOptions); returns a routing of every ordered pair's
// all-to-all block over the links, a maximum concurrent multicommodity flow through switches and relaying GPUs,
// with a proven upper bound and the rate of NCCL-style direct paths beside it (docs/planner.md, "All-to-all").
//
// Rates: `pair_gbps` is λ, the GB/s every ordered pair (s, d), s != d, moves at once. With nccl-tests' alltoall
// convention (size S = the bytes each rank sends, its own block included, S/N to each rank) the exchange takes
// (S/N) / λ, so algbw = N·λ and busbw = algbw·(N−1)/N = (N−1)·λ: the bytes each rank sends to the others per second.
#pragma once

#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "planner/planner.hpp"

namespace canopy {

// One route of a pair's block: every node crossed, from..to (relay GPUs and switches included), and its share of the
// pair's block (the shares of a pair sum to 1).
struct AlltoallPath {
  std::vector<std::string> nodes;
  double share = 0;
};

struct AlltoallPair {
  std::string from, to;
  std::vector<AlltoallPath> paths;  // heaviest first
};

struct AlltoallPlan {
  std::string topology;
  std::vector<std::string> ranks;  // rank order
  double pair_gbps = 0;            // λ: the optimum of the flow LP, every ordered pair at once
  double bound_pair_gbps = 0;      // proven: Σ_e c_e·ℓ_e / Σ_pairs dist_ℓ(s, d) for the LP's dual lengths ℓ
  double direct_pair_gbps = 0;     // NCCL-style direct routes (direct_routes), every pair at once
  std::vector<AlltoallPair> pairs;   // the plan's routes, ordered by (from, to) in rank order
  std::vector<AlltoallPair> direct;  // direct_routes, in the same order
};

// nccl-tests' alltoall algbw and busbw for a per-pair rate λ over n ranks: n·λ and (n−1)·λ.
double alltoall_algbw(double pair_gbps, int ranks);
double alltoall_busbw(double pair_gbps, int ranks);

// Plans the all-to-all over `topology` for `options.gpus` (every GPU when empty); `options.relay` lets GPUs that are
// not ranks forward too (ranks always may). Throws canopy::Error for fewer than 2 ranks, bad GPU lists, a root, or
// ranks that cannot reach one another.
AlltoallPlan plan_alltoall(const Topology& topology, const PlanOptions& options = {});

// The largest λ at which every ordered pair moves λ GB/s at once over `routes` (each pair's paths and shares): the
// narrowest link's capacity over the shares crossing it. Throws canopy::Error for a path between unlinked nodes.
double routes_pair_gbps(const Topology& topology, const std::vector<AlltoallPair>& routes);

// NCCL-style direct routes over `ranks` (by name): each ordered pair's block split over its fewest-hop paths that
// cross switches only, in proportion to each path's narrowest link (NVLink traffic through NVSwitches spreads over all
// of a GPU's links; at most 64 paths a pair); where switches alone do not join a pair, its fewest-hop path over any
// node (a GPU forwards, as NCCL's P2P through an intermediate GPU).
std::vector<AlltoallPair> direct_routes(const Topology& topology, const std::vector<std::string>& ranks);

// Loads of a plan: per directed node pair, the GB/s its paths put on it at rate `pair_gbps` against its capacity.
struct AlltoallLinkLoad {
  std::string from, to;
  double gbps = 0;      // carried
  double capacity = 0;  // all arcs between the two nodes together
};
std::vector<AlltoallLinkLoad> alltoall_link_loads(const Topology& topology, const AlltoallPlan& plan);

}  // namespace canopy
