// check_every_call: a collective's specs (every element type and operator) at several counts, in and out of place,
// through a Communicator on CollectiveBuffers, each run checked against the host reference, for the GPU tests of one
// protocol (ll128_gpu_test, ll_two_shot_gpu_test). Fresh seeds per run; failures name the case.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/collective_buffers.hpp"
#include "runtime/communicator.hpp"
#include "runtime/jit.hpp"

namespace canopy::testing {

inline constexpr DataType kEveryType[] = {DataType::f32, DataType::f16, DataType::bf16, DataType::f64,
                                          DataType::i32, DataType::i64, DataType::u8};
inline constexpr ReduceOp kEveryOp[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max};

// The specs of `collective` for every element type and, where it reduces, every operator; root: the last rank.
inline std::vector<CollectiveSpec> every_type_and_op(Collective collective, int ranks) {
  std::vector<CollectiveSpec> specs;
  for (DataType t : kEveryType)
    for (ReduceOp op : kEveryOp)
      if (reduces(collective) || op == ReduceOp::sum) specs.push_back(CollectiveSpec{collective, t, op, ranks - 1});
  return specs;
}

// Pattern kernels and buffers on GPU 0's architecture for counts up to `largest` elements of the widest type.
struct SweepBuffers {
  std::unique_ptr<Jit> jit;
  std::unique_ptr<PatternKernels> patterns;
  std::unique_ptr<CollectiveBuffers> buffers;
};
inline void make_sweep_buffers(const Communicator& comm, Collective collective, std::uint64_t largest,
                               SweepBuffers* out) {
  const std::uint64_t ranks = static_cast<std::uint64_t>(comm.ranks());
  const std::uint64_t send_mult = collective == Collective::reducescatter ? ranks : 1;
  const std::uint64_t recv_mult = collective == Collective::allgather ? ranks : 1;
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  out->jit = std::make_unique<Jit>(DiskCache::from_environment());
  out->patterns = std::make_unique<PatternKernels>(*out->jit, fmt::format("sm_{}{}", prop.major, prop.minor));
  const std::uint64_t top = largest * 8;  // the widest type
  ASSERT_TRUE(CollectiveBuffers::create(comm, top * send_mult, top * recv_mult, *out->patterns, &out->buffers).ok());
}

// Every spec at every count, out of place then in place, checked; `taken(spec, count)` counts the calls that took the
// protocol under test into *taken_count. Returns the runs made.
inline int check_every_call(Communicator& comm, CollectiveBuffers& buffers, std::span<const CollectiveSpec> specs,
                            std::span<const std::uint64_t> counts, const std::string& label,
                            const std::function<bool(const CollectiveSpec&, std::uint64_t)>& taken, int* taken_count) {
  int runs = 0;
  for (const CollectiveSpec& spec : specs)
    for (std::uint64_t count : counts) {
      if (taken(spec, count)) ++*taken_count;
      for (bool in_place : {false, true}) {
        CheckSpec s{spec.collective, spec.dtype, spec.op, spec.root, comm.ranks(), count, 0};
        s.seed = (static_cast<std::uint64_t>(runs) + 1) * 0x9E3779B97F4A7C15ull;
        CheckResult result;
        const Status st = buffers.run_checked(comm, s, in_place, &result);
        EXPECT_TRUE(st.ok()) << st.message();
        if (!st.ok()) return runs;
        ++runs;
        EXPECT_GT(result.checked, 0u);
        EXPECT_EQ(result.wrong, 0u) << label << " " << to_string(spec.collective) << " " << to_string(spec.dtype) << " "
                                    << to_string(spec.op) << " count " << count << (in_place ? " in place" : "") << ": "
                                    << result.wrong << " of " << result.checked << " elements wrong, e.g. "
                                    << (result.examples.empty() ? "" : result.examples[0]);
      }
    }
  return runs;
}

}  // namespace canopy::testing
