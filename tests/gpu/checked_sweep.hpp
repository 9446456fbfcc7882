// check_every_call: a collective's specs (every element type and operator) at several counts, in and out of place,
// through a Communicator on CollectiveBuffers, each run checked against the host reference, for the GPU tests of one
// protocol (ll128_gpu_test, ll_two_shot_gpu_test, direct_two_shot_gpu_test), on the buffers of a CheckedCallSetup
// (checked_call.hpp). Fresh seeds per run; failures name the case. expect_same_allreduce_bits: two kernels' float
// sums of the same inputs, byte for byte. SweepCase: the machines such a test runs on.
#pragma once

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "topology/shipped_topologies.hpp"
#include "bench/harness/collective_buffers.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "tests/gpu/checked_call.hpp"

namespace canopy::testing {

// A machine for a sweep: a shipped topology, optionally a tenant's GPUs of it.
struct SweepCase {
  const char* name;
  const char* topology;
  std::vector<std::string> gpus;  // empty: every GPU of the topology
};

// The two-shot tests' machines: two ranks (on two GPUs where the machine has them), three (shares of unequal size),
// eight and sixteen as virtual ranks on one GPU.
inline const SweepCase kTwoShotCases[] = {
    {"h200x2", "h200x2", {}},
    {"dgx1_v100_three", "dgx1-v100", {"0", "1", "2"}},
    {"hgx_h200", "hgx-h200", {}},
    {"dgx2", "dgx2", {}},
};

// Options of a communicator for `tc`: every rank on GPU 0, but two ranks on GPUs 0 and 1 where both are visible.
inline CommunicatorOptions sweep_options(const SweepCase& tc) {
  CommunicatorOptions o;
  o.topology = load_topology(tc.topology);
  o.gpus = tc.gpus;
  o.devices.push_back(0);
  const int ranks = tc.gpus.empty() ? o.topology->gpu_count() : static_cast<int>(tc.gpus.size());
  if (ranks == 2 && visible_gpu_count() >= 2) o.devices.push_back(1);
  return o;
}

inline constexpr const DataType (&kEveryType)[kDataTypeCount] = kEveryDataType;  // NCCL's twelve, fp8 included
inline constexpr ReduceOp kEveryOp[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg};

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

// Every element type and operator of `collective` at 1, 7, 1000 and `largest` elements, in and out of place, through
// `comm`, each checked; `two_shot(spec, count)` must hold for every spec and count (the kernel under test runs them
// all). Prints the runs made, as the other sweeps do.
inline void check_two_shot_calls(Communicator& comm, Collective collective, std::uint64_t largest,
                                 const std::string& label,
                                 const std::function<bool(const CollectiveSpec&, std::uint64_t)>& two_shot) {
  const std::vector<CollectiveSpec> specs = every_type_and_op(collective, comm.ranks());
  CheckedCallSetup setup;
  ASSERT_TRUE(setup.make(comm, sweep_buffer_bytes(collective, comm.ranks(), largest)));
  const std::uint64_t counts[] = {1, 7, 1000, largest};
  int taken = 0;
  const int runs = check_every_call(comm, setup.buffers(), specs, counts, label, two_shot, &taken);
  EXPECT_EQ(taken, 4 * static_cast<int>(specs.size()));  // every count
  std::cout << fmt::format("[ runs ] {} {}: {} ranks on {} GPUs, {} runs, {} of the counts two-shot\n", label,
                           to_string(collective), comm.ranks(), comm.devices(), runs, taken);
}

// An allreduce sum of `count` elements of each type in `types` through `one` and then `two` (communicators of the
// same ranks, e.g. one-shot and two-shot) on the same inputs: every rank of `two` must hold rank 0's bytes, and each
// rank the bytes it holds after `one`'s call. Floating-point sums depend on the order of the additions, so this
// holds only where both combine in rank order.
inline void expect_same_allreduce_bits(Communicator& one, Communicator& two, CollectiveBuffers& buffers,
                                       std::uint64_t count, std::span<const DataType> types, const std::string& label) {
  const int ranks = one.ranks();
  for (DataType t : types) {
    const std::uint64_t bytes = count * static_cast<std::uint64_t>(size_of(t));
    std::vector<std::vector<unsigned char>> out[2];
    for (int k = 0; k < 2; ++k) {
      CheckSpec s{Collective::allreduce, t, ReduceOp::sum, 0, ranks, count, 0};
      s.seed = 0x5EED + static_cast<std::uint64_t>(t);  // the same inputs for both kernels
      CollectiveCall call;
      ASSERT_TRUE(buffers.set_up(s, false, &call).ok());
      const Status st = (k == 0 ? one : two).run(call);
      ASSERT_TRUE(st.ok()) << st.message();
      ASSERT_TRUE(buffers.synchronize().ok());
      for (int r = 0; r < ranks; ++r) {
        out[k].emplace_back(bytes);
        ASSERT_EQ(cudaMemcpy(out[k].back().data(), call.recv[r], bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      }
    }
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(std::memcmp(out[1][r].data(), out[1][0].data(), bytes), 0)
          << label << " " << to_string(t) << ": rank " << r << " of the second kernel differs from rank 0";
      EXPECT_EQ(std::memcmp(out[1][r].data(), out[0][r].data(), bytes), 0)
          << label << " " << to_string(t) << ": rank " << r << " differs between the two kernels";
    }
  }
}

}  // namespace canopy::testing
