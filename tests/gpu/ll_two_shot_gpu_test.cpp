// The low-latency protocol's two-shot allreduce (templates/low_latency.cuh, run_ll_two_shot_block) on real GPUs
// (label gpu; SKIPPED without one): every element type x operator, counts from 1 element (most ranks' shares empty)
// to the low-latency limit, in and out of place, checked element by element on every rank. Two ranks (on two GPUs
// where the machine has them), three (shares of unequal size), eight and sixteen as virtual ranks on one GPU. Two-shot
// combines each share on its owner in rank order and copies it to the others: every rank's result, and the one-shot
// kernel's, must be the same bit for bit.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "topology/shipped_topologies.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "tests/gpu/checked_sweep.hpp"

namespace canopy {
namespace {

constexpr std::int64_t kLimit = 256 << 10;  // the low-latency limit; every count below fits it in every type

std::unique_ptr<Communicator> communicator(const testing::SweepCase& tc, std::int64_t two_shot_bytes) {
  CommunicatorOptions o = testing::sweep_options(tc);
  o.low_latency_bytes = kLimit;
  o.ll_two_shot_bytes = two_shot_bytes;
  std::unique_ptr<Communicator> comm;
  const Status created = Communicator::create(o, &comm);
  EXPECT_TRUE(created.ok()) << created.message();
  return comm;
}

class LLTwoShotOnGpu : public ::testing::TestWithParam<int> {};

TEST_P(LLTwoShotOnGpu, MatchesTheHostReference) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  const testing::SweepCase& tc = testing::kTwoShotCases[GetParam()];
  std::unique_ptr<Communicator> comm = communicator(tc, 1);  // from 1 byte: every low-latency allreduce
  ASSERT_TRUE(comm);
  testing::check_two_shot_calls(*comm, Collective::allreduce, kLimit / 8 - 3, tc.name,
                                [&](const CollectiveSpec& spec, std::uint64_t count) {
                                  return comm->is_two_shot(Collective::allreduce, count, spec.dtype);
                                });
}

// Float sums, whose result depends on the order of the additions: every rank of the two-shot call holds the same
// bytes, and so does every rank of the one-shot call on the same inputs.
TEST_P(LLTwoShotOnGpu, EveryRankAndTheOneShotKernelAgreeBitForBit) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  const testing::SweepCase& tc = testing::kTwoShotCases[GetParam()];
  std::unique_ptr<Communicator> one = communicator(tc, 0), two = communicator(tc, 1);
  ASSERT_TRUE(one && two);
  const int ranks = one->ranks();
  const std::uint64_t count = 12345;
  CheckedCallSetup setup;
  ASSERT_TRUE(setup.make(*one, testing::sweep_buffer_bytes(Collective::allreduce, ranks, count)));
  const DataType types[] = {DataType::f32, DataType::bf16, DataType::f16};
  for (DataType t : types) {
    ASSERT_FALSE(one->is_two_shot(Collective::allreduce, count, t));
    ASSERT_TRUE(two->is_two_shot(Collective::allreduce, count, t));
  }
  testing::expect_same_allreduce_bits(*one, *two, setup.buffers(), count, types, tc.name);
}

INSTANTIATE_TEST_SUITE_P(Topologies, LLTwoShotOnGpu,
                         ::testing::Range(0, static_cast<int>(std::size(testing::kTwoShotCases))),
                         [](const auto& info) { return std::string(testing::kTwoShotCases[info.param].name); });

// Where two-shot runs: allreduces only, from its limit up to the low-latency limit; by default never up to three
// ranks and from 96 KiB on eight; a negative limit is refused.
TEST(LLTwoShotReach, AllreducesFromItsLimitWithinTheLowLatencyOne) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  CommunicatorOptions o;
  o.topology = load_topology("hgx-h200");
  o.devices = {0};
  o.low_latency_bytes = 256 << 10;
  o.direct_bytes = 0;  // past LL's limit the direct protocol has a two-shot kernel of its own
  std::unique_ptr<Communicator> comm;
  ASSERT_TRUE(Communicator::create(o, &comm).ok());
  EXPECT_FALSE(comm->is_two_shot(Collective::allreduce, (24 << 10) - 1, DataType::f32));  // below 96 KiB
  EXPECT_TRUE(comm->is_two_shot(Collective::allreduce, 24 << 10, DataType::f32));
  EXPECT_TRUE(comm->is_two_shot(Collective::allreduce, 64 << 10, DataType::f32));         // 256 KiB
  EXPECT_FALSE(comm->is_two_shot(Collective::allreduce, (64 << 10) + 1, DataType::f32));  // past LL
  EXPECT_FALSE(comm->is_two_shot(Collective::reducescatter, 16 << 10, DataType::f32));
  EXPECT_FALSE(comm->is_two_shot(Collective::broadcast, 16 << 10, DataType::f32));

  for (int ranks : {2, 3}) {  // one-shot
    o.gpus.clear();
    for (int r = 0; r < ranks; ++r) o.gpus.push_back(std::to_string(r));
    ASSERT_TRUE(Communicator::create(o, &comm).ok());
    EXPECT_FALSE(comm->is_two_shot(Collective::allreduce, 64 << 10, DataType::f32)) << ranks << " ranks";
  }
  o.ll_two_shot_bytes = 4;  // forced: from 4 bytes on three ranks
  ASSERT_TRUE(Communicator::create(o, &comm).ok());
  EXPECT_TRUE(comm->is_two_shot(Collective::allreduce, 1, DataType::f32));

  o.ll_two_shot_bytes = -1;
  const Status refused = Communicator::create(o, &comm);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("two-shot limit -1 bytes: use 0 (never) or a positive size"), std::string::npos)
      << refused.message();
}

TEST(LLTwoShotReach, AnExplicitSpecMustBeALowLatencyAllreduce) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  CommunicatorOptions o;
  o.topology = load_topology("h200x2");
  o.devices = {0};
  std::unique_ptr<Communicator> comm;
  ASSERT_TRUE(Communicator::create(o, &comm).ok());
  CollectiveSpec spec{Collective::reducescatter, DataType::f32, ReduceOp::sum, 0};
  spec.low_latency = true;
  spec.two_shot = true;
  Status s = comm->prepare(std::vector<CollectiveSpec>{spec});
  EXPECT_EQ(s.code(), StatusCode::invalid_argument) << s.message();
  EXPECT_NE(s.message().find(
                "two-shot is a variant of the low-latency allreduce and of the direct allreduce, broadcast and reduce"),
            std::string::npos)
      << s.message();
  spec.collective = Collective::allreduce;
  spec.low_latency = false;
  s = comm->prepare(std::vector<CollectiveSpec>{spec});
  EXPECT_EQ(s.code(), StatusCode::invalid_argument) << s.message();
  spec.low_latency = true;
  s = comm->prepare(std::vector<CollectiveSpec>{spec});
  EXPECT_TRUE(s.ok()) << s.message();
}

}  // namespace
}  // namespace canopy
