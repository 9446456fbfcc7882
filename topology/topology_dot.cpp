// topology_dot: takes a Topology, returns DOT text; deterministic (nodes and links in the topology's order).
#include "topology/topology_dot.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "topology/topo_writer.hpp"

namespace canopy {

std::string link_kind_colour(const std::string& kind) {
  auto starts = [&](std::string_view p) { return kind.rfind(p, 0) == 0; };
  if (starts("nvlink")) return "#2e7d32";
  if (starts("pcie")) return "#1565c0";
  if (starts("qpi") || starts("upi") || starts("xgmi") || starts("smp")) return "#6a1b9a";
  if (starts("ib") || starts("eth") || starts("roce") || starts("net")) return "#ef6c00";
  return "#555555";
}

std::string topology_dot(const Topology& t) {
  const auto links = paired_links(t);
  double max_gbps = 0;
  for (const auto& l : links) max_gbps = std::max(max_gbps, l.gbps);

  std::string out = fmt::format("digraph \"{}\" {{\n", t.name());
  out += "  graph [layout=neato, overlap=false, splines=true, sep=\"+12\", fontname=\"Helvetica\"];\n";
  out += "  node [fontname=\"Helvetica\", style=filled];\n";
  out += "  edge [fontname=\"Helvetica\", fontsize=10];\n";
  std::vector<std::string> host_tooltip(t.nodes().size());  // a GPU's host link: no edge, as it is no graph link
  for (const HostLink& h : t.host_links())
    host_tooltip[h.gpu.index] =
        fmt::format(", tooltip=\"host link {} GB/s{}\"", format_gbps(h.gbps), h.kind.empty() ? "" : " " + h.kind);
  for (std::size_t i = 0; i < t.nodes().size(); ++i) {
    const Node& n = t.nodes()[i];
    if (n.kind == NodeKind::gpu)
      out += fmt::format("  \"{}\" [shape=box, fillcolor=\"#c8e6c9\"{}];\n", n.name, host_tooltip[i]);
    else
      out += fmt::format("  \"{}\" [shape=ellipse, fillcolor=\"#e0e0e0\", fontsize=10];\n", n.name);
  }
  for (const auto& l : links) {
    const double width = 1.0 + 4.0 * l.gbps / max_gbps;
    out += fmt::format("  \"{}\" -> \"{}\" [{}label=\"{}\", penwidth={:.2f}, color=\"{}\", tooltip=\"{} GB/s {}\"];\n",
                       t.node(l.a).name, t.node(l.b).name, l.both_ways ? "dir=both, " : "", format_gbps(l.gbps),
                       width, link_kind_colour(l.kind), format_gbps(l.gbps), l.kind.empty() ? "link" : l.kind);
  }
  out += "}\n";
  return out;
}

}  // namespace canopy
