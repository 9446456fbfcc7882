// Canopy's public API in one include: topologies (builder, .topo reader/writer, shipped names, subsets).
// Later stages (plan, codegen, runtime) add their headers here as they land.
#pragma once

#include "dsl/error.hpp"
#include "dsl/shipped_topologies.hpp"
#include "dsl/topo_reader.hpp"
#include "dsl/topo_writer.hpp"
#include "dsl/topology.hpp"
#include "dsl/topology_dot.hpp"
#include "dsl/topology_subset.hpp"
#include "dsl/topology_table.hpp"
