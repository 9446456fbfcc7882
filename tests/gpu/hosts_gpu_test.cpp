// Communicators over several "hosts" on one GPU (label gpu; SKIPPED without one): `canopy run --hosts` gives each
// process CANOPY_HOST_ID and NCCL_HOSTID, so Canopy groups the processes into hosts (each host's processes a one-host
// communicator) and the real NCCL joins the hosts' rails through its socket transport over loopback. canopy_mp_check
// checks every output element. Counts up to 3 M here; CANOPY_TEST_MAX_COUNT=40000004 adds the acceptance's largest
// (bench/device-run's `hosts` step runs it). Without the real NCCL the join fails, naming CANOPY_NCCL_LIBRARY.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

#include "runtime/cuda/gpu_devices.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

// NCCL between "hosts" on one machine: sockets over loopback, no InfiniBand, no NVLink multicast; its INFO log names
// the transport ("NET/Socket").
constexpr const char* kNcclOnOneMachine =
    "NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET";

std::string counts() {
  std::string c = "1,1028,65540,3000004";
  if (const char* max = std::getenv("CANOPY_TEST_MAX_COUNT"); max && std::strtoull(max, nullptr, 10) > 3000004)
    c += fmt::format(",{}", max);
  return c;
}

testing::CommandRun hosts_check(int processes, const std::string& hosts, const std::string& env,
                                const std::string& args) {
  return testing::run_command(
      fmt::format("{} {} CANOPY_BOOTSTRAP_TIMEOUT_S=120 CANOPY_STALL_TIMEOUT_S=120 {} run -n {} "
                  "--hosts {} -- {} --topology detect {} 2>&1",
                  kNcclOnOneMachine, env, CANOPY_CLI, processes, hosts, CANOPY_MP_CHECK, args));
}

class HostsOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  }
};

void expect_every_host_process_right(const testing::CommandRun& r, int processes) {
  std::cout << r.output.substr(r.output.size() > 20000 ? r.output.size() - 20000 : 0);
  EXPECT_EQ(r.status, 0) << "see the output above";
  for (int p = 0; p < processes; ++p)
    EXPECT_THAT(r.output,
                ::testing::ContainsRegex(fmt::format("process {} \\(ranks [0-9.]+ of [0-9]+\\): [0-9]+ "
                                                     "calls, [0-9]+ elements checked, 0 wrong, 0 failed calls",
                                                     p)));
}

// The matrix of issue 33's acceptance: every collective x f32, bf16, i32 x sum, max, in and out of place.
const std::string kMatrix =
    "--collectives broadcast,reduce,allreduce,allgather,reduce_scatter --dtypes f32,bf16,i32 --ops sum,max";

TEST_F(HostsOnGpu, TwoHostsOfTwoCheckEveryCollective) {
  const testing::CommandRun r = hosts_check(4, "2,2", "CANOPY_LOG=info", kMatrix + " --counts " + counts());
  expect_every_host_process_right(r, 4);
  EXPECT_THAT(r.output, ::testing::HasSubstr("4 ranks on 2 hosts"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("rails allreduce through NCCL"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("NET/Socket"));
}

TEST_F(HostsOnGpu, UnevenHostsOfOneTwoAndOneCheckEveryCollective) {
  const testing::CommandRun r = hosts_check(4, "1,2,1", "CANOPY_LOG=info", kMatrix + " --counts " + counts());
  expect_every_host_process_right(r, 4);
  EXPECT_THAT(r.output, ::testing::HasSubstr("4 ranks on 3 hosts"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("rails reduce-scatter through NCCL"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("NET/Socket"));
}

// The other operators, avg's division by the world's ranks on uneven hosts included, and every dtype NCCL has.
TEST_F(HostsOnGpu, EveryOperatorAndDtypeOnUnevenHosts) {
  expect_every_host_process_right(hosts_check(4, "1,2,1", "",
                                         "--collectives reduce,allreduce,reduce_scatter --dtypes f32,f16,f64,i8,u8,"
                                         "u32,i64,u64 --ops prod,min,avg --counts 7,1028"),
                             4);
}

TEST_F(HostsOnGpu, TwoRanksPerProcessAcrossHosts) {
  expect_every_host_process_right(hosts_check(3, "2,1", "",
                                         "--per-process 2 --collectives broadcast,reduce,allreduce,allgather,"
                                         "reduce_scatter --dtypes f32 --ops sum --counts 7,65540"),
                             3);
}

// Cut into pieces of 64 KiB (CANOPY_HOSTS_PIECE_BYTES): allreduce, broadcast and reduce run as a wavefront, the
// rails on a stream of their own overlapping the next piece's inside phase; every output is still right, even and
// uneven hosts, the log says so.
// Each host's processes with their planned trees unstaged (CANOPY_OWN_BUFFERS: lowered to touch only their own
// rank's buffers), the other protocols off: every collective checked across the hosts.
TEST_F(HostsOnGpu, TreesOnOwnBuffersInsideEachHost) {
  const testing::CommandRun r =
      hosts_check(4, "2,2", "CANOPY_OWN_BUFFERS=1 CANOPY_LL_BYTES=0 CANOPY_LL128_BYTES=0 CANOPY_DIRECT_BYTES=0",
                  "--collectives broadcast,reduce,allreduce,allgather,reduce_scatter --dtypes f32 --ops sum "
                  "--counts 1028,65540,3000004");
  expect_every_host_process_right(r, 4);
}

TEST_F(HostsOnGpu, PipelinedPiecesCheckEveryElementwiseCollective) {
  for (const char* hosts : {"2,2", "1,2,1"}) {
    const testing::CommandRun r = hosts_check(4, hosts, "CANOPY_LOG=info CANOPY_HOSTS_PIECE_BYTES=64KiB",
                                              "--collectives broadcast,reduce,allreduce --dtypes f32,bf16 --ops "
                                              "sum,avg --counts 1028,65540,1000003");
    expect_every_host_process_right(r, 4);
    EXPECT_THAT(r.output, ::testing::HasSubstr("16 pieces, their inside phases and rails overlapped"));
  }
}

// Processes that cut calls differently would not pair up: the join refuses it, naming the variable.
TEST_F(HostsOnGpu, PieceBytesThatDifferAreRefusedAtJoin) {
  const testing::CommandRun r = testing::run_command(fmt::format(
      "{} CANOPY_BOOTSTRAP_TIMEOUT_S=60 {} run -n 2 --hosts 1,1 -- sh -c 'CANOPY_HOSTS_PIECE_BYTES=$((CANOPY_RANK + 1))"
      "MiB exec {} --topology detect --collectives allreduce --counts 7' 2>&1",
      kNcclOnOneMachine, CANOPY_CLI, CANOPY_MP_CHECK));
  std::cout << r.output;
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.output, ::testing::HasSubstr("CANOPY_HOSTS_PIECE_BYTES 2 MiB and process 0 1 MiB"));
}

TEST_F(HostsOnGpu, WithoutTheRealNcclTheJoinFailsNamingCanopyNcclLibrary) {
  const testing::CommandRun r =
      hosts_check(2, "1,1", "CANOPY_NCCL_LIBRARY=/nonexistent/libnccl.so.2", "--collectives allreduce --counts 7");
  std::cout << r.output;
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.output, ::testing::HasSubstr("join failed"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("CANOPY_NCCL_LIBRARY"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("several hosts need the real NCCL"));
}

}  // namespace
}  // namespace canopy
