// Hybrid broadcasts on GPUs (label gpu; SKIPPED with fewer than two): a share of the bytes crosses PCIe through
// pinned host memory (runtime/host_staging.hpp) while the kernels move the rest over NVLink. Every output element
// is checked: out of place and in place, roots changing between calls (the pinned ring's slots change writers),
// sizes that are not multiples of a chunk, shares from the topology and given, the caller's streams changing, and
// virtual ranks (several per GPU: device copies on the root's GPU, several targets per slot elsewhere).
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "dsl/shipped_topologies.hpp"
#include "runtime/collective_buffers.hpp"
#include "runtime/communicator.hpp"
#include "runtime/gpu_devices.hpp"
#include "runtime/jit.hpp"

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
  bool virtual_ranks;
  std::optional<double> share;  // unset: the topology's
};

class HybridBroadcastOnGpu : public ::testing::TestWithParam<HybridCase> {};

TEST_P(HybridBroadcastOnGpu, EveryElementArrives) {
  if (visible_gpu_count() < 2) GTEST_SKIP() << "fewer than two CUDA devices visible: the host path joins two GPUs";
  const HybridCase& c = GetParam();
  CommunicatorOptions o;
  o.topology = c.virtual_ranks ? four_with_host_links() : load_topology("h200x2");
  o.devices = {0, 1};
  o.hybrid_bytes = 1 << 20;
  o.hybrid_share = c.share;
  std::unique_ptr<Communicator> comm;
  const Status created = Communicator::create(o, &comm);
  ASSERT_TRUE(created.ok()) << created.message();
  const int ranks = comm->ranks();

  const std::uint64_t top = std::uint64_t{1} << 24;  // f32: 64 MiB per rank, many chunks through the ring
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  Jit jit(DiskCache::from_environment());
  PatternKernels patterns(jit, fmt::format("sm_{}{}", prop.major, prop.minor));
  std::unique_ptr<CollectiveBuffers> buffers;
  ASSERT_TRUE(CollectiveBuffers::create(*comm, top * 4, top * 4, patterns, &buffers).ok());
  std::vector<cudaStream_t> other(ranks);
  for (int r = 0; r < ranks; ++r) {
    ASSERT_EQ(cudaSetDevice(comm->device_of_rank(r)), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&other[r], cudaStreamNonBlocking), cudaSuccess);
  }
  // Ranks of one GPU share its stream.
  for (int r = 0; r < ranks; ++r)
    for (int q = 0; q < r; ++q)
      if (comm->device_of_rank(q) == comm->device_of_rank(r)) other[r] = other[q];

  int runs = 0;
  // 1 MiB; ~48 MiB, not a multiple of anything; 64 MiB. The topology's share stages nothing at 1 MiB (the host
  // path's fixed cost outweighs it), some of the others.
  for (std::uint64_t count : {std::uint64_t{1} << 18, std::uint64_t{12'582'917}, top})
    for (int repeat = 0; repeat < 4; ++repeat) {
      const int root = (repeat + runs) % ranks;
      const bool in_place = repeat % 2 == 1;
      const std::uint64_t staged = comm->staged_count(Collective::broadcast, count, DataType::f32, root);
      if (c.share || count > (std::uint64_t{1} << 18)) {
        ASSERT_GT(staged, 0u) << "count " << count << " root " << root;
      } else {
        EXPECT_EQ(staged, 0u) << "count " << count << " root " << root;
      }
      if (c.share) {
        EXPECT_NEAR(static_cast<double>(staged) / static_cast<double>(count), *c.share, 1e-2);
      }
      CheckSpec s{Collective::broadcast, DataType::f32, ReduceOp::sum, root, ranks, count, 0};
      s.seed = 104729u * static_cast<std::uint64_t>(++runs);
      CollectiveCall call;
      ASSERT_TRUE(buffers->set_up(s, in_place, &call).ok());
      if (repeat >= 2) {  // on other streams, once the inputs are written
        ASSERT_TRUE(buffers->synchronize().ok());
        call.streams = other;
      }
      const Status ran = comm->run(call);
      ASSERT_TRUE(ran.ok()) << ran.message();
      for (int r = 0; r < ranks; ++r) {
        ASSERT_EQ(cudaSetDevice(comm->device_of_rank(r)), cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(call.streams[r]), cudaSuccess);
      }
      CheckResult result;
      ASSERT_TRUE(buffers->check(s, call, &result).ok());
      EXPECT_EQ(result.wrong, 0u) << "count " << count << " root " << root << (in_place ? " in place" : "") << ": "
                                  << (result.examples.empty() ? "" : result.examples[0]);
      EXPECT_GT(result.checked, 0u);
    }
  for (int r = 0; r < ranks; ++r)
    if (r == 0 || other[r] != other[r - 1]) (void)cudaStreamDestroy(other[r]);
}

INSTANTIATE_TEST_SUITE_P(Cases, HybridBroadcastOnGpu,
                         ::testing::Values(HybridCase{"topology_share", false, std::nullopt},
                                           HybridCase{"half", false, 0.5},
                                           HybridCase{"virtual_ranks", true, std::nullopt},
                                           HybridCase{"virtual_ranks_quarter", true, 0.25}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(HybridBroadcastOnOneGpu, NothingIsStaged) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible";
  CommunicatorOptions o;
  o.topology = load_topology("h200x2");
  o.devices = {0};
  o.hybrid_bytes = 1 << 20;
  std::unique_ptr<Communicator> comm;
  const Status created = Communicator::create(o, &comm);
  ASSERT_TRUE(created.ok()) << created.message();
  EXPECT_EQ(comm->staged_count(Collective::broadcast, std::uint64_t{1} << 24, DataType::f32, 0), 0u);
}

}  // namespace
}  // namespace canopy
