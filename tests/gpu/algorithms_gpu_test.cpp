// Every shipped collective-algorithm program (dsl/algorithms/) through the Communicator on real GPUs (label gpu;
// SKIPPED without one), checked as the planned collectives are: pattern inputs, poisoned outputs, every element of
// every rank compared with the host reference of what the program computes (bench/harness/collective_check.hpp). Two
// ranks on h200x2 and eight on hgx-h200; ranks beyond the visible GPUs run as virtual ranks (eight on one H100).
// CANOPY_TEST_MAX_COUNT lowers the largest count for quick runs.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "dsl/algorithms/shipped_algorithms.hpp"
#include "dsl/shipped_topologies.hpp"
#include "bench/harness/collective_buffers.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/jit/jit.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

struct Param {
  const char* topology;
  std::string algorithm;
};
void PrintTo(const Param& p, std::ostream* os) { *os << p.topology << " " << p.algorithm; }

class AlgorithmsOnGpu : public ::testing::TestWithParam<Param> {};

TEST_P(AlgorithmsOnGpu, MatchWhatTheProgramComputes) {
  const int gpus = visible_gpu_count();
  if (gpus == 0) GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  const Topology topology = load_topology(GetParam().topology);
  const int ranks = topology.gpu_count();
  auto outputs = std::make_shared<ProgramOutputs>(algo::shipped_algorithm(GetParam().algorithm, ranks));
  const algo::Program& program = outputs->program;
  CommunicatorOptions o;
  o.topology = topology;
  for (int d = 0; d < std::min(gpus, ranks); ++d) o.devices.push_back(d);
  std::unique_ptr<Communicator> comm;
  ASSERT_TRUE(Communicator::create(o, &comm).ok()) << Communicator::create(o, &comm).message();

  struct Kind {
    DataType dtype;
    ReduceOp op;
  };
  std::vector<Kind> kinds;
  if (program.reduces())
    kinds = {{DataType::f32, ReduceOp::sum},
             {DataType::bf16, ReduceOp::sum},
             {DataType::f32, ReduceOp::max},
             {DataType::i64, ReduceOp::prod},
             {DataType::u8, ReduceOp::min}};
  else
    kinds = {{DataType::f32, ReduceOp::sum}, {DataType::f16, ReduceOp::sum}, {DataType::u8, ReduceOp::sum}};

  const std::uint64_t chunks = static_cast<std::uint64_t>(program.chunks());
  const std::uint64_t in_chunks = static_cast<std::uint64_t>(program.buffer_chunks(algo::Buffer::input));
  const std::uint64_t out_chunks = static_cast<std::uint64_t>(program.buffer_chunks(algo::Buffer::output));
  const std::uint64_t top = testing::test_max_count() / chunks * chunks;
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  const int ranks_per_gpu = (ranks + comm->devices() - 1) / comm->devices();
  const std::uint64_t budget =
      static_cast<std::uint64_t>(prop.totalGlobalMem * testing::test_memory_fraction(0.6)) / ranks_per_gpu;
  const std::uint64_t capacity = std::min(top, budget / (8 * (in_chunks + out_chunks) / chunks + 8));
  Jit jit(DiskCache::from_environment());
  PatternKernels patterns(jit, fmt::format("sm_{}{}", prop.major, prop.minor));
  std::unique_ptr<CollectiveBuffers> buffers;
  const Status made = CollectiveBuffers::create(*comm, capacity / chunks * in_chunks * 8,
                                                capacity / chunks * out_chunks * 8, patterns, &buffers);
  ASSERT_TRUE(made.ok()) << made.message();

  const auto t0 = std::chrono::steady_clock::now();
  int runs = 0;
  std::uint64_t elements = 0;
  std::vector<std::string> left_out;
  for (const Kind& kind : kinds)
    for (std::uint64_t count : {chunks, 7 * chunks, 1000 * chunks + 8 * chunks, (std::uint64_t{1} << 20) + chunks,
                                (std::uint64_t{1} << 26) / chunks * chunks}) {
      if (count > top) continue;
      CheckSpec s{Collective::allreduce, kind.dtype, kind.op, 0, ranks, count, 0};
      s.program = outputs;
      s.seed = (static_cast<std::uint64_t>(runs) + 1) * 0x9E3779B97F4A7C15ull;
      if (!buffers->fits(s)) {
        left_out.push_back(fmt::format("{} {} count {}", to_string(kind.dtype), to_string(kind.op), count));
        continue;
      }
      for (int repeat = 0; repeat < 2; ++repeat) {  // the second call reuses counters, scratch and buffers
        CheckResult result;
        const Status st = buffers->run_checked(*comm, s, /*in_place=*/false, &result);
        ASSERT_TRUE(st.ok()) << st.message();
        ++runs;
        elements += result.checked;
        EXPECT_EQ(result.wrong, 0u) << GetParam().topology << " " << program.name() << " " << to_string(kind.dtype)
                                    << " " << to_string(kind.op) << " count " << count << ": " << result.wrong << " of "
                                    << result.checked << " elements wrong, e.g. "
                                    << (result.examples.empty() ? "" : result.examples[0]);
        s.seed ^= 0x5555;
      }
    }
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << fmt::format("[ runs ] {} {}: {} ranks on {} GPUs, {} runs, {} elements checked, {:.1f} s\n",
                           GetParam().topology, program.name(), ranks, comm->devices(), runs, elements, total_s);
  if (!left_out.empty())
    std::cout << fmt::format("[ note ] left out, more than 60% of GPU memory: {}\n", fmt::join(left_out, "; "));
}

std::vector<Param> all_params() {
  std::vector<Param> out;
  for (const char* topology : {"h200x2", "hgx-h200"}) {
    const int ranks = load_topology(topology).gpu_count();
    for (const algo::ShippedAlgorithm& a : algo::shipped_algorithms())
      if (a.supports(ranks)) out.push_back({topology, std::string(a.name)});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shipped, AlgorithmsOnGpu, ::testing::ValuesIn(all_params()), [](const auto& info) {
  return testing::test_name(std::string(info.param.topology) + "_" + info.param.algorithm);
});

}  // namespace
}  // namespace canopy
