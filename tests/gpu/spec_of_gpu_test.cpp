// Communicator::spec_of on real GPUs (label gpu; SKIPPED without one): the spec it gives for a call's shape names the
// protocol the protocol queries say such a call takes (low-latency, LL128, direct, two-shot, large), for every
// collective, sizes on each side of the protocols' limits, roots and in or out of place; and prepare() of those specs
// loads kernels the calls then run, every output checked against the host reference. Under a huge class
// (CommunicatorOptions::huge_bytes) the largest calls take a kernel of their own with the huge-message blocks, hybrid
// calls by their whole size.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "runtime/comm/communicator.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "tests/gpu/checked_sweep.hpp"

namespace canopy {
namespace {

constexpr Collective kEveryCollective[] = {Collective::broadcast, Collective::reduce, Collective::allreduce,
                                           Collective::allgather, Collective::reducescatter};

TEST(SpecOfOnGpu, NamesTheProtocolTheQueriesChooseAndPreparesWhatTheCallsRun) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  CommunicatorOptions o = testing::sweep_options({"h200x2", "h200x2", {}});
  o.ll128_bytes = 1 << 20;  // LL128 reached too (off by default on one GPU)
  std::unique_ptr<Communicator> comm;
  const Status created = Communicator::create(o, &comm);
  ASSERT_TRUE(created.ok()) << created.message();
  // f32 elements: the LL limit's sides (256 KiB), LL128's (1 MiB), the direct protocol's far side (32 MiB on the
  // busiest link), and the large calls' (8 MiB per rank).
  const std::uint64_t counts[] = {1, 65536, 65537, 262145, 2097152, 2097153, 16777217};
  std::vector<CollectiveSpec> specs;
  for (Collective c : kEveryCollective)
    for (std::uint64_t count : counts)
      for (int root : {0, 1})
        for (bool in_place : {false, true}) {
          const CollectiveSpec s = comm->spec_of(c, count, DataType::f32, ReduceOp::sum, root, in_place);
          const std::string what = fmt::format("{} count {} root {} {}", call_name(c), count, root,
                                               in_place ? "in place" : "out of place");
          EXPECT_EQ(s.collective, c) << what;
          EXPECT_EQ(s.low_latency, comm->is_low_latency(c, count, DataType::f32)) << what;
          EXPECT_EQ(s.ll128, comm->is_ll128(c, count, DataType::f32)) << what;
          EXPECT_EQ(s.direct, comm->is_direct(c, count, DataType::f32, in_place)) << what;
          EXPECT_EQ(s.two_shot, comm->is_two_shot(c, count, DataType::f32, in_place)) << what;
          EXPECT_EQ(s.large, comm->is_large(c, count, DataType::f32)) << what;
          if (std::find(specs.begin(), specs.end(), s) == specs.end()) specs.push_back(s);
        }
  // An avg runs as a sum, then a division: its kernel is the sum's.
  for (Collective c : {Collective::reduce, Collective::allreduce, Collective::reducescatter})
    EXPECT_EQ(comm->spec_of(c, 65537, DataType::bf16, ReduceOp::avg, 1),
              comm->spec_of(c, 65537, DataType::bf16, ReduceOp::sum, 1))
        << call_name(c);
  // Every protocol appears among them.
  const auto some = [&](bool CollectiveSpec::*flag) {
    return std::any_of(specs.begin(), specs.end(), [&](const CollectiveSpec& s) { return s.*flag; });
  };
  EXPECT_TRUE(some(&CollectiveSpec::low_latency));
  EXPECT_TRUE(some(&CollectiveSpec::ll128));
  EXPECT_TRUE(some(&CollectiveSpec::direct));
  EXPECT_TRUE(some(&CollectiveSpec::large));
  const Status prepared = comm->prepare(specs);
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  for (const CollectiveSpec& s : specs) {
    CollectiveInfo info;
    const Status known = comm->info(s, &info);
    EXPECT_TRUE(known.ok()) << spec_text(s) << ": " << known.message();
  }
  // The calls, run after it, are right: each collective, f32 sum, root the last rank, on each side of the limits.
  std::vector<CollectiveSpec> calls;
  for (Collective c : kEveryCollective) calls.push_back(CollectiveSpec{c, DataType::f32, ReduceOp::sum, 1});
  const std::uint64_t checked_counts[] = {1, 65537, 2097153};
  CheckedCallSetup setup;
  ASSERT_TRUE(setup.make(*comm, testing::sweep_buffer_bytes(Collective::allgather, comm->ranks(), 2097153)));
  int taken = 0;
  const int runs = testing::check_every_call(*comm, setup.buffers(), calls, checked_counts, "spec_of",
                                             [](const CollectiveSpec&, std::uint64_t) { return true; }, &taken);
  EXPECT_EQ(runs, 2 * taken);
}

// Large calls from huge_bytes are huge: their spec says so, their kernel has huge_blocks_per_rank blocks and the large
// ones large_blocks_per_rank, and both compute their collective. The planned trees only (the one-launch protocols,
// copy engines and host paths off), at small sizes so the sweep stays quick.
TEST(SpecOfOnGpu, HugeCallsTakeTheirOwnBlocks) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  CommunicatorOptions o = testing::sweep_options({"h200x2", "h200x2", {}});
  o.low_latency_bytes = o.ll128_bytes = o.direct_bytes = o.engine_bytes = o.hybrid_bytes = 0;
  o.large_bytes = 64 << 10;
  o.large_blocks_per_rank = 8;
  o.huge_bytes = 1 << 20;
  o.huge_blocks_per_rank = 16;
  std::unique_ptr<Communicator> comm;
  const Status created = Communicator::create(o, &comm);
  ASSERT_TRUE(created.ok()) << created.message();
  // f32 per rank: 16 KiB (small), 64 KiB (large), 1 MiB and 1 MiB + 4 B (huge).
  const std::uint64_t counts[] = {4096, 16384, 262144, 262145};
  std::vector<CollectiveSpec> calls;
  for (Collective c : kEveryCollective) {
    calls.push_back(CollectiveSpec{c, DataType::f32, ReduceOp::sum, 1});
    for (std::uint64_t count : counts) {
      const CollectiveSpec s = comm->spec_of(c, count, DataType::f32, ReduceOp::sum, 1, false);
      const std::uint64_t bytes = size_bytes(c, count, DataType::f32, comm->ranks());
      const std::string what = fmt::format("{} count {} ({} B per rank)", call_name(c), count, bytes);
      EXPECT_EQ(s.large, bytes >= (64u << 10)) << what;
      EXPECT_EQ(s.huge, bytes >= (1u << 20)) << what;
      EXPECT_EQ(s.huge, comm->is_huge(c, count, DataType::f32)) << what;
      CollectiveInfo info;
      const Status known = comm->info(s, &info);
      ASSERT_TRUE(known.ok()) << what << ": " << known.message();
      EXPECT_EQ(info.options.blocks_per_rank, s.huge ? 16 : s.large ? 8 : 24) << what << ": " << spec_text(s);
    }
  }
  CheckedCallSetup setup;
  ASSERT_TRUE(setup.make(*comm, testing::sweep_buffer_bytes(Collective::allgather, comm->ranks(), 262145)));
  int huge = 0;
  const int runs = testing::check_every_call(
      *comm, setup.buffers(), calls, counts, "huge",
      [&](const CollectiveSpec& s, std::uint64_t count) { return comm->is_huge(s.collective, count, DataType::f32); },
      &huge);
  EXPECT_GT(huge, 0);
  EXPECT_EQ(runs, 2 * static_cast<int>(calls.size() * std::size(counts)));
}

// A call whose tail crosses the host path (a hybrid transfer) keeps the class of its whole size: at exactly
// huge_bytes it runs the huge kernel spec_of names and prepare loaded, not a large one for the kernels' smaller share
// (a8b15b4; before it, such a call loaded and ran the large kernel). Needs ranks on two GPUs (a quarter of the call
// is staged, CANOPY_HYBRID_SHARE's option); skipped where nothing would be staged.
TEST(SpecOfOnGpu, AHybridCallTakesTheClassOfItsWholeSize) {
  if (visible_gpu_count() == 0)
    GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount found none): run on a GPU machine";
  CommunicatorOptions o = testing::sweep_options({"h200x2", "h200x2", {}});
  o.low_latency_bytes = o.ll128_bytes = o.direct_bytes = o.engine_bytes = 0;
  o.large_bytes = 64 << 10;
  o.large_blocks_per_rank = 8;
  o.huge_bytes = o.hybrid_bytes = 1 << 20;
  o.hybrid_share = 0.25;  // the topology's share at 1 MiB is nil (the host path's latency): a quarter, fixed
  o.huge_blocks_per_rank = 16;
  std::vector<std::string> log;
  o.log_sink = [&](std::string_view line) { log.emplace_back(line); };
  setenv("CANOPY_LOG", "info", 1);  // the kernels' load lines (jit); this test's process alone
  std::unique_ptr<Communicator> comm;
  const Status created = Communicator::create(o, &comm);
  unsetenv("CANOPY_LOG");
  ASSERT_TRUE(created.ok()) << created.message();
  const std::uint64_t count = (1 << 20) / 4;  // f32: exactly huge_bytes
  const std::uint64_t staged = comm->staged_count(Collective::broadcast, count, DataType::f32, 0);
  if (staged == 0)
    GTEST_SKIP() << "no share of a 1 MiB broadcast crosses the host here (ranks on one GPU, or a GPU without a host "
                    "link): nothing to check";
  const CollectiveSpec spec = comm->spec_of(Collective::broadcast, count, DataType::f32, ReduceOp::sum, 0);
  ASSERT_TRUE(spec.huge) << spec_text(spec);
  ASSERT_TRUE(comm->prepare(std::span<const CollectiveSpec>(&spec, 1)).ok());
  const auto loads = [&](const char* label) {
    return std::count_if(log.begin(), log.end(), [&](const std::string& line) {
      return line.find(label) != std::string::npos && line.find(": kernel ") != std::string::npos;
    });
  };
  ASSERT_EQ(loads("(huge messages)"), 1) << "prepare loads the huge kernel once";
  CheckedCallSetup setup;
  ASSERT_TRUE(setup.make(*comm, 1 << 20));
  const CheckSpec call{Collective::broadcast, DataType::f32, ReduceOp::sum, 0, comm->ranks(), count, 0x5eedu};
  EXPECT_TRUE(run_checked_call(*comm, setup.buffers(), call, false, nullptr));
  EXPECT_EQ(loads("(large messages)"), 0) << "the call (" << staged << " of " << count
                                          << " elements through the host) loaded a large kernel";
  EXPECT_EQ(loads("(huge messages)"), 1) << "the call loaded another huge kernel";
}

}  // namespace
}  // namespace canopy
