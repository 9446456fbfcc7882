// plan_dot: takes a Topology and a Plan, returns DOT text (deterministic).
#include "planner/plan_dot.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace canopy {

std::string plan_dot(const Topology& t, const Plan& plan) {
  static const char* kPalette[] = {"#e41a1c", "#377eb8", "#4daf4a", "#984ea3", "#ff7f00", "#a65628",
                                   "#f781bf", "#17becf", "#bcbd22", "#1b9e77", "#d95f02", "#7570b3"};
  std::string out = fmt::format("digraph \"{} {}\" {{\n", plan.topology, to_string(plan.collective));
  out += "  graph [layout=neato, overlap=false, splines=true, sep=\"+14\", fontname=\"Helvetica\"];\n";
  out += "  node [fontname=\"Helvetica\", style=filled];\n  edge [fontname=\"Helvetica\", fontsize=9];\n";
  for (const Node& n : t.nodes()) {
    const bool rank = std::find(plan.ranks.begin(), plan.ranks.end(), n.name) != plan.ranks.end();
    out += fmt::format("  \"{}\" [shape={}, fillcolor=\"{}\"];\n", n.name, n.kind == NodeKind::gpu ? "box" : "ellipse",
                       rank ? "#c8e6c9" : "#e0e0e0");
  }
  for (const LinkView& l : paired_links(t))
    out += fmt::format("  \"{}\" -> \"{}\" [{}color=\"#d0d0d0\", penwidth=4, arrowhead=none];\n", t.node(l.a).name,
                       t.node(l.b).name, l.both_ways ? "dir=none, " : "");
  for (std::size_t i = 0; i < plan.trees.size(); ++i) {
    const Tree& tree = plan.trees[i];
    const char* colour = kPalette[i % std::size(kPalette)];
    for (const TreeEdge& e : tree.edges) {
      const std::vector<std::string> hops = e.path.empty() ? std::vector<std::string>{e.from, e.to} : e.path;
      for (std::size_t h = 0; h + 1 < hops.size(); ++h)
        out += fmt::format("  \"{}\" -> \"{}\" [color=\"{}\", penwidth=1.5{}];\n", hops[h], hops[h + 1], colour,
                           h == 0 ? fmt::format(", label=\"t{} {:.3g}\", fontcolor=\"{}\"", i, tree.fraction, colour)
                                  : std::string());
    }
  }
  out += "}\n";
  return out;
}

}  // namespace canopy
