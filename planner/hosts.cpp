// find_hosts / host_topology: connected components of the topology without its network links (see hosts.hpp).
#include "planner/hosts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <queue>

#include "core/error.hpp"

namespace canopy {

bool is_network_link(const Arc& arc) {
  for (const char* prefix : {"ib", "eth", "roce", "efa", "net"})
    if (arc.kind.rfind(prefix, 0) == 0) return true;
  return false;
}

namespace {

// Component index of every node over the arcs that are not network links (both directions count).
std::vector<int> components(const Topology& t) {
  const int n = static_cast<int>(t.nodes().size());
  std::vector<std::vector<int>> adj(n);
  for (const Arc& a : t.arcs()) {
    if (is_network_link(a)) continue;
    adj[a.from.index].push_back(a.to.index);
    adj[a.to.index].push_back(a.from.index);
  }
  std::vector<int> comp(n, -1);
  int next = 0;
  for (int s = 0; s < n; ++s) {
    if (comp[s] >= 0) continue;
    std::queue<int> q;
    q.push(s);
    comp[s] = next;
    while (!q.empty()) {
      const int x = q.front();
      q.pop();
      for (int y : adj[x])
        if (comp[y] < 0) comp[y] = next, q.push(y);
    }
    ++next;
  }
  return comp;
}

// Hops from `from` to every node of its component without network links; -1 where unreached.
std::vector<int> hops_from(const Topology& t, int from) {
  std::vector<int> d(t.nodes().size(), -1);
  std::queue<int> q;
  q.push(from);
  d[from] = 0;
  while (!q.empty()) {
    const int x = q.front();
    q.pop();
    for (const Arc& a : t.arcs())
      if (a.from.index == x && !is_network_link(a) && d[a.to.index] < 0) d[a.to.index] = d[x] + 1, q.push(a.to.index);
  }
  return d;
}

}  // namespace

std::vector<Host> find_hosts(const Topology& t, const std::vector<std::string>& ranks) {
  std::vector<std::string> names = ranks;
  if (names.empty())
    for (NodeId g : t.gpu_ids()) names.push_back(t.node(g).name);
  const std::vector<int> comp = components(t);
  std::map<int, int> host_of;  // component -> index into hosts
  std::vector<Host> hosts;
  for (const std::string& name : names) {
    const auto id = t.find(name);
    if (!id || t.node(*id).kind != NodeKind::gpu)
      throw Error(fmt::format("'{}' is not a GPU of topology {}: name GPUs it declares", name, t.name()));
    auto [it, fresh] = host_of.emplace(comp[id->index], static_cast<int>(hosts.size()));
    if (fresh) hosts.push_back(Host{fmt::format("host{}", hosts.size()), {}, {}, 0, {}});
    hosts[it->second].gpus.push_back(name);
  }
  for (Host& h : hosts) {
    const int c = comp[t.find(h.gpus.front())->index];
    for (const Arc& a : t.arcs()) {
      if (!is_network_link(a) || comp[a.from.index] != c || comp[a.to.index] == c) continue;
      h.nic_gbps += a.gbps;
      const std::string& nic = t.node(a.from).name;
      if (std::find(h.nics.begin(), h.nics.end(), nic) == h.nics.end()) h.nics.push_back(nic);
    }
    for (const std::string& g : h.gpus) {
      const std::vector<int> d = hops_from(t, t.find(g)->index);
      std::string best;
      int best_d = -1;
      for (const std::string& nic : h.nics) {
        const int x = d[t.find(nic)->index];
        if (x >= 0 && (best_d < 0 || x < best_d)) best = nic, best_d = x;
      }
      h.near_nic.push_back(best);
    }
  }
  return hosts;
}

Topology host_topology(const Topology& t, const Host& host) {
  const std::vector<int> comp = components(t);
  const int c = comp[t.find(host.gpus.front())->index];
  Topology sub(t.name() + "." + host.name);
  std::map<int, NodeId> kept;
  for (const std::string& g : host.gpus) kept[t.find(g)->index] = sub.gpu(g);
  for (std::size_t v = 0; v < t.nodes().size(); ++v)
    if (comp[v] == c && t.nodes()[v].kind == NodeKind::relay) kept[static_cast<int>(v)] = sub.relay(t.nodes()[v].name);
  for (const Arc& a : t.arcs()) {
    if (is_network_link(a) || !kept.count(a.from.index) || !kept.count(a.to.index)) continue;
    sub.arc(kept[a.from.index], kept[a.to.index], Bandwidth{a.gbps, a.kind, a.latency_us});
  }
  try {
    sub.validate();
  } catch (const Error& e) {
    throw Error(fmt::format("{} of {} is not connected inside: {}", host.name, t.name(), e.what()));
  }
  return sub;
}

}  // namespace canopy
