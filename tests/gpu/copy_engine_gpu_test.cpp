// Copy-engine broadcasts, reduces and allreduces on two GPUs (label gpu; SKIPPED with fewer than two): the GPUs' copy
// engines move the bytes (runtime/offload/copy_engine_pair.hpp) and combining kernels add them. Every output element is
// checked: one chunk and many (sizes that are not multiples of a chunk or of 16 bytes), both roots, in place (a
// broadcast stays on the engines, a reduce or allreduce goes to the trees), the caller's streams changing, several
// element types and operators, a host share beside the engines, and buffers that are not 16-byte aligned.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "topology/shipped_topologies.hpp"
#include "bench/harness/collective_buffers.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "tests/gpu/checked_call.hpp"

namespace canopy {
namespace {

struct EngineCase {
  const char* name;
  Collective collective;
  std::optional<double> host_share;  // set: a broadcast's or reduce's share crosses PCIe beside the engines
};

std::unique_ptr<Communicator> engine_communicator(std::optional<double> host_share) {
  CommunicatorOptions o;
  o.topology = load_topology("h200x2");
  o.devices = {0, 1};
  o.engine_bytes = 1 << 20;
  o.hybrid_bytes = host_share ? 1 << 20 : 0;
  o.hybrid_share = host_share;
  std::unique_ptr<Communicator> comm;
  const Status created = Communicator::create(o, &comm);
  EXPECT_TRUE(created.ok()) << created.message();
  return comm;
}

class CopyEngineOnGpu : public ::testing::TestWithParam<EngineCase> {};

TEST_P(CopyEngineOnGpu, EveryElementArrives) {
  if (visible_gpu_count() < 2) GTEST_SKIP() << "fewer than two CUDA devices visible: the copy engines join two GPUs";
  const EngineCase& c = GetParam();
  std::unique_ptr<Communicator> comm = engine_communicator(c.host_share);
  ASSERT_TRUE(comm);
  const int ranks = comm->ranks();
  ASSERT_EQ(ranks, 2);

  const std::uint64_t top = std::uint64_t{1} << 24;  // f32: 64 MiB per rank, four allreduce chunks
  CheckedCallSetup setup;
  ASSERT_TRUE(setup.make(*comm, top * 4));

  static constexpr std::pair<DataType, ReduceOp> kKinds[] = {{DataType::f32, ReduceOp::sum},
                                                             {DataType::i32, ReduceOp::max},
                                                             {DataType::bf16, ReduceOp::sum},
                                                             {DataType::f64, ReduceOp::prod},
                                                             {DataType::u8, ReduceOp::min}};
  int runs = 0;
  // 1 MiB (one chunk); ~48 MiB, not a multiple of anything; 64 MiB.
  for (std::uint64_t count : {std::uint64_t{1} << 18, std::uint64_t{12'582'917}, top})
    for (int repeat = 0; repeat < 5; ++repeat) {
      const int root = (repeat + runs) % ranks;
      const bool in_place = repeat % 2 == 1;
      const auto [dtype, op] =
          c.collective != Collective::broadcast ? kKinds[repeat] : std::pair{DataType::f32, ReduceOp::sum};
      const std::uint64_t elements = count * 4 / static_cast<std::uint64_t>(size_of(dtype));
      ASSERT_TRUE(comm->is_copy_engine(c.collective, elements, dtype)) << elements;
      EXPECT_EQ(comm->staged_count(c.collective, elements, dtype, root) > 0, c.host_share.has_value());
      CheckSpec s{c.collective, dtype, op, root, ranks, elements, 0};
      s.seed = 7919u * static_cast<std::uint64_t>(++runs);
      EXPECT_TRUE(run_checked_call(*comm, setup.buffers(), s, in_place, repeat >= 2 ? &setup.other_streams() : nullptr))
          << to_string(c.collective) << " " << to_string(dtype) << " " << to_string(op) << " count " << elements
          << " root " << root << (in_place ? " in place" : "") << (repeat >= 2 ? " on other streams" : "");
    }
}

INSTANTIATE_TEST_SUITE_P(Cases, CopyEngineOnGpu,
                         ::testing::Values(EngineCase{"broadcast", Collective::broadcast, std::nullopt},
                                           EngineCase{"broadcast_host_share", Collective::broadcast, 0.25},
                                           EngineCase{"reduce", Collective::reduce, std::nullopt},
                                           EngineCase{"reduce_host_share", Collective::reduce, 0.25},
                                           EngineCase{"allreduce", Collective::allreduce, std::nullopt}),
                         [](const auto& info) { return std::string(info.param.name); });

// Buffers 4 and 8 bytes past an allocation (the combining kernel's element-wise path) and a count of no round size:
// i32 sums of the bytes 0x11 and 0x22 make 0x33 in every byte (no carries), and the bytes around stay as they were.
TEST(CopyEngineOnGpu, UnalignedBuffers) {
  if (visible_gpu_count() < 2) GTEST_SKIP() << "fewer than two CUDA devices visible: the copy engines join two GPUs";
  std::unique_ptr<Communicator> comm = engine_communicator(std::nullopt);
  ASSERT_TRUE(comm);
  const std::uint64_t count = (std::uint64_t{40} << 20) / 4 + 3;  // two allreduce chunks and a tail
  const std::size_t bytes = count * 4, room = bytes + 64;
  ASSERT_TRUE(comm->is_copy_engine(Collective::allreduce, count, DataType::i32));
  std::vector<char*> send_base(2), recv_base(2);
  std::vector<const void*> send(2);
  std::vector<void*> recv(2);
  std::vector<cudaStream_t> streams(2);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(cudaSetDevice(comm->device_of_rank(r)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&send_base[r]), room), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&recv_base[r]), room), cudaSuccess);
    ASSERT_EQ(cudaMemset(send_base[r], 0x11 * (r + 1), room), cudaSuccess);
    ASSERT_EQ(cudaMemset(recv_base[r], 0x5a, room), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    send[r] = send_base[r] + 4;
    recv[r] = recv_base[r] + 8;
  }
  const Status ran = comm->allreduce(send, recv, count, DataType::i32, ReduceOp::sum, streams);
  ASSERT_TRUE(ran.ok()) << ran.message();
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(cudaSetDevice(comm->device_of_rank(r)), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(streams[r]), cudaSuccess);
    std::vector<unsigned char> got(room);
    ASSERT_EQ(cudaMemcpy(got.data(), recv_base[r], room, cudaMemcpyDeviceToHost), cudaSuccess);
    const auto inside = std::count_if(got.begin() + 8, got.begin() + 8 + static_cast<std::ptrdiff_t>(bytes),
                                      [](unsigned char b) { return b != 0x33; });
    const auto outside = std::count_if(got.begin(), got.begin() + 8, [](unsigned char b) { return b != 0x5a; }) +
                         std::count_if(got.begin() + 8 + static_cast<std::ptrdiff_t>(bytes), got.end(),
                                       [](unsigned char b) { return b != 0x5a; });
    EXPECT_EQ(inside, 0) << "rank " << r << ": bytes of the sum wrong";
    EXPECT_EQ(outside, 0) << "rank " << r << ": bytes around the buffer written";
    (void)cudaFree(send_base[r]);
    (void)cudaFree(recv_base[r]);
    (void)cudaStreamDestroy(streams[r]);
  }
}

TEST(CopyEngineOnOneGpu, NotUsed) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible";
  CommunicatorOptions o;
  o.topology = load_topology("h200x2");
  o.devices = {0};  // both ranks on one GPU: nothing for the engines to join
  o.engine_bytes = 1 << 20;
  std::unique_ptr<Communicator> comm;
  const Status created = Communicator::create(o, &comm);
  ASSERT_TRUE(created.ok()) << created.message();
  EXPECT_FALSE(comm->is_copy_engine(Collective::broadcast, std::uint64_t{1} << 24, DataType::f32));
  EXPECT_FALSE(comm->is_copy_engine(Collective::allreduce, std::uint64_t{1} << 24, DataType::f32));
}

}  // namespace
}  // namespace canopy
