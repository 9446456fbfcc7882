// describe_topology: takes a Topology, returns a fixed-width text table (nodes, then links, then host links).
#include "topology/topology_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "topology/topo_writer.hpp"

namespace canopy {

namespace {

struct NodeTotals {
  double out = 0;
  double in = 0;
  int links = 0;
  std::map<std::string, double> out_by_kind;
};

std::string pad(const std::string& s, std::size_t width) { return s + std::string(width - std::min(width, s.size()), ' '); }
std::string pad_left(const std::string& s, std::size_t width) {
  return std::string(width - std::min(width, s.size()), ' ') + s;
}

// Host links are no links of the graph: their own section, each GPU's path to pinned host memory ("" when none).
std::string host_links_table(const Topology& t) {
  if (t.host_links().empty()) return "";
  std::size_t gpu_w = 9;  // "host link"
  for (const HostLink& h : t.host_links()) gpu_w = std::max(gpu_w, t.node(h.gpu).name.size());
  std::string out = fmt::format("\n{}  {}  kind\n", pad("host link", gpu_w), pad_left("GB/s", 9));
  for (const HostLink& h : t.host_links())
    out += fmt::format("{}  {}  {}\n", pad(t.node(h.gpu).name, gpu_w), pad_left(format_gbps(h.gbps), 9), h.kind);
  return out;
}

}  // namespace

std::string describe_topology(const Topology& t) {
  const auto links = paired_links(t);
  std::vector<NodeTotals> totals(t.nodes().size());
  for (const Arc& a : t.arcs()) {
    totals[a.from.index].out += a.gbps;
    totals[a.to.index].in += a.gbps;
    totals[a.from.index].out_by_kind[a.kind.empty() ? "(no kind)" : a.kind] += a.gbps;
  }
  for (const auto& l : links) ++totals[l.a.index].links, ++totals[l.b.index].links;

  const int gpus = t.gpu_count();
  const int switches = static_cast<int>(t.nodes().size()) - gpus;
  const std::size_t hosts = t.host_links().size();
  std::string out = fmt::format(
      "topology {}: {} GPU{}, {} switch{}, {} link{}{} (bandwidths in GB/s per direction)\n\n", t.name(), gpus,
      gpus == 1 ? "" : "s", switches, switches == 1 ? "" : "es", links.size(), links.size() == 1 ? "" : "s",
      hosts ? fmt::format(", {} host link{}", hosts, hosts == 1 ? "" : "s") : "");

  std::size_t name_w = 4;
  for (const Node& n : t.nodes()) name_w = std::max(name_w, n.name.size());
  out += fmt::format("{}  {}  {}  {}  {}  {}\n", pad("node", name_w), pad("kind", 6), pad_left("links", 5),
                     pad_left("out", 9), pad_left("in", 9), "out by kind");
  for (NodeKind kind : {NodeKind::gpu, NodeKind::relay}) {
    for (std::size_t i = 0; i < t.nodes().size(); ++i) {
      const Node& n = t.nodes()[i];
      if (n.kind != kind) continue;
      const NodeTotals& s = totals[i];
      std::string by_kind;
      for (const auto& [k, gbps] : s.out_by_kind) by_kind += (by_kind.empty() ? "" : ", ") + k + " " + format_gbps(gbps);
      out += fmt::format("{}  {}  {}  {}  {}  {}\n", pad(n.name, name_w), pad(to_string(n.kind), 6),
                         pad_left(std::to_string(s.links), 5), pad_left(format_gbps(s.out), 9),
                         pad_left(format_gbps(s.in), 9), by_kind);
    }
  }

  if (links.empty()) return out + host_links_table(t);
  std::size_t link_w = 4;
  auto link_text = [&](const LinkView& l) {
    return fmt::format("{} {} {}", t.node(l.a).name, l.both_ways ? "<->" : "->", t.node(l.b).name);
  };
  for (const auto& l : links) link_w = std::max(link_w, link_text(l).size());
  // A latency column only when some link gives one (`latency=` in .topo); the others show the default they get.
  const bool latencies = std::any_of(links.begin(), links.end(), [](const LinkView& l) { return l.latency_us >= 0; });
  out += fmt::format("\n{}  {}  {}\n", pad("link", link_w), pad_left("GB/s", 9), latencies ? "kind  latency (µs)" : "kind");
  for (const auto& l : links) {
    std::string latency;
    if (latencies)
      latency = l.latency_us >= 0 ? "  " + format_gbps(l.latency_us)
                                  : fmt::format("  {} (default)", format_gbps(default_latency_us(l.kind)));
    out += fmt::format("{}  {}  {}{}\n", pad(link_text(l), link_w), pad_left(format_gbps(l.gbps), 9), l.kind, latency);
  }
  return out + host_links_table(t);
}

}  // namespace canopy
