// launch_grid: the model of a kernel's grid that the launch shape is chosen on gives, without lowering, exactly the
// devices (ranks, lanes, blocks) lower() and lower_program() give, for every shipped topology and collective and every
// shipped algorithm, over blocks per rank and placements, fused allreduce roots included; it throws what lowering
// throws about the plan and options.
#include "codegen/launch_grid.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "codegen/lower.hpp"
#include "codegen/lower_program.hpp"
#include "core/error.hpp"
#include "dsl/algorithms/shipped_algorithms.hpp"
#include "dsl/msccl_xml.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/planner.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

constexpr Collective kAll[] = {Collective::broadcast, Collective::reduce, Collective::allreduce,
                               Collective::allgather, Collective::reducescatter};

// Each device's rank list, lane count and grid, as text: what the two must agree on.
std::string grid_text(const Schedule& s) {
  std::string out;
  for (const DeviceSchedule& d : s.devices) {
    int lanes_blocks = 0;
    for (int id : d.lanes) lanes_blocks += s.lanes[id].blocks;
    out += fmt::format("device {}: ranks {} lanes {} blocks {} (lanes' {})\n", d.device, fmt::join(d.ranks, ","),
                       d.lanes.size(), d.blocks, lanes_blocks);
  }
  return out;
}

std::uint64_t lowerings_since(std::uint64_t before) { return lowering_count() - before; }

TEST(LaunchGrid, EqualsTheLoweredGridForEveryShippedPlan) {
  int compared = 0;
  for (const ShippedTopology& t : shipped_topologies()) {
    const Topology topology = load_topology(std::string(t.name));
    for (Collective c : kAll) {
      const Plan p = plan(topology, c);
      const int n = static_cast<int>(p.ranks.size());
      for (int devices : {n, 1, (n + 1) / 2})
        for (int blocks : {1, 2, 3, 5, 12, 24, 47})
          for (bool own : {false, true}) {
            CodegenOptions o;
            o.blocks_per_rank = blocks;
            o.own_buffers_only = own;
            o.device_of_rank = block_placement(n, devices);
            const std::uint64_t before = lowering_count();
            const Schedule grid = launch_grid(p, o);
            EXPECT_EQ(lowerings_since(before), 0u) << "the model lowers nothing";
            EXPECT_EQ(grid_text(grid), grid_text(lower(p, o)))
                << t.name << " " << to_string(c) << " on " << devices << " devices, " << blocks << " blocks per rank"
                << (own ? ", own buffers" : "");
            ++compared;
          }
    }
  }
  EXPECT_GT(compared, 1000);
}

TEST(LaunchGrid, EqualsTheLoweredGridOfEveryShippedAlgorithm) {
  const Topology hgx = load_topology("hgx-h200");
  const Topology two_hosts = load_topology("dgx1-v100-x2");
  for (const algo::ShippedAlgorithm& a : algo::shipped_algorithms())
    for (int n : {1, 2, 3, 4, 8, 16}) {
      if (!a.supports(n)) continue;
      const algo::Program program = a.build(n);
      const Topology& topology = n > 8 ? two_hosts : hgx;
      for (int devices : {n, 1})
        for (int blocks : {1, 4, 7, 24}) {
          CodegenOptions o;
          o.blocks_per_rank = blocks;
          o.device_of_rank = block_placement(n, devices);
          EXPECT_EQ(grid_text(launch_grid(program, o)), grid_text(lower_program(program, o, topology)))
              << a.name << " on " << n << " ranks, " << devices << " devices, " << blocks << " blocks per rank";
        }
    }
}

TEST(LaunchGrid, EqualsTheLoweredGridOfEveryMscclToolsProgram) {
  // msccl-tools' programs use many channels per rank; those that lower on one NVSwitch machine are compared.
  const Topology hgx = load_topology("hgx-h200");
  const Topology dgx2 = load_topology("dgx2");
  int compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(testing::source_dir() / "tests/data/msccl-tools")) {
    if (entry.path().extension() != ".xml") continue;
    const algo::Program program = algo::from_msccl_xml(testing::read_file(entry.path()), entry.path().string());
    const int n = program.ranks();
    if (n > 16) continue;
    for (int blocks : {1, 24}) {
      CodegenOptions o;
      o.blocks_per_rank = blocks;
      o.device_of_rank = block_placement(n, (n + 1) / 2);
      Schedule lowered;
      try {
        lowered = lower_program(program, o, n > 8 ? dgx2 : hgx);
      } catch (const Error&) {
        continue;  // known wrong (tests/dsl/msccl_corpus_test.cpp) or more than the machine offers
      }
      EXPECT_EQ(grid_text(launch_grid(program, o)), grid_text(lowered)) << entry.path() << ", " << blocks << " blocks";
      ++compared;
    }
  }
  EXPECT_GT(compared, 10);
}

TEST(LaunchGrid, FusedAllreduceRootsLeaveTheGridAsTheyLeaveTheSchedule) {
  // h200x2's allreduce roots one in-tree and one out-tree at each rank: fused at equal blocks, 2 lanes a rank.
  const Plan p = plan(load_topology("h200x2"), Collective::allreduce);
  const Schedule lowered = lower(p, CodegenOptions{});
  const Schedule grid = launch_grid(p, CodegenOptions{});
  EXPECT_LT(grid.lanes.size(), static_cast<std::size_t>(p.trees.size() * p.ranks.size()));
  EXPECT_EQ(grid.lanes.size(), lowered.lanes.size());
}

TEST(LaunchGrid, RefusesWhatLoweringRefuses) {
  const Plan p = plan(load_topology("h200x2"), Collective::allreduce);
  CodegenOptions o;
  o.blocks_per_rank = 0;
  std::string lowered, modelled;
  try {
    lower(p, o);
  } catch (const Error& e) {
    lowered = e.what();
  }
  try {
    launch_grid(p, o);
  } catch (const Error& e) {
    modelled = e.what();
  }
  EXPECT_FALSE(lowered.empty());
  EXPECT_EQ(modelled, lowered);
  Plan two_parents = p;
  two_parents.ranks.push_back(two_parents.ranks[0]);
  EXPECT_THROW(launch_grid(two_parents, CodegenOptions{}), Error);
}

}  // namespace
}  // namespace canopy
