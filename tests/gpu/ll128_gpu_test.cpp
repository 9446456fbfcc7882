// The LL128 protocol (templates/ll128.cuh) on real GPUs (label gpu; SKIPPED without one): every collective x dtype
// x op through a Communicator whose LL128 limit covers every count below and whose LL protocol is off, so calls of
// 1 element to a few MiB all take 128-byte lines, in and out of place (NCCL's in-place layouts leave allgather's and
// reduce-scatter's buffers 4-byte aligned at odd counts: the kernels' element-wise path). Pattern inputs, outputs
// poisoned, every element of every rank checked. Topologies with more ranks than GPUs run as virtual ranks: h200x2's
// 2 ranks (on two GPUs where the machine has them), hgx-h200's 8 and dgx2's 16 on one GPU.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "topology/shipped_topologies.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "tests/gpu/checked_sweep.hpp"
#include "tests/gpu/topology_collective_param.hpp"

namespace canopy {
namespace {

struct Ll128Case {
  const char* name;
  const char* topology;
  std::int64_t ll128_bytes;  // the buffers of 16 virtual ranks on one GPU stay under the runtime's 1 GiB
  std::uint64_t largest;     // f32 elements of the largest count
};
const Ll128Case kCases[] = {
    {"h200x2", "h200x2", (std::int64_t{8} << 20) + 64, (std::uint64_t{1} << 20) + 3},
    {"hgx_h200", "hgx-h200", std::int64_t{1} << 20, (std::uint64_t{1} << 16) + 3},
    {"dgx2", "dgx2", std::int64_t{256} << 10, 4099},
};

using Param = testing::TopologyCollective;

class LL128OnGpu : public ::testing::TestWithParam<Param> {};

TEST_P(LL128OnGpu, MatchesTheHostReference) {
  const int gpus = visible_gpu_count();
  if (gpus == 0) GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  const Ll128Case& tc = kCases[GetParam().topology];
  const Collective collective = GetParam().collective;
  CommunicatorOptions o;
  o.topology = load_topology(tc.topology);
  const int ranks = o.topology->gpu_count();
  o.devices.push_back(0);
  if (ranks == 2 && gpus >= 2) o.devices.push_back(1);
  o.low_latency_bytes = 0;
  o.ll128_bytes = tc.ll128_bytes;
  std::unique_ptr<Communicator> comm;
  const Status created = Communicator::create(o, &comm);
  ASSERT_TRUE(created.ok()) << created.message();

  std::vector<CollectiveSpec> specs = testing::every_type_and_op(collective, ranks);
  for (CollectiveSpec& spec : specs) spec.ll128 = true;
  const Status prepared = comm->prepare(specs);
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  CheckedCallSetup setup;
  ASSERT_TRUE(setup.make(*comm, testing::sweep_buffer_bytes(collective, ranks, tc.largest)));
  // What a call of each count takes: LL128 up to the limit (the largest f64 and i64 counts of h200x2 go past it, to
  // the direct protocol, and are checked all the same).
  const std::uint64_t counts[] = {1, 7, 1000, tc.largest};
  int on_ll128 = 0;
  const int runs = testing::check_every_call(
      *comm, setup.buffers(), specs, counts, tc.name,
      [&](const CollectiveSpec& spec, std::uint64_t count) { return comm->is_ll128(collective, count, spec.dtype); },
      &on_ll128);
  EXPECT_GE(on_ll128, 3 * static_cast<int>(specs.size()));  // 1, 7 and 1000 elements at least
  std::cout << fmt::format("[ runs ] {} {}: {} ranks on {} GPUs, {} runs, {} of the counts on LL128\n", tc.name,
                           to_string(collective), ranks, comm->devices(), runs, on_ll128);
}

TEST(LL128Reach, ANegativeLimitIsRefusedNamingIt) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  CommunicatorOptions o;
  o.topology = load_topology("h200x2");
  o.devices = {0};
  o.ll128_bytes = -1;
  std::unique_ptr<Communicator> comm;
  const Status s = Communicator::create(o, &comm);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("LL128 limit -1 bytes: use 0 (off) or a positive size"), std::string::npos) << s.message();
}

// A limit within LL's takes no size: the protocol is off, and its buffers are never made.
TEST(LL128Reach, ALimitWithinTheLowLatencyOneLeavesItOff) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  CommunicatorOptions o;
  o.topology = load_topology("h200x2");
  o.devices = {0};
  o.low_latency_bytes = 256 << 10;
  o.ll128_bytes = 256 << 10;
  std::unique_ptr<Communicator> comm;
  ASSERT_TRUE(Communicator::create(o, &comm).ok());
  for (std::uint64_t count : {std::uint64_t{1}, std::uint64_t{64} << 10, (std::uint64_t{64} << 10) + 1})
    EXPECT_FALSE(comm->is_ll128(Collective::allreduce, count, DataType::f32)) << count;
  CollectiveSpec spec{Collective::allreduce, DataType::f32, ReduceOp::sum, 0};
  spec.ll128 = true;
  const Status refused = comm->prepare(std::vector<CollectiveSpec>{spec});
  EXPECT_EQ(refused.code(), StatusCode::unsupported) << refused.message();
  EXPECT_NE(refused.message().find("LL128 protocol is off"), std::string::npos) << refused.message();
}

// The protocol's reach: between two GPUs only where they are one NVLink hop apart (a warp's 128-byte stores arrive
// whole only over NVLink), above the low-latency limit, up to its own.
TEST(LL128Reach, OnlyOverNVLinkAboveTheLowLatencyLimit) {
  if (visible_gpu_count() < 2) GTEST_SKIP() << "fewer than two CUDA devices visible: every pair of ranks shares a GPU";
  CommunicatorOptions o;
  o.devices = {0, 1};
  o.ll128_bytes = 4 << 20;
  o.low_latency_bytes = 64 << 10;
  o.topology = load_topology("h200x2");
  std::unique_ptr<Communicator> comm;
  ASSERT_TRUE(Communicator::create(o, &comm).ok());
  EXPECT_FALSE(comm->is_ll128(Collective::allreduce, 16 << 10, DataType::f32));  // 64 KiB: LL
  EXPECT_TRUE(comm->is_low_latency(Collective::allreduce, 16 << 10, DataType::f32));
  EXPECT_TRUE(comm->is_ll128(Collective::allreduce, (16 << 10) + 1, DataType::f32));
  EXPECT_TRUE(comm->is_ll128(Collective::allreduce, 1 << 20, DataType::f32));  // 4 MiB
  EXPECT_FALSE(comm->is_ll128(Collective::allreduce, (1 << 20) + 1, DataType::f32));
  EXPECT_TRUE(comm->is_direct(Collective::allreduce, (1 << 20) + 1, DataType::f32));
  EXPECT_TRUE(comm->is_ll128(Collective::allgather, 1 << 19, DataType::f32));  // S: the 4 MiB output
  EXPECT_FALSE(comm->is_ll128(Collective::allgather, (1 << 19) + 1, DataType::f32));

  // pcie-4gpu: ranks 0 and 1 on GPU 0, 2 and 3 on GPU 1, joined only through PCIe in the topology.
  o.topology = load_topology("pcie-4gpu");
  ASSERT_TRUE(Communicator::create(o, &comm).ok());
  EXPECT_FALSE(comm->is_ll128(Collective::allreduce, 1 << 18, DataType::f32));
  CollectiveSpec spec{Collective::allreduce, DataType::f32, ReduceOp::sum, 0};
  spec.ll128 = true;
  const Status refused = comm->prepare(std::vector<CollectiveSpec>{spec});
  EXPECT_EQ(refused.code(), StatusCode::unsupported) << refused.message();
  EXPECT_NE(refused.message().find("LL128 protocol is off"), std::string::npos) << refused.message();
}

INSTANTIATE_TEST_SUITE_P(Topologies, LL128OnGpu, ::testing::ValuesIn(testing::every_collective_of(kCases)),
                         [](const auto& info) { return testing::topology_collective_name(kCases, info.param); });

}  // namespace
}  // namespace canopy
