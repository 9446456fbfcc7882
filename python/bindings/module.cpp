// NB_MODULE(_canopy): canopy::Error becomes canopy.Error (its message kept whole), then every part is bound.
#include <nanobind/nanobind.h>

#include "core/error.hpp"
#include "core/version.hpp"
#include "python/bindings/bindings.hpp"

namespace nb = nanobind;

NB_MODULE(_canopy, m) {
  m.doc() = "Canopy's C++ API: topologies, plans, simulation, kernels and collective-algorithm programs";
  m.attr("__version__") = CANOPY_VERSION;
  nb::exception<canopy::Error>(m, "Error");
  canopy::python::bind_topology(m);
  canopy::python::bind_plan(m);
  canopy::python::bind_simulate(m);
  canopy::python::bind_kernels(m);
  canopy::python::bind_algorithms(m);
}
