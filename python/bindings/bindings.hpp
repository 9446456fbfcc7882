// The pieces of the `canopy._canopy` extension module (python/bindings/): each file binds one part of the public C++
// API, and module.cpp calls them in order. The Python package (python/canopy/) wraps them for callers.
#pragma once

#include <nanobind/nanobind.h>

#include <string>
#include <vector>

#include "planner/plan.hpp"
#include "topology/topology.hpp"

namespace canopy::python {

// A plan with the topology it was made on (evaluations, pictures and kernels need both).
struct BoundPlan {
  Topology topology;
  Plan plan;
};

void bind_topology(nanobind::module_& m);    // topology_bindings.cpp
void bind_plan(nanobind::module_& m);        // plan_bindings.cpp
void bind_simulate(nanobind::module_& m);    // simulate_bindings.cpp
void bind_kernels(nanobind::module_& m);     // kernel_bindings.cpp
void bind_algorithms(nanobind::module_& m);  // algorithm_bindings.cpp

}  // namespace canopy::python
