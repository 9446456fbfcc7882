// Communicator::gather and scatter on one process's virtual ranks (label gpu; SKIPPED without a GPU): 3 ranks of
// hgx-h200 and 4 of dgx1-v100 {0,1,4,5}, every rank on GPU 0, each root, element sizes 1, 2, 4 and 8 bytes, counts
// {0, 1, 7, 65540}, out of place and in place as NCCL allows; every received byte checked against what its sender
// held, the bytes past each receive untouched, and the root's own block in place left as it was.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "topology/shipped_topologies.hpp"

namespace canopy {
namespace {

constexpr std::uint64_t kGuard = 64;
constexpr unsigned char kUnwritten = 0xEE;

// Byte j of block b of rank r's send buffer.
unsigned char sent_byte(int r, int b, std::uint64_t j) {
  return static_cast<unsigned char>((r * 29 + b * 11 + j * 7 + 3) % 251);
}

DataType type_of_size(int bytes) {
  return bytes == 1 ? DataType::u8 : bytes == 2 ? DataType::f16 : bytes == 4 ? DataType::i32 : DataType::f64;
}

struct Buffers {
  std::vector<void*> send, recv;
  ~Buffers() {
    for (void* p : send) (void)cudaFree(p);
    for (void* p : recv) (void)cudaFree(p);
  }
};

// Fills `p` (bytes + kGuard) with `blocks` blocks of rank r's bytes, the rest unwritten.
void fill(void* p, int r, int blocks, std::uint64_t block, std::uint64_t bytes) {
  std::vector<unsigned char> host(bytes + kGuard, kUnwritten);
  for (int b = 0; b < blocks; ++b)
    for (std::uint64_t j = 0; j < block; ++j) host[b * block + j] = sent_byte(r, b, j);
  ASSERT_EQ(cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
}

std::vector<unsigned char> read(const void* p, std::uint64_t bytes) {
  std::vector<unsigned char> host(bytes);
  EXPECT_EQ(cudaMemcpy(host.data(), p, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

TEST(GatherScatterOnGpu, EveryBlockArrivesInAndOutOfPlace) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  const std::pair<std::string, std::vector<std::string>> cases[] = {{"hgx-h200", {"0", "1", "2"}},
                                                                    {"dgx1-v100", {"0", "1", "4", "5"}}};
  int checked = 0;
  for (const auto& [topology, gpus] : cases) {
    CommunicatorOptions o;
    o.topology = load_topology(topology);
    o.gpus = gpus;
    o.devices = {0};
    std::unique_ptr<Communicator> comm;
    ASSERT_TRUE(Communicator::create(o, &comm).ok());
    const int n = comm->ranks();
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    const std::vector<cudaStream_t> streams(n, stream);
    for (bool gather : {true, false})
      for (int root = 0; root < n; ++root)
        for (int size : {1, 2, 4, 8})
          for (std::uint64_t count : {0ull, 1ull, 7ull, 65540ull})
            for (bool in_place : {false, true}) {
              const std::string what =
                  fmt::format("{} {} ranks, {} root {}, {}-byte elements, count {}{}", topology, n,
                              gather ? "gather" : "scatter", root, size, count, in_place ? ", in place" : "");
              const std::uint64_t block = count * static_cast<std::uint64_t>(size), all = block * n;
              Buffers b;
              for (int r = 0; r < n; ++r) {
                void* s = nullptr;
                void* v = nullptr;
                ASSERT_EQ(cudaMalloc(&s, all + kGuard), cudaSuccess);
                ASSERT_EQ(cudaMalloc(&v, all + kGuard), cudaSuccess);
                b.send.push_back(s);
                b.recv.push_back(v);
                // gather: each rank's one block to send; scatter: the root's n blocks. Receives unwritten.
                fill(s, r, gather ? 1 : n, block, all);
                ASSERT_EQ(cudaMemset(v, kUnwritten, all + kGuard), cudaSuccess);
              }
              std::vector<const void*> send(b.send.begin(), b.send.end());
              std::vector<void*> recv = b.recv;
              if (in_place) {
                // gather: the root's block `root` of its receive buffer holds what it sends; scatter: the root
                // receives into its block `root` of its send buffer.
                if (gather) {
                  ASSERT_EQ(cudaMemcpy(static_cast<char*>(b.recv[root]) + root * block, b.send[root], block,
                                       cudaMemcpyDeviceToDevice),
                            cudaSuccess);
                  send[root] = static_cast<char*>(b.recv[root]) + root * block;
                } else {
                  recv[root] = static_cast<char*>(b.send[root]) + root * block;
                }
              }
              const Status s = gather ? comm->gather(send, recv, count, type_of_size(size), root, streams)
                                      : comm->scatter(send, recv, count, type_of_size(size), root, streams);
              ASSERT_TRUE(s.ok()) << what << ": " << s.message();
              ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess) << what;
              std::uint64_t wrong = 0;
              if (gather) {
                const std::vector<unsigned char> got = read(b.recv[root], all + kGuard);
                for (int r = 0; r < n; ++r)
                  for (std::uint64_t j = 0; j < block; ++j)
                    if (got[r * block + j] != sent_byte(r, 0, j) && wrong++ < 5)
                      ADD_FAILURE() << what << ": byte " << j << " of rank " << r << "'s block";
                for (std::uint64_t j = all; j < all + kGuard; ++j)
                  if (got[j] != kUnwritten && wrong++ < 5) ADD_FAILURE() << what << ": written past the buffer";
              } else {
                for (int r = 0; r < n; ++r) {
                  const std::vector<unsigned char> got = read(recv[r], block + (in_place && r == root ? 0 : kGuard));
                  for (std::uint64_t j = 0; j < block; ++j)
                    if (got[j] != sent_byte(root, r, j) && wrong++ < 5)
                      ADD_FAILURE() << what << ": byte " << j << " of rank " << r;
                  if (!(in_place && r == root))
                    for (std::uint64_t j = block; j < block + kGuard; ++j)
                      if (got[j] != kUnwritten && wrong++ < 5) ADD_FAILURE() << what << ": written past rank " << r;
                }
              }
              EXPECT_EQ(wrong, 0u) << what;
              ++checked;
            }
    (void)cudaStreamDestroy(stream);
  }
  EXPECT_GT(checked, 0);
  std::cout << fmt::format("[ runs ] {} gathers and scatters checked\n", checked);
}

}  // namespace
}  // namespace canopy
