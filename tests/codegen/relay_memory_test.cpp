// The relays' rings (codegen/relay_memory.hpp): a relay GPU's memory is one ring of fifo_depth chunk slots per block
// for every tree edge it forwards, and fit_relay_memory keeps it within the cap by halving the depth, then the chunk.
#include "codegen/relay_memory.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "codegen/lower.hpp"
#include "core/error.hpp"
#include "planner/planner.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/plan_eval.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

struct Tenant {
  Plan plan;
  CodegenOptions options;
};

Tenant tenant(const char* topology, std::vector<std::string> gpus, Collective c) {
  const Topology t = load_topology(topology);
  PlanOptions po;
  po.gpus = std::move(gpus);
  po.relay = true;
  Tenant out{plan(t, c, po), {}};
  out.options.relay_gpus = relay_gpus_of(out.plan, t);
  return out;
}

std::int64_t most(const std::map<std::string, std::int64_t>& bytes) {
  std::int64_t m = 0;
  for (const auto& [gpu, b] : bytes) m = std::max(m, b);
  return m;
}

TEST(RelayMemory, ARingIsDepthSlotsOfAChunkPerBlockForEveryEdgeForwarded) {
  for (Collective c : {Collective::broadcast, Collective::allreduce}) {
    const Tenant x = tenant("dgx1-v100", {"gpu0", "gpu1", "gpu4", "gpu5"}, c);
    const Schedule s = lower(x.plan, x.options);
    std::map<std::string, std::int64_t> expected;
    for (const Lane& lane : s.lanes)
      if (s.is_relay(lane.rank))
        expected[s.relays[lane.rank - s.ranks].gpu] += lane.blocks * s.options.fifo_depth * s.options.chunk_bytes;
    EXPECT_EQ(relay_memory(s), expected) << to_string(c);
    EXPECT_FALSE(expected.empty());
    // the ranks' scratch is not counted, and a schedule without relays has none
    EXPECT_TRUE(relay_memory(lower(plan(load_topology("dgx1-v100"), c), CodegenOptions{})).empty());
  }
}

TEST(RelayMemory, AtTheCapNothingChangesAndOneByteUnderHalvesTheDepthThenTheChunk) {
  const Tenant x = tenant("dgx1-v100", {"gpu0", "gpu1"}, Collective::allreduce);
  const std::int64_t need = most(relay_memory(lower(x.plan, x.options)));
  ASSERT_GT(need, 0);
  const CodegenOptions same = fit_relay_memory(x.plan, x.options, need);
  EXPECT_EQ(same.fifo_depth, 4);
  EXPECT_EQ(same.chunk_bytes, 256 * 1024);
  const CodegenOptions shallower = fit_relay_memory(x.plan, x.options, need - 1);
  EXPECT_EQ(shallower.fifo_depth, 2);  // 4 slots halve to 2: half the memory
  EXPECT_EQ(shallower.chunk_bytes, 256 * 1024);
  EXPECT_EQ(most(relay_memory(lower(x.plan, shallower))), need / 2);
  const CodegenOptions smaller = fit_relay_memory(x.plan, x.options, need / 2 - 1);
  EXPECT_EQ(smaller.fifo_depth, 2);
  EXPECT_EQ(smaller.chunk_bytes, 128 * 1024);  // then the chunk halves
  EXPECT_LE(most(relay_memory(lower(x.plan, smaller))), need / 2 - 1);
  // The smallest shape: 2 slots of 16 KiB; below what that needs, the error names the relay and the cap.
  const std::int64_t least = need / 2 / 16;
  EXPECT_EQ(fit_relay_memory(x.plan, x.options, least).chunk_bytes, 16 * 1024);
  try {
    fit_relay_memory(x.plan, x.options, least - 1);
    ADD_FAILURE() << "a cap below the smallest rings was taken";
  } catch (const Error& e) {
    EXPECT_THAT(
        e.what(),
        HasSubstr("for its rings even at 16 KiB chunks and 2 slots (24 blocks a rank), over CANOPY_RELAY_MEMORY="));
    EXPECT_THAT(e.what(), HasSubstr("raise the cap, or give fewer blocks (CANOPY_BLOCKS)"));
  }
  // Without relays the options come back as they were.
  CodegenOptions plain;
  EXPECT_EQ(to_string(fit_relay_memory(plan(load_topology("h200x2"), Collective::allreduce), plain, 1)),
            to_string(plain));
}

TEST(RelayMemory, TheCapComesFromTheEnvironment) {
  ::unsetenv("CANOPY_RELAY_MEMORY");
  EXPECT_EQ(relay_memory_cap_from_environment(), 64ll << 20);
  ::setenv("CANOPY_RELAY_MEMORY", "1GiB", 1);
  EXPECT_EQ(relay_memory_cap_from_environment(), 1ll << 30);
  ::setenv("CANOPY_RELAY_MEMORY", "512KiB", 1);
  EXPECT_THROW(
      {
        try {
          relay_memory_cap_from_environment();
        } catch (const Error& e) {
          EXPECT_THAT(e.what(), HasSubstr("CANOPY_RELAY_MEMORY=512KiB: give each relay GPU at least 1 MiB"));
          throw;
        }
      },
      Error);
  ::setenv("CANOPY_RELAY_MEMORY", "lots", 1);
  EXPECT_THROW(relay_memory_cap_from_environment(), Error);
  ::unsetenv("CANOPY_RELAY_MEMORY");
}

}  // namespace
}  // namespace canopy
