// Communicator::alltoall on one process's virtual ranks (label gpu; SKIPPED without a GPU): the all-to-all planned
// over dgx1-v100 allocations ({0,1,4,5}: pairs without an NVLink relay through a third GPU; {0,1,2,3,5}; all 8) and
// hgx-h200, every rank on GPU 0, for element sizes 1, 2, 4 and 8 bytes and per-peer counts {0, 1, 7, 1028, 65540}
// (counts the plan's chunk count does not divide take fewer chunks); every receive block checked byte for byte
// against what its sender's send block held, and the bytes past the receive buffer untouched. In place is refused.
// Each case runs twice: as Communicator::alltoall, then as a send_recv group of the same blocks (its ops shuffled),
// which runs as that all-to-all (runtime/call/alltoall_group.hpp).
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "topology/shipped_topologies.hpp"

namespace canopy {
namespace {

constexpr std::uint64_t kGuard = 64;  // bytes past each receive buffer that must stay untouched
constexpr unsigned char kUnwritten = 0xEE;

std::unique_ptr<Communicator> ranks_on_gpu0(const std::string& topology, const std::vector<std::string>& gpus) {
  CommunicatorOptions o;
  o.topology = load_topology(topology);
  o.gpus = gpus;
  o.devices = {0};
  std::unique_ptr<Communicator> comm;
  const Status s = Communicator::create(o, &comm);
  EXPECT_TRUE(s.ok()) << s.message();
  return comm;
}

// Byte j of the block rank `from` sends to rank `to`: distinct per (from, to, j) within 256, every byte value met, so
// that 2-byte elements include NaNs with payloads (bf16 and f16 0xFFF2: bytes 0xF2, 0xFF), which a copy must keep bit
// for bit (a copy through float rewrote them: session 33's ncclAlltoAll of bf16).
unsigned char sent_byte(int from, int to, std::uint64_t j) {
  return static_cast<unsigned char>((from * 31 + to * 7 + j * 13 + j / 256) & 0xFF);
}

DataType type_of_size(int bytes) {
  return bytes == 1 ? DataType::u8 : bytes == 2 ? DataType::bf16 : bytes == 4 ? DataType::f32 : DataType::i64;
}

TEST(AlltoallOnGpu, EveryBlockArrivesOnPlannedRoutes) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  const std::pair<std::string, std::vector<std::string>> cases[] = {
      {"dgx1-v100", {"0", "1", "4", "5"}},
      {"dgx1-v100", {"0", "1", "2", "3", "5"}},
      {"dgx1-v100", {"0", "1", "2", "3", "4", "5", "6", "7"}},
      {"hgx-h200", {"0", "1", "2"}}};
  int checked = 0;
  for (const auto& [topology, gpus] : cases) {
    std::unique_ptr<Communicator> comm = ranks_on_gpu0(topology, gpus);
    ASSERT_TRUE(comm);
    const int n = comm->ranks();
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    for (int size : {1, 2, 4, 8})
      for (std::uint64_t count : {0ull, 1ull, 7ull, 1028ull, 65540ull})
        for (bool as_group : {false, true}) {
          const std::string what = fmt::format("{} {} ranks, {}-byte elements, count {}{}", topology, n, size, count,
                                               as_group ? ", as a send_recv group" : "");
          const std::uint64_t block = count * static_cast<std::uint64_t>(size), bytes = block * n;
          std::vector<void*> send(n), recv(n);
          for (int r = 0; r < n; ++r) {
            ASSERT_EQ(cudaMalloc(&send[r], bytes + 1), cudaSuccess);
            ASSERT_EQ(cudaMalloc(&recv[r], bytes + kGuard), cudaSuccess);
            std::vector<unsigned char> host(bytes);
            for (int to = 0; to < n; ++to)
              for (std::uint64_t j = 0; j < block; ++j) host[to * block + j] = sent_byte(r, to, j);
            ASSERT_EQ(cudaMemcpy(send[r], host.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
            ASSERT_EQ(cudaMemset(recv[r], kUnwritten, bytes + kGuard), cudaSuccess);
          }
          const std::vector<const void*> sends(send.begin(), send.end());
          const std::vector<cudaStream_t> streams(n, stream);
          std::vector<PointToPoint> ops;
          for (int r = 0; r < n; ++r)
            for (int q = 0; q < n; ++q) {
              ops.push_back(
                  send_op(r, static_cast<const char*>(sends[r]) + q * block, count, type_of_size(size), q, stream));
              ops.push_back(recv_op(r, static_cast<char*>(recv[r]) + q * block, count, type_of_size(size), q, stream));
            }
          std::shuffle(ops.begin(), ops.end(), std::mt19937(static_cast<unsigned>(count + size)));
          const Status s =
              as_group ? comm->send_recv(ops) : comm->alltoall(sends, recv, count, type_of_size(size), streams);
          ASSERT_TRUE(s.ok()) << what << ": " << s.message();
          ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess) << what;
          std::uint64_t wrong = 0;
          for (int r = 0; r < n; ++r) {
            std::vector<unsigned char> got(bytes + kGuard);
            ASSERT_EQ(cudaMemcpy(got.data(), recv[r], bytes + kGuard, cudaMemcpyDeviceToHost), cudaSuccess);
            for (int from = 0; from < n; ++from)
              for (std::uint64_t j = 0; j < block; ++j)
                if (got[from * block + j] != sent_byte(from, r, j) && wrong++ < 5)
                  ADD_FAILURE() << what << ": rank " << r << " byte " << j << " of rank " << from << "'s block";
            for (std::uint64_t j = bytes; j < bytes + kGuard; ++j)
              if (got[j] != kUnwritten && wrong++ < 5)
                ADD_FAILURE() << what << ": rank " << r << " wrote past its buffer";
            ++checked;
          }
          EXPECT_EQ(wrong, 0u) << what;
          if (count > 0 && !as_group) {
            const std::vector<const void*> in_place(recv.begin(), recv.end());
            EXPECT_EQ(comm->alltoall(in_place, recv, count, type_of_size(size), streams).code(),
                      StatusCode::invalid_argument)
                << what;
          }
          for (int r = 0; r < n; ++r) {
            (void)cudaFree(send[r]);
            (void)cudaFree(recv[r]);
          }
        }
    (void)cudaStreamDestroy(stream);
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace canopy
