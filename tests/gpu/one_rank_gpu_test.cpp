// A communicator of one rank (label gpu; SKIPPED without a GPU), as NCCL's: every collective leaves the input in the
// output (a local copy on the rank's stream, none in place), for every element type and operator, counts from 1 to
// millions, in and out of place, on a given one-GPU topology and on the detected one; prepare() and the protocol
// queries need no plan; info() says there is no kernel.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "topology/topo_reader.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "tests/gpu/checked_sweep.hpp"

namespace canopy {
namespace {

std::unique_ptr<Communicator> one_rank(bool detected) {
  CommunicatorOptions o;
  o.devices = {0};
  if (!detected) o.topology = read_topo("topology one\ngpus 1\n", "one.topo");
  std::unique_ptr<Communicator> comm;
  const Status s = Communicator::create(o, &comm);
  EXPECT_TRUE(s.ok()) << s.message();
  return comm;
}

class OneRankOnGpu : public ::testing::TestWithParam<Collective> {};

TEST_P(OneRankOnGpu, EveryCallIsALocalCopy) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const Collective collective = GetParam();
  for (bool detected : {false, true}) {
    std::unique_ptr<Communicator> comm = one_rank(detected);
    ASSERT_TRUE(comm);
    ASSERT_EQ(comm->ranks(), 1);
    const std::uint64_t largest = 3000004;
    CheckedCallSetup setup;
    ASSERT_TRUE(setup.make(*comm, testing::sweep_buffer_bytes(collective, 1, largest)));
    const std::vector<CollectiveSpec> specs = testing::every_type_and_op(collective, 1);
    const std::uint64_t counts[] = {1, 7, 1028, 65540, largest};
    int unused = 0;
    const int runs = testing::check_every_call(*comm, setup.buffers(), specs, counts, "one rank",
                                      [](const CollectiveSpec&, std::uint64_t) { return false; }, &unused);
    EXPECT_EQ(runs, static_cast<int>(specs.size()) * 5 * 2);
    std::cout << fmt::format("[ runs ] one rank ({} topology) {}: {} runs\n", detected ? "detected" : "given",
                             to_string(collective), runs);
  }
}

INSTANTIATE_TEST_SUITE_P(Collectives, OneRankOnGpu,
                         ::testing::Values(Collective::broadcast, Collective::reduce, Collective::allreduce,
                                           Collective::allgather, Collective::reducescatter),
                         [](const ::testing::TestParamInfo<Collective>& i) { return to_string(i.param); });

TEST(OneRankOnGpu, PrepareNeedsNoPlanAndInfoSaysThereIsNoKernel) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  std::unique_ptr<Communicator> comm = one_rank(false);
  ASSERT_TRUE(comm);
  const CollectiveSpec specs[] = {{Collective::allreduce, DataType::f32, ReduceOp::sum, 0},
                                  {Collective::broadcast, DataType::bf16, ReduceOp::sum, 0}};
  const Status prepared = comm->prepare(specs);
  EXPECT_TRUE(prepared.ok()) << prepared.message();
  CollectiveInfo info;
  const Status s = comm->info(specs[0], &info);
  EXPECT_EQ(s.code(), StatusCode::unsupported);
  EXPECT_NE(s.message().find("one rank runs no kernel"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace canopy
