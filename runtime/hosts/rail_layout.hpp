// RailLayout: how a multi-host communicator's processes group into hosts and rails (docs/multi-host.md). Pure: from
// each process's host identity (in process order) it gives the hosts (in order of their first process), each
// process's local rank (its place among its host's processes), k = max n_h rails, each rail's members (local rank
// s mod n_h of every host, in host order; a process of a small host is on several rails) and each process's rails.
// shard_range cuts a call's elements into k shards (evenly, the remainder to the first ones). The runtime's phases
// (hosts_phases.cpp) take every index from here; tested on any CPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace canopy {

struct RailLayout {
  std::vector<std::string> hosts;          // host identities, in order of their first process
  std::vector<int> host_of;                // per process: its host's index
  std::vector<int> local_of;               // per process: its local rank (place among its host's processes)
  std::vector<std::vector<int>> members;   // per host: its processes, in process order
  int k = 0;                               // rails (and shards): the most processes any host has
  std::vector<std::vector<int>> rails;     // per rail s: its processes, one per host in host order
  std::vector<std::vector<int>> rails_of;  // per process: the rails it is on, ascending

  int host_count() const { return static_cast<int>(hosts.size()); }
  int size_of(int host) const { return static_cast<int>(members[host].size()); }
  // The process of `host` that owns shard s (and is that host's member of rail s): local rank s mod n_h.
  int owner(int host, int s) const { return members[host][s % size_of(host)]; }
  // The process of `host` with local rank `s` exactly, or -1 when the host has no more than s processes (rail s then
  // carries no block of that host's own in reduce-scatter and allgather).
  int exact(int host, int s) const { return s < size_of(host) ? members[host][s] : -1; }
};

// Throws canopy::Error when `host_of_process` is empty.
RailLayout make_rail_layout(const std::vector<std::string>& host_of_process);

struct ElementRange {
  std::uint64_t begin = 0, end = 0;
  std::uint64_t count() const { return end - begin; }
  bool empty() const { return end == begin; }
};
// Shard s of `count` elements cut into k shards: count / k each, the first count % k one more (a count below k gives
// empty shards at the end). Byte offsets: begin * size_of(dtype).
ElementRange shard_range(std::uint64_t count, int k, int s);

// "host0=a(p0,p2) host1=b(p1,p3); rails: 0={p0,p1} 1={p2,p3}" for the init log.
std::string describe_rail_layout(const RailLayout& layout);

}  // namespace canopy
