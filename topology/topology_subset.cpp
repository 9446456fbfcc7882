// parse_gpu_list and select_gpus: from a `--gpus` string to the sub-topology a tenant's collectives run on.
#include "topology/topology_subset.hpp"

#include <fmt/format.h>

#include <charconv>
#include <set>

#include "core/error.hpp"
#include "topology/topology_check.hpp"

namespace canopy {

namespace {

std::string gpu_range_hint(const Topology& t) {
  const auto ids = t.gpu_ids();
  if (ids.empty()) return "it has no GPU";
  return fmt::format("its GPUs are {} .. {} (or indices 0 .. {})", t.node(ids.front()).name,
                     t.node(ids.back()).name, ids.size() - 1);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

NodeId resolve_item(const Topology& t, std::string_view item) {
  const auto gpus = t.gpu_ids();
  std::size_t index = 0;
  const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), index);
  if (ec == std::errc() && end == item.data() + item.size()) {
    if (index >= gpus.size())
      throw Error(fmt::format("--gpus: index {} is out of range for '{}': {}", item, t.name(), gpu_range_hint(t)));
    return gpus[index];
  }
  const auto id = t.find(item);
  if (!id) throw Error(fmt::format("--gpus: '{}' is not a node of '{}': {}", item, t.name(), gpu_range_hint(t)));
  if (t.node(*id).kind != NodeKind::gpu)
    throw Error(fmt::format("--gpus: '{}' is a switch, not a GPU, in '{}': {}", item, t.name(), gpu_range_hint(t)));
  return *id;
}

}  // namespace

std::vector<NodeId> parse_gpu_list(const Topology& t, std::string_view list) {
  std::vector<NodeId> out;
  std::set<NodeId> seen;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = list.find(',', start);
    const std::string_view item = trim(list.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (item.empty())
      throw Error(fmt::format("--gpus '{}': empty item; write GPU names or indices separated by commas, e.g. "
                              "--gpus gpu0,gpu1,gpu3 or --gpus 0,1,3",
                              list));
    const NodeId id = resolve_item(t, item);
    if (!seen.insert(id).second)
      throw Error(fmt::format("--gpus '{}': {} is listed twice", list, t.node(id).name));
    out.push_back(id);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

Topology select_gpus(const Topology& t, const std::vector<NodeId>& gpus) {
  const std::size_t n = t.nodes().size();
  std::vector<char> keep(n, 0);
  for (NodeId g : gpus) {
    if (t.node(g).kind != NodeKind::gpu)
      throw Error(fmt::format("select_gpus: '{}' is a switch, not a GPU", t.node(g).name));
    keep[g.index] = 1;
  }
  for (std::size_t i = 0; i < n; ++i)
    if (t.nodes()[i].kind == NodeKind::relay) keep[i] = 1;

  // A switch that touches fewer than two kept nodes relays nothing: drop it, and repeat, since dropping one switch
  // can leave its neighbour switch dangling.
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<std::set<int>> neighbours(n);
    for (const Arc& a : t.arcs()) {
      if (keep[a.from.index] && keep[a.to.index]) {
        neighbours[a.from.index].insert(a.to.index);
        neighbours[a.to.index].insert(a.from.index);
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (keep[i] && t.nodes()[i].kind == NodeKind::relay && neighbours[i].size() < 2) {
        keep[i] = 0;
        changed = true;
      }
    }
  }

  Topology sub(t.name());
  std::vector<NodeId> new_id(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!keep[i]) continue;
    const Node& node = t.nodes()[i];
    new_id[i] = node.kind == NodeKind::gpu ? sub.gpu(node.name) : sub.relay(node.name);
  }
  for (const Arc& a : t.arcs())
    if (keep[a.from.index] && keep[a.to.index])
      sub.arc(new_id[a.from.index], new_id[a.to.index], {a.gbps, a.kind, a.latency_us});
  for (const HostLink& h : t.host_links())
    if (keep[h.gpu.index]) sub.host_link(new_id[h.gpu.index], {h.gbps, h.kind});

  const auto problems = find_problems(sub);
  if (!problems.empty()) {
    std::string names;
    for (NodeId g : sub.gpu_ids()) names += (names.empty() ? "" : ",") + sub.node(g).name;
    std::string message = fmt::format("the GPUs {} of '{}' are not connected on their own (other GPUs do not relay):",
                                      names, t.name());
    for (const auto& p : problems) message += "\n  " + p.message;
    throw Error(message);
  }
  return sub;
}

}  // namespace canopy
