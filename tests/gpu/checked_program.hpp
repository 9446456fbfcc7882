// check_program_on_gpus: a collective-algorithm program run through the Communicator on the visible GPUs (ranks beyond
// them as virtual ranks) and checked as the planned collectives are: pattern inputs, poisoned outputs, every element
// of every rank compared with the host reference of what the program computes (bench/harness/collective_check.hpp),
// each case twice (the second call reuses counters, scratch and buffers), and twice more in place for in-place
// programs. Shared by the shipped algorithms' and the
// msccl-tools corpus's GPU tests; the caller has checked that a GPU is visible. CANOPY_TEST_MAX_COUNT lowers the
// largest count.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "bench/harness/collective_buffers.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/jit/jit.hpp"
#include "tests/test_util.hpp"

namespace canopy::testing {

// `topology`'s GPUs `gpus` (names or indices; empty: all) are the ranks; `what` names the case in messages.
inline void check_program_on_gpus(const Topology& topology, const std::vector<std::string>& gpus,
                                  const std::shared_ptr<ProgramOutputs>& outputs, const std::string& what) {
  const algo::Program& program = outputs->program;
  const int ranks = program.ranks();
  CommunicatorOptions o;
  o.topology = topology;
  o.gpus = gpus;
  for (int d = 0; d < std::min(visible_gpu_count(), ranks); ++d) o.devices.push_back(d);
  std::unique_ptr<Communicator> comm;
  const Status created = Communicator::create(o, &comm);
  ASSERT_TRUE(created.ok()) << created.message();

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
             {DataType::u8, ReduceOp::min},
             {DataType::f8e4m3, ReduceOp::sum},
             {DataType::u32, ReduceOp::max}};
  else
    kinds = {{DataType::f32, ReduceOp::sum}, {DataType::f16, ReduceOp::sum}, {DataType::u8, ReduceOp::sum}};

  const std::uint64_t chunks = static_cast<std::uint64_t>(program.chunks());
  const std::uint64_t in_chunks = static_cast<std::uint64_t>(program.buffer_chunks(algo::Buffer::input));
  const std::uint64_t out_chunks = static_cast<std::uint64_t>(program.buffer_chunks(algo::Buffer::output));
  const std::uint64_t top = test_max_count() / chunks * chunks;
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  const int ranks_per_gpu = (ranks + comm->devices() - 1) / comm->devices();
  const std::uint64_t budget =
      static_cast<std::uint64_t>(prop.totalGlobalMem * test_memory_fraction(0.6)) / ranks_per_gpu;
  // Per element of count, 8 bytes at most of each of the input, the output and the program's scratch (which the
  // runtime allocates per rank), and the reference.
  const std::uint64_t scratch_chunks = static_cast<std::uint64_t>(program.buffer_chunks(algo::Buffer::scratch));
  const std::uint64_t capacity =
      std::min(top, budget / (8 * (in_chunks + out_chunks + scratch_chunks) / chunks + 8));
  Jit jit(DiskCache::from_environment());
  PatternKernels patterns(jit, fmt::format("sm_{}{}", prop.major, prop.minor));
  std::unique_ptr<CollectiveBuffers> buffers;
  const Status made = CollectiveBuffers::create(*comm, capacity / chunks * in_chunks * 8,
                                                capacity / chunks * out_chunks * 8, patterns, &buffers);
  ASSERT_TRUE(made.ok()) << made.message();

  const auto t0 = std::chrono::steady_clock::now();
  int runs = 0;
  int in_place_runs = 0;
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
      // Twice out of place; an in-place program (MSCCL-IR inplace="1") then twice more in NCCL's in-place layout.
      for (int repeat = 0; repeat < (program.runs_in_place() ? 4 : 2); ++repeat) {
        const bool in_place = repeat >= 2;
        CheckResult result;
        const Status st = buffers->run_checked(*comm, s, in_place, &result);
        ASSERT_TRUE(st.ok()) << st.message();
        ++runs;
        in_place_runs += in_place ? 1 : 0;
        elements += result.checked;
        EXPECT_EQ(result.wrong, 0u) << what << " " << to_string(kind.dtype) << " " << to_string(kind.op) << " count "
                                    << count << (in_place ? " in place" : "") << ": " << result.wrong << " of "
                                    << result.checked << " elements wrong, e.g. "
                                    << (result.examples.empty() ? "" : result.examples[0]);
        s.seed ^= 0x5555;
      }
    }
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << fmt::format("[ runs ] {}: {} ranks on {} GPUs, {} runs ({} in place), {} elements checked, {:.1f} s\n",
                           what, ranks, comm->devices(), runs, in_place_runs, elements, total_s);
  if (!left_out.empty())
    std::cout << fmt::format("[ note ] left out, more than 60% of GPU memory: {}\n", fmt::join(left_out, "; "));
}

}  // namespace canopy::testing
