// canopy::plan_hierarchical: takes a Topology of several hosts (planner/hosts.hpp), a collective and options; returns
// a plan in phases: Canopy's packed trees inside each host, and between hosts one NCCL ring per rail (local rank s of
// every host) carrying shard s, 1/k of the data, k the largest host's GPU count. Phases are pipelined by chunk, so
// all of them run at once in the steady state: algbw comes from every phase's link loads together.
// docs/multi-host.md gives the phases of each collective and how shards map onto hosts of different sizes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "planner/hosts.hpp"
#include "planner/plan.hpp"
#include "planner/planner.hpp"

namespace canopy {

struct Rail {
  int shard = 0;                    // the data shard it carries, 0..k-1
  std::vector<std::string> ranks;   // one GPU per host, in host order: local rank shard mod (the host's GPU count)
};

enum class PhaseScope { hosts, rails };

struct HierPhase {
  std::string name;                   // "reduce-scatter inside hosts", ...
  PhaseScope scope = PhaseScope::hosts;
  Collective collective = Collective::allreduce;
  // hosts: one entry per host taking part (indices into HierarchicalPlan::hosts), its packed plan and its size;
  // rails: one entry per rail (indices into rails), no plans.
  std::vector<int> parts;
  std::vector<Plan> plans;            // hosts only: the packed plan on that host's topology
  std::vector<double> size;           // per part: the phase's size (nccl-tests convention) per byte of S
  std::vector<std::string> roots;     // broadcast/reduce: per part its root
};

struct HierarchicalPlan {
  Collective collective = Collective::allreduce;
  std::string topology;
  std::vector<std::string> ranks;
  std::optional<std::string> root;
  std::vector<Host> hosts;
  std::vector<Topology> host_topologies;  // per host
  std::vector<Rail> rails;
  std::vector<HierPhase> phases;          // in data order
  double algbw_gbps = 0;                  // steady state of the pipelined phases, link loads alone
  std::string bottleneck;                 // the busiest link, "h0nic0 -> ib0"
};

// Throws canopy::Error when the ranks sit on one host (plan() is the plan then) or a host is not connected inside.
HierarchicalPlan plan_hierarchical(const Topology& topology, Collective collective, const PlanOptions& options = {});

// A rail's ring: the hops (as node paths through switches, fewest hops) and the bytes per byte of S each carries.
struct RailHop {
  std::vector<std::string> path;
  double load = 0;
};
std::vector<RailHop> rail_hops(const Topology& topology, const HierarchicalPlan& plan, const HierPhase& phase,
                               int part);

std::string to_string(PhaseScope scope);

}  // namespace canopy
