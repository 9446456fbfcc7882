// canopy.Topology: shipped topologies by name, .topo text and files, this machine's (detect), its GPUs, switches and
// links as plain Python data, a subset of its GPUs, and its .topo and DOT text.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "python/bindings/bindings.hpp"
#include "runtime/detect/detect_topology.hpp"
#include "topology/shipped_topologies.hpp"
#include "topology/topo_reader.hpp"
#include "topology/topo_writer.hpp"
#include "topology/topology_dot.hpp"
#include "topology/topology_subset.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace canopy::python {
namespace {

std::vector<std::string> switch_names(const Topology& t) {
  std::vector<std::string> out;
  for (const Node& n : t.nodes())
    if (n.kind == NodeKind::relay) out.push_back(n.name);
  return out;
}

nb::list link_list(const Topology& t) {
  nb::list out;
  for (const Arc& a : t.arcs()) {
    nb::dict d;
    d["from"] = t.node(a.from).name;
    d["to"] = t.node(a.to).name;
    d["gbps"] = a.gbps;
    d["kind"] = a.kind;
    d["latency_us"] = latency_of(a);
    out.append(d);
  }
  return out;
}

// `gpus`: names or indices as text, resolved as `--gpus` is.
Topology subset(const Topology& t, const std::vector<std::string>& gpus) {
  std::string list;
  for (const std::string& g : gpus) list += (list.empty() ? "" : ",") + g;
  return select_gpus(t, parse_gpu_list(t, list));
}

}  // namespace

void bind_topology(nb::module_& m) {
  nb::class_<Topology>(m, "Topology", "A machine's GPUs, switches and links (docs/topology.md)")
      .def_static("load", &load_topology, "name_or_path"_a,
                  "A shipped topology by name (canopy.shipped_topologies()) or a .topo file by path")
      .def_static(
          "from_text", [](const std::string& text, const std::string& origin) { return read_topo(text, origin); },
          "text"_a, "origin"_a = "<text>", "Reads .topo text; errors name ORIGIN:LINE:COLUMN")
      .def_static("from_file", [](const std::string& path) { return read_topo_file(path); }, "path"_a,
                  "Reads a .topo file")
      .def_prop_ro("name", &Topology::name)
      .def_prop_ro("gpus", &Topology::gpu_names, "GPU names in rank order")
      .def_prop_ro("switches", &switch_names, "switches (NVSwitch, PCIe, CPU, NIC): they forward, never ranks")
      .def_prop_ro("links", &link_list, "every directed link: from, to, gbps, kind, latency_us")
      .def("subset", &subset, "gpus"_a,
           "The topology seen by these GPUs (names or indices as text): others dropped, switches between kept")
      .def("to_topo", &write_topo, "The .topo text that reads back to this topology")
      .def("to_dot", &topology_dot, "Graphviz DOT: GPUs as boxes, switches as ellipses, links by kind")
      .def("__eq__", [](const Topology& a, const Topology& b) { return a == b; })
      .def("__repr__", [](const Topology& t) {
        return "Topology('" + t.name() + "', " + std::to_string(t.gpu_count()) + " GPUs, " +
               std::to_string(switch_names(t).size()) + " switches, " + std::to_string(t.arcs().size()) + " links)";
      });
  m.def(
      "shipped_topologies",
      [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const ShippedTopology& s : shipped_topologies()) out.emplace_back(s.name, s.description);
        return out;
      },
      "The shipped topologies: (name, description) pairs, sorted by name");
  m.def(
      "detect", [](const std::vector<int>& devices, bool measure) { return detect_topology(devices, measure).topology; },
      "devices"_a = std::vector<int>{}, "measure"_a = false,
      "This machine's GPUs as a Topology (NVML, else CUDA); raises canopy.Error without a GPU");
}

}  // namespace canopy::python
