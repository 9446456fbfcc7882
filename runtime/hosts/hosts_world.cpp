// join_across_hosts (comm/communicator_state.hpp): the world's side of a communicator over several hosts. The world
// State keeps the bootstrap group (exchange, split, own ranks) and a placement and topology that only name the
// ranks (gpu0 .. gpu{N-1}, one device index per process, every host's GPUs joined by one "network" relay), so the
// accessors answer as for any multi-process communicator; the work is HostsRuntime's (join_hosts).
#include <fmt/format.h>

#include "runtime/comm/communicator_state.hpp"

namespace canopy {

namespace {

// N ranks, each joined to one relay by a network link: a name for the world's ranks, never planned.
Topology world_topology(int nranks, int hosts) {
  Topology t(fmt::format("hosts-{}-ranks-{}", hosts, nranks));
  const NodeId network = t.relay("network");
  for (NodeId g : t.gpus(nranks)) t.link(g, network, Bandwidth{1, "net"});
  t.validate();
  return t;
}

}  // namespace

Status join_across_hosts(const CommunicatorOptions& options, int ordinal, int own_ranks,
                         std::unique_ptr<ProcessGroup> group, LegacyState& st) {
  const int nranks = group->facts.at(0).nranks;
  if (Status s = join_hosts(*group, options, own_ranks, ordinal, st.log, &st.hosts); !s.ok()) return s;
  const int hosts = st.hosts->layout.host_count();
  st.topology = world_topology(nranks, hosts);
  st.topology_source = fmt::format("{} hosts: Canopy's plans inside each, the real NCCL between them", hosts);
  Placement& pl = st.placement;
  for (std::size_t p = 0; p < group->facts.size(); ++p) {
    const ProcessFacts& f = group->facts[p];
    pl.gpus.push_back(f.gpu);
    pl.ordinals.push_back(ordinal);
    pl.first_rank.push_back(f.first_rank);
    pl.here.push_back(static_cast<int>(p) == group->process ? 1 : 0);
    for (int r = 0; r < f.ranks; ++r) {
      pl.rank_names.push_back(fmt::format("gpu{}", f.first_rank + r));
      pl.device_of_rank.push_back(static_cast<int>(p));
      pl.ordinal_of_rank.push_back(ordinal);
    }
  }
  st.config = resolve_config(options, nranks);
  st.group = std::move(group);
  return Status();
}

}  // namespace canopy
