// lower: Plan + CodegenOptions -> Schedule. Checks that the plan is one codegen can run (every tree spans the
// ranks with the direction its collective needs), weighs trees with integer weights, gives each tree lanes
// (thread blocks) by its fraction, and writes every lane's steps and the counters and FIFOs they use.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "topology/topology.hpp"
#include "codegen/schedule.hpp"
#include "planner/plan.hpp"

namespace canopy {

// Every generated kernel takes DeviceArgs<ranks> by value (templates/device_args.cuh: 24 bytes, then 40 a rank: a
// launch counter's address and four buffer addresses), and a kernel's parameters fit 32,764 bytes (CUDA 12.1 and
// later, Volta and later): 818 ranks. A larger plan is refused where it is lowered, naming this bound.
constexpr int kKernelParameterBytes = 32764;
constexpr int kMaxCodegenRanks = (kKernelParameterBytes - 24) / 40;

// Throws canopy::Error naming the tree and edge when the plan cannot be lowered.
Schedule lower(const Plan& plan, const CodegenOptions& options);

// How many schedules lower() and lower_program() have made in this process. A kernel is lowered once: choosing its
// launch shape works on a model of the grid instead (codegen/launch_grid.hpp); the tests count with this.
std::uint64_t lowering_count();
// Adds one to lowering_count(): lower() and lower_program() call it.
void count_lowering();

// Fills s.devices from s.lanes and s.options.device_of_rank: each device's ranks, their lanes in (rank, lane id)
// order, and its grid size. Throws when a device in 0..max has no rank.
void place_lanes_on_devices(Schedule& s);

// Throws canopy::Error naming the tree, the edge and `fix` when an edge of `plan` crosses a GPU of `topology` that is
// not a rank (a plan made with --relay) and not one of `allowed`: whatever runs the plan must give every relay GPU it
// crosses forwarding participants (CodegenOptions::relay_gpus, which relay_gpus_of in planner/plan_eval.hpp names).
void check_relay_gpus(const Plan& plan, const Topology& topology, const std::vector<std::string>& allowed,
                      std::string_view fix);
// check_relay_gpus with none allowed: for kernels built without relay participants.
void check_no_relay_gpus(const Plan& plan, const Topology& topology);

}  // namespace canopy
