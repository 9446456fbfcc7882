// Hosts of a topology, found from its links: takes a Topology, returns which GPUs form each host, the host's NICs
// and which NIC each GPU is nearest to. A link of a network kind (ib*, eth*, roce*, efa*, net*) crosses hosts; the GPUs
// still joined once those links are left out form one host. docs/multi-host.md says how hosts are found.
#pragma once

#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace canopy {

// Whether the arc is a network link between hosts (kind ib, eth, roce, efa or net, or one starting with those).
bool is_network_link(const Arc& arc);

struct Host {
  std::string name;                // host0, host1, ... in the order of their first GPU
  std::vector<std::string> gpus;   // local rank order (the topology's GPU order)
  std::vector<std::string> nics;   // the host's nodes with a network link, in topology order
  double nic_gbps = 0;             // all its network links out of the host together, GB/s per direction
  std::vector<std::string> near_nic;  // per GPU: its nearest NIC (fewest hops inside the host), "" if none
};

// The hosts among `ranks` (GPU names of `topology`, in rank order; empty: every GPU), each host's GPUs in rank order.
// One host when no network link separates the GPUs.
std::vector<Host> find_hosts(const Topology& topology, const std::vector<std::string>& ranks = {});

// One host's part of the topology: its GPUs among `host.gpus` and the switches left joined to them without network
// links, with the links among those, names kept. Throws canopy::Error if the host's GPUs cannot reach each other
// inside it.
Topology host_topology(const Topology& topology, const Host& host);

}  // namespace canopy
