// canopy.Algorithm: collective-algorithm programs (dsl/algorithm.hpp): the shipped ones by name, MSCCL-IR XML in and
// out (as msccl-tools writes it), and verify(), the symbolic checker's findings as "PROGRAM:LINE: error: MESSAGE".
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "dsl/algorithm.hpp"
#include "dsl/algorithm_check.hpp"
#include "dsl/algorithms/shipped_algorithms.hpp"
#include "dsl/msccl_xml.hpp"
#include "python/bindings/bindings.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace canopy::python {

void bind_algorithms(nb::module_& m) {
  nb::class_<algo::Program>(m, "Algorithm", "A collective-algorithm program (docs/algorithms.md)")
      .def_static("shipped", &algo::shipped_algorithm, "name"_a, "ranks"_a,
                  "A shipped algorithm (canopy.shipped_algorithms()) for this many ranks")
      .def_static(
          "from_msccl",
          [](const std::string& xml, const std::string& origin) { return algo::from_msccl_xml(xml, origin); },
          "xml"_a, "origin"_a = "<xml>", "Reads MSCCL-IR XML text; errors name ORIGIN:LINE")
      .def_static(
          "read_msccl",
          [](const std::string& path) {
            std::ifstream in(path, std::ios::binary);
            if (!in) throw Error("cannot read '" + path + "': check the path");
            std::stringstream text;
            text << in.rdbuf();
            return algo::from_msccl_xml(text.str(), path);
          },
          "path"_a, "Reads an MSCCL-IR XML file (msccl-tools' output)")
      .def_prop_ro("name", &algo::Program::name)
      .def_prop_ro("goal", &algo::Program::goal, "allreduce, allgather, ..., or a custom goal's name")
      .def_prop_ro("ranks", &algo::Program::ranks)
      .def_prop_ro("chunks", &algo::Program::chunks)
      .def_prop_ro("statements", [](const algo::Program& p) { return p.ops().size(); })
      .def("to_msccl", &algo::to_msccl_xml, "MSCCL-IR XML, as MSCCL's runtime reads it")
      .def(
          "verify",
          [](const algo::Program& p, const std::optional<Topology>& topology) {
            std::vector<std::string> out;
            for (const algo::Diagnostic& d : algo::check_program(p, topology ? &*topology : nullptr))
              out.push_back(algo::to_string(d, p.name()));
            return out;
          },
          "topology"_a = nb::none(),
          "Every problem the symbolic checker finds (empty: it verifies), each transfer also checked against the "
          "topology's links when one is given")
      .def("__repr__", [](const algo::Program& p) {
        return "Algorithm('" + p.name() + "', " + p.goal() + ", " + std::to_string(p.ranks()) + " ranks, " +
               std::to_string(p.ops().size()) + " statements)";
      });
  m.def(
      "shipped_algorithms",
      [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const algo::ShippedAlgorithm& a : algo::shipped_algorithms()) out.emplace_back(a.name, a.summary);
        return out;
      },
      "The shipped algorithms: (name, summary) pairs");
}

}  // namespace canopy::python
