// check_every_call: a collective's specs (every element type and operator) at several counts, in and out of place,
// through a Communicator on CollectiveBuffers, each run checked against the host reference, for the GPU tests of one
// protocol (ll128_gpu_test, ll_two_shot_gpu_test), on the buffers of a CheckedCallSetup (checked_call.hpp). Fresh
// seeds per run; failures name the case.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "runtime/collective_buffers.hpp"
#include "runtime/communicator.hpp"
#include "tests/gpu/checked_call.hpp"

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

// Bytes per rank each way that CheckedCallSetup::make needs for counts up to `largest` elements of the widest type.
inline std::uint64_t sweep_buffer_bytes(Collective collective, int ranks, std::uint64_t largest) {
  const bool spans_ranks = collective == Collective::reducescatter || collective == Collective::allgather;
  return largest * 8 * (spans_ranks ? static_cast<std::uint64_t>(ranks) : 1);
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
