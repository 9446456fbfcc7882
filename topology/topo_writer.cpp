// write_topo: takes a Topology, returns its canonical .topo text.
#include "topology/topo_writer.hpp"

#include <fmt/format.h>

namespace canopy {

std::string format_gbps(double gbps) { return fmt::format("{}", gbps); }

namespace {

// Length of the leading run of GPUs named gpu0, gpu1, ... that `gpus N` can declare at once.
std::size_t gpus_prefix(const Topology& t) {
  std::size_t n = 0;
  while (n < t.nodes().size() && t.nodes()[n].kind == NodeKind::gpu && t.nodes()[n].name == fmt::format("gpu{}", n))
    ++n;
  return n;
}

}  // namespace

std::string write_topo(const Topology& t) {
  std::string out = fmt::format("topology {}\n", t.name());
  const std::size_t prefix = gpus_prefix(t);
  if (prefix > 0) out += fmt::format("gpus {}\n", prefix);
  for (std::size_t i = prefix; i < t.nodes().size(); ++i)
    out += fmt::format("{} {}\n", to_string(t.nodes()[i].kind), t.nodes()[i].name);
  if (!t.arcs().empty()) out += "\n";
  for (const LinkView& l : paired_links(t)) {
    out += fmt::format("{} {} {} {}", l.both_ways ? "link" : "arc", t.node(l.a).name, t.node(l.b).name,
                       format_gbps(l.gbps));
    if (!l.kind.empty()) out += " " + l.kind;
    if (l.latency_us >= 0) out += " latency=" + format_gbps(l.latency_us);  // only when given: unset stays unset
    out += "\n";
  }
  if (!t.host_links().empty()) out += "\n";
  for (const HostLink& h : t.host_links()) {
    out += fmt::format("host {} {}", t.node(h.gpu).name, format_gbps(h.gbps));
    if (!h.kind.empty()) out += " " + h.kind;
    out += "\n";
  }
  return out;
}

}  // namespace canopy
