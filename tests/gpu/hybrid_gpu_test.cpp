// Hybrid broadcasts and reduces on GPUs (label gpu; SKIPPED with fewer than two): a share of the bytes crosses PCIe
// through pinned host memory (runtime/offload/host_staging.hpp) while the kernels move the rest over NVLink. Every output
// element is checked: out of place and in place, roots changing between calls (the pinned ring's slots change
// writers and readers), sizes that are not multiples of a chunk, shares from the topology and given, the caller's
// streams changing, virtual ranks (several per GPU: device copies or sources read in place on the root's GPU,
// several targets or sources per slot elsewhere), and for reduces several element types and operators.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "topology/shipped_topologies.hpp"
#include "bench/harness/collective_buffers.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "tests/gpu/checked_call.hpp"

namespace canopy {
namespace {

// Four GPUs, all joined by NVLink, each with a host link: run on two devices, two virtual ranks each.
Topology four_with_host_links() {
  Topology t("quad-host");
  const std::vector<NodeId> g = t.gpus(4);
  for (int a = 0; a < 4; ++a) {
    t.host_link(g[a], {50, "pcie5"});
    for (int b = a + 1; b < 4; ++b) t.link(g[a], g[b], {100, "nvlink4"});
  }
  return t;
}

struct HybridCase {
  const char* name;
  Collective collective;
  bool virtual_ranks;
  std::optional<double> share;  // unset: the topology's
};

class HybridOnGpu : public ::testing::TestWithParam<HybridCase> {};

TEST_P(HybridOnGpu, EveryElementArrives) {
  if (visible_gpu_count() < 2) GTEST_SKIP() << "fewer than two CUDA devices visible: the host path joins two GPUs";
  const HybridCase& c = GetParam();
  CommunicatorOptions o;
  o.topology = c.virtual_ranks ? four_with_host_links() : load_topology("h200x2");
  o.devices = {0, 1};
  o.hybrid_bytes = 1 << 20;
  o.hybrid_share = c.share;
  o.engine_bytes = 0;  // the kernels beside the host path (copy_engine_gpu_test.cpp has the engines beside it)
  std::unique_ptr<Communicator> comm;
  const Status created = Communicator::create(o, &comm);
  ASSERT_TRUE(created.ok()) << created.message();
  const int ranks = comm->ranks();

  const std::uint64_t top = std::uint64_t{1} << 24;  // f32: 64 MiB per rank, many chunks through the ring
  CheckedCallSetup setup;                            // ranks of one GPU share its second stream
  ASSERT_TRUE(setup.make(*comm, top * 4));

  int runs = 0;
  // 1 MiB; ~48 MiB, not a multiple of anything; 64 MiB.
  for (std::uint64_t count : {std::uint64_t{1} << 18, std::uint64_t{12'582'917}, top})
    for (int repeat = 0; repeat < 4; ++repeat) {
      const int root = (repeat + runs) % ranks;
      const bool in_place = repeat % 2 == 1;
      // Reduces rotate through element types and operators, over the same bytes.
      static constexpr std::pair<DataType, ReduceOp> kKinds[] = {{DataType::f32, ReduceOp::sum},
                                                                 {DataType::i32, ReduceOp::max},
                                                                 {DataType::bf16, ReduceOp::sum},
                                                                 {DataType::f64, ReduceOp::prod}};
      const auto [dtype, op] =
          c.collective == Collective::reduce ? kKinds[repeat] : std::pair{DataType::f32, ReduceOp::sum};
      const std::uint64_t elements = count * 4 / static_cast<std::uint64_t>(size_of(dtype));
      const std::uint64_t staged = comm->staged_count(c.collective, elements, dtype, root);
      // Given a share, every size stages; the topology's share stages at 64 MiB and nothing at 1 MiB; on h200x2 at
      // ~48 MiB a broadcast stages and a reduce, whose fixed cost is larger, does not.
      if (c.share || count == top) {
        ASSERT_GT(staged, 0u) << "count " << elements << " root " << root;
      } else if (count == (std::uint64_t{1} << 18)) {
        EXPECT_EQ(staged, 0u) << "count " << elements << " root " << root;
      } else if (!c.virtual_ranks) {
        EXPECT_EQ(staged > 0, c.collective == Collective::broadcast) << "count " << elements << " root " << root;
      }
      if (c.share) {
        EXPECT_NEAR(static_cast<double>(staged) / static_cast<double>(elements), *c.share, 1e-2);
      }
      CheckSpec s{c.collective, dtype, op, root, ranks, elements, 0};
      s.seed = 104729u * static_cast<std::uint64_t>(++runs);
      EXPECT_TRUE(run_checked_call(*comm, setup.buffers(), s, in_place, repeat >= 2 ? &setup.other_streams() : nullptr))
          << to_string(c.collective) << " " << to_string(dtype) << " " << to_string(op) << " count " << elements
          << " root " << root << (in_place ? " in place" : "") << (repeat >= 2 ? " on other streams" : "");
    }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HybridOnGpu,
    ::testing::Values(HybridCase{"broadcast_topology_share", Collective::broadcast, false, std::nullopt},
                      HybridCase{"broadcast_half", Collective::broadcast, false, 0.5},
                      HybridCase{"broadcast_virtual_ranks", Collective::broadcast, true, std::nullopt},
                      HybridCase{"broadcast_virtual_ranks_quarter", Collective::broadcast, true, 0.25},
                      HybridCase{"reduce_topology_share", Collective::reduce, false, std::nullopt},
                      HybridCase{"reduce_half", Collective::reduce, false, 0.5},
                      HybridCase{"reduce_virtual_ranks", Collective::reduce, true, std::nullopt},
                      HybridCase{"reduce_virtual_ranks_quarter", Collective::reduce, true, 0.25}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(HybridOnOneGpu, NothingIsStaged) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible";
  CommunicatorOptions o;
  o.topology = load_topology("h200x2");
  o.devices = {0};
  o.hybrid_bytes = 1 << 20;
  std::unique_ptr<Communicator> comm;
  const Status created = Communicator::create(o, &comm);
  ASSERT_TRUE(created.ok()) << created.message();
  EXPECT_EQ(comm->staged_count(Collective::broadcast, std::uint64_t{1} << 24, DataType::f32, 0), 0u);
  EXPECT_EQ(comm->staged_count(Collective::reduce, std::uint64_t{1} << 24, DataType::f32, 0), 0u);
}

}  // namespace
}  // namespace canopy
