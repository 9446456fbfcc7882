// Canopy's public API in one include: topologies (builder, .topo reader/writer, shipped names, subsets) and
// plans (canopy::plan, plan JSON, evaluation, the NCCL-style ring baseline).
// Later stages (codegen, runtime) add their headers here as they land.
#pragma once

#include "dsl/error.hpp"
#include "dsl/shipped_topologies.hpp"
#include "dsl/topo_reader.hpp"
#include "dsl/topo_writer.hpp"
#include "dsl/topology.hpp"
#include "dsl/topology_dot.hpp"
#include "dsl/topology_subset.hpp"
#include "dsl/topology_table.hpp"
#include "planner/collective.hpp"
#include "planner/plan.hpp"
#include "planner/plan_eval.hpp"
#include "planner/plan_json.hpp"
#include "planner/planner.hpp"
#include "planner/ring_baseline.hpp"
