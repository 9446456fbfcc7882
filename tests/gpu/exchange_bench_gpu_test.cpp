// canopy bench -c sendrecv|alltoall|gather|scatter's harness (bench/harness/exchange_bench.hpp) on one process's
// virtual ranks, every rank on GPU 0 (label gpu; SKIPPED without a GPU): 2 ranks of h200x2 and 3 of hgx-h200, each call
// at sizes from below one element a block to 4 MiB, f32 and bf16, roots first and last: every row checked with 0 wrong,
// timed (a positive time, algbw and busbw from it), and its size and count as nccl-tests gives them.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <vector>

#include "bench/harness/exchange_bench.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "topology/shipped_topologies.hpp"

namespace canopy {
namespace {

TEST(ExchangeBenchOnGpu, EveryCallIsCheckedRightAndTimed) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  const std::pair<std::string, std::vector<std::string>> cases[] = {{"h200x2", {}}, {"hgx-h200", {"0", "1", "2"}}};
  int rows = 0;
  for (const auto& [topology, gpus] : cases) {
    CommunicatorOptions co;
    co.topology = load_topology(topology);
    co.gpus = gpus;
    co.devices = {0};
    std::unique_ptr<Communicator> comm;
    ASSERT_TRUE(Communicator::create(co, &comm).ok());
    const int n = comm->ranks();
    for (ExchangeCall call :
         {ExchangeCall::sendrecv, ExchangeCall::alltoall, ExchangeCall::gather, ExchangeCall::scatter})
      for (DataType dtype : {DataType::f32, DataType::bf16})
        for (int root : {0, n - 1}) {
          if (root != 0 && (call == ExchangeCall::sendrecv || call == ExchangeCall::alltoall)) continue;
          ExchangeBenchOptions o;
          o.call = call;
          o.sizes = {4, 1028, 65540, 4u << 20};
          o.dtype = dtype;
          o.root = root;
          o.iters = 3;
          o.warmup = 1;
          o.repeats = 2;
          const std::string what =
              fmt::format("{} {} ranks, {} {} root {}", topology, n, to_string(call), to_string(dtype), root);
          std::vector<BenchRow> got;
          const Status s = run_exchange_benchmark(*comm, o, nullptr, [&](const BenchRow& r) { got.push_back(r); });
          ASSERT_TRUE(s.ok()) << what << ": " << s.message();
          // 4 bytes is less than one element a block except for sendrecv of f32 and bf16
          const std::size_t expected = exchange_count(call, 4, dtype, n) > 0 ? 4 : 3;
          ASSERT_EQ(got.size(), expected) << what;
          for (const BenchRow& r : got) {
            EXPECT_EQ(r.errors, 0) << what << " at " << r.bytes << " bytes";
            EXPECT_GT(r.time_us, 0) << what;
            EXPECT_NEAR(r.algbw_gbps, static_cast<double>(r.bytes) / (r.time_us * 1e-6) / 1e9, 1e-9) << what;
            EXPECT_EQ(r.goal, to_string(call));
            EXPECT_EQ(r.bytes, exchange_bytes(call, r.count, dtype, n)) << what;
            EXPECT_EQ(r.nccl_time_us, 0) << what;
            ++rows;
          }
        }
  }
  std::cout << "[ runs ] exchange bench rows checked: " << rows << "\n";
}

}  // namespace
}  // namespace canopy
