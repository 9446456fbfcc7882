// The direct protocol's two-shot kernels (templates/direct.cuh, Config::kTwoShot) on real GPUs (label gpu; SKIPPED
// without one): allreduce, broadcast and reduce (root: the last rank) x every element type x operator, counts from
// 1 element (most ranks' shares empty) to 100003 (a tail past the last whole vector), in and out of place (in place
// every direct allreduce is two-shot), checked element by element on every rank; two ranks (on two GPUs where the
// machine has them), three, eight and sixteen as virtual ranks on one GPU. Each allreduce share is combined on its
// owner in rank order and stored to every rank: every rank's result, and the one-shot kernel's, must be the same bit
// for bit. Then where it runs by default, and what is refused.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "tests/gpu/checked_sweep.hpp"

namespace canopy {
namespace {

// Every allreduce on the direct protocol (the line protocols off, no size limit: one-shot on 16 ranks reads 15 times
// the buffer), two-shot from `two_shot_bytes` (0: never).
std::unique_ptr<Communicator> communicator(const testing::SweepCase& tc, std::int64_t two_shot_bytes) {
  CommunicatorOptions o = testing::sweep_options(tc);
  o.low_latency_bytes = 0;
  o.ll128_bytes = 0;
  o.direct_bytes = std::int64_t{1} << 30;
  o.direct_two_shot_bytes = two_shot_bytes;
  std::unique_ptr<Communicator> comm;
  const Status created = Communicator::create(o, &comm);
  EXPECT_TRUE(created.ok()) << created.message();
  return comm;
}

class DirectTwoShotOnGpu : public ::testing::TestWithParam<int> {};

TEST_P(DirectTwoShotOnGpu, MatchesTheHostReference) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  const testing::SweepCase& tc = testing::kTwoShotCases[GetParam()];
  std::unique_ptr<Communicator> comm = communicator(tc, 1);  // from 1 byte: every direct allreduce
  ASSERT_TRUE(comm);
  for (Collective c : {Collective::allreduce, Collective::broadcast, Collective::reduce})
    testing::check_two_shot_calls(*comm, c, 100003, tc.name, [&](const CollectiveSpec& spec, std::uint64_t count) {
      return comm->is_direct(c, count, spec.dtype) && comm->is_two_shot(c, count, spec.dtype);
    });
}

// Float sums at 4 MiB of f32, whose result depends on the order of the additions: every rank of the two-shot call
// holds the same bytes, and so does every rank of the one-shot call on the same inputs.
TEST_P(DirectTwoShotOnGpu, EveryRankAndTheOneShotKernelAgreeBitForBit) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  const testing::SweepCase& tc = testing::kTwoShotCases[GetParam()];
  std::unique_ptr<Communicator> one = communicator(tc, 0), two = communicator(tc, 1);
  ASSERT_TRUE(one && two);
  const std::uint64_t count = (1 << 20) + 5;
  CheckedCallSetup setup;
  ASSERT_TRUE(setup.make(*one, testing::sweep_buffer_bytes(Collective::allreduce, one->ranks(), count)));
  const DataType types[] = {DataType::f32, DataType::bf16, DataType::f16};
  for (DataType t : types) {
    ASSERT_TRUE(one->is_direct(Collective::allreduce, count, t) && !one->is_two_shot(Collective::allreduce, count, t));
    ASSERT_TRUE(two->is_direct(Collective::allreduce, count, t) && two->is_two_shot(Collective::allreduce, count, t));
  }
  testing::expect_same_allreduce_bits(*one, *two, setup.buffers(), count, types, tc.name);
}

INSTANTIATE_TEST_SUITE_P(Topologies, DirectTwoShotOnGpu,
                         ::testing::Range(0, static_cast<int>(std::size(testing::kTwoShotCases))),
                         [](const auto& info) { return std::string(testing::kTwoShotCases[info.param].name); });

// By default: out of place never on two ranks, from 1 MiB on four and 256 KiB (every direct size) on eight; an
// allreduce in place always; and up to the limit on the bytes two-shot puts on the busiest link (2 (ranks - 1) /
// ranks of the buffer), where one-shot would have stopped at (ranks - 1) times it. Reduce from 2 MiB on eight,
// broadcast never, where the ranks share one GPU; with four GPUs or more visible, four ranks each on a GPU of its own
// run broadcasts and reduces two-shot from 1 MiB.
TEST(DirectTwoShotReach, OutOfPlaceFromItsLimitInPlaceAlways) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  const auto make = [](const char* topology, std::vector<std::string> gpus, std::unique_ptr<Communicator>* comm) {
    CommunicatorOptions o = testing::sweep_options({"", topology, std::move(gpus)});
    o.ll128_bytes = 0;  // on two GPUs LL128 takes 1 MiB allreduces by default; these are the direct protocol's limits
    const Status created = Communicator::create(o, comm);
    ASSERT_TRUE(created.ok()) << created.message();
  };
  const std::uint64_t mib = (1 << 20) / 4;  // f32 elements in 1 MiB
  std::unique_ptr<Communicator> comm;
  make("h200x2", {}, &comm);
  EXPECT_TRUE(comm->is_direct(Collective::allreduce, mib, DataType::f32));
  EXPECT_FALSE(comm->is_two_shot(Collective::allreduce, mib, DataType::f32));
  EXPECT_TRUE(comm->is_direct(Collective::allreduce, mib, DataType::f32, true));
  EXPECT_TRUE(comm->is_two_shot(Collective::allreduce, mib, DataType::f32, true));
  EXPECT_FALSE(comm->is_two_shot(Collective::reducescatter, mib, DataType::f32, true));
  EXPECT_FALSE(comm->is_two_shot(Collective::broadcast, mib, DataType::f32, true));  // only allreduce needs it in place

  make("hgx-h200", {"0", "1", "2", "3"}, &comm);
  EXPECT_FALSE(comm->is_two_shot(Collective::allreduce, mib - 1, DataType::f32));
  EXPECT_TRUE(comm->is_two_shot(Collective::allreduce, mib, DataType::f32));
  EXPECT_TRUE(comm->is_two_shot(Collective::allreduce, mib / 2, DataType::f32, true));

  make("hgx-h200", {}, &comm);
  const std::uint64_t above_ll = (256 << 10) / 4 + 1;
  EXPECT_TRUE(comm->is_direct(Collective::allreduce, above_ll, DataType::f32));
  EXPECT_TRUE(comm->is_two_shot(Collective::allreduce, above_ll, DataType::f32));
  // 16 MiB: 28 MiB moved per rank two-shot (one-shot would read 112); 32 MiB: 56 MiB, past the 32 MiB limit.
  EXPECT_TRUE(comm->is_direct(Collective::allreduce, 16 * mib, DataType::f32));
  EXPECT_TRUE(comm->is_direct(Collective::allreduce, 16 * mib, DataType::f32, true));
  EXPECT_FALSE(comm->is_direct(Collective::allreduce, 32 * mib, DataType::f32, true));
  EXPECT_FALSE(comm->is_two_shot(Collective::allreduce, 32 * mib, DataType::f32, true));
  // Reduce from 2 MiB on eight ranks, out of place or in: 16 MiB puts 28 MiB on the root's link two-shot (112
  // one-shot). Broadcast stays one-shot, to 4.6 MiB (32 MiB out of the root).
  for (bool in_place : {false, true}) {
    EXPECT_FALSE(comm->is_two_shot(Collective::reduce, 2 * mib - 1, DataType::f32, in_place));
    EXPECT_TRUE(comm->is_two_shot(Collective::reduce, 2 * mib, DataType::f32, in_place));
    EXPECT_TRUE(comm->is_direct(Collective::reduce, 16 * mib, DataType::f32, in_place));
    EXPECT_FALSE(comm->is_direct(Collective::reduce, 32 * mib, DataType::f32, in_place));
    EXPECT_FALSE(comm->is_two_shot(Collective::broadcast, 4 * mib, DataType::f32, in_place));
    EXPECT_TRUE(comm->is_direct(Collective::broadcast, 4 * mib, DataType::f32, in_place));
    EXPECT_FALSE(comm->is_direct(Collective::broadcast, 5 * mib, DataType::f32, in_place));
  }
  EXPECT_FALSE(comm->is_two_shot(Collective::allgather, above_ll, DataType::f32));

  if (visible_gpu_count() < 4) return;
  CommunicatorOptions o = testing::sweep_options({"", "hgx-h200", {"0", "1", "2", "3"}});
  o.ll128_bytes = 0;
  o.devices = {0, 1, 2, 3};
  ASSERT_TRUE(Communicator::create(o, &comm).ok());
  for (Collective c : {Collective::broadcast, Collective::reduce}) {
    EXPECT_TRUE(comm->is_direct(c, mib - 1, DataType::f32)) << to_string(c);
    EXPECT_FALSE(comm->is_two_shot(c, mib - 1, DataType::f32)) << to_string(c);
    EXPECT_TRUE(comm->is_two_shot(c, mib, DataType::f32)) << to_string(c);
  }
}

TEST(DirectTwoShotReach, RefusesANegativeLimitAndTwoShotOfOtherCollectives) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  CommunicatorOptions o = testing::sweep_options({"", "h200x2", {}});
  o.direct_two_shot_bytes = -1;
  std::unique_ptr<Communicator> comm;
  const Status refused = Communicator::create(o, &comm);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("direct two-shot limit -1 bytes: use 0 (never) or a positive size"),
            std::string::npos)
      << refused.message();

  o.direct_two_shot_bytes.reset();
  ASSERT_TRUE(Communicator::create(o, &comm).ok());
  CollectiveSpec spec{Collective::reducescatter, DataType::f32, ReduceOp::sum};
  spec.direct = true;
  spec.two_shot = true;
  const Status s = comm->prepare(std::span<const CollectiveSpec>(&spec, 1));
  EXPECT_EQ(s.code(), StatusCode::invalid_argument) << s.message();
  EXPECT_NE(s.message().find(
                "two-shot is a variant of the low-latency allreduce and of the direct allreduce, broadcast and reduce"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace canopy
