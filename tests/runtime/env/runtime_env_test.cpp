// The runtime's CANOPY_ variables: kernel shape, large-message, low-latency and direct shapes, pointer checks,
// watchdog, plan file, and the logger's level and subsystems. Each test sets what it reads and restores it.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/plan_json.hpp"
#include "planner/planner.hpp"
#include "core/logger.hpp"
#include "runtime/env/runtime_env.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

using testing::ScopedEnv;

// The message of the canopy::Error `read` throws, or "accepted" when it throws none.
template <typename Read>
std::string error_from(Read&& read) {
  try {
    read();
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(RuntimeEnv, KernelShapeFromVariables) {
  ScopedEnv chunk("CANOPY_CHUNK", "1MiB"), blocks("CANOPY_BLOCKS", "48"), threads("CANOPY_THREADS", "256"),
      fifo("CANOPY_FIFO_DEPTH", "8");
  const CodegenOptions o = shape_from_environment();
  EXPECT_EQ(o.chunk_bytes, 1 << 20);
  EXPECT_EQ(o.blocks_per_rank, 48);
  EXPECT_EQ(o.threads_per_block, 256);
  EXPECT_EQ(o.fifo_depth, 8);
}

TEST(RuntimeEnv, MalformedValuesNameTheVariable) {
  {
    ScopedEnv blocks("CANOPY_BLOCKS", "many");
    try {
      shape_from_environment();
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "CANOPY_BLOCKS='many': expected thread blocks per rank, e.g. 24");
    }
  }
  ScopedEnv watchdog("CANOPY_WATCHDOG_S", "-3");
  EXPECT_THROW(watchdog_seconds_from_environment(), Error);
}

TEST(RuntimeEnv, LargeMessagesDefaultTo64BlocksFrom8MiBAnd128From128MiB) {
  ScopedEnv blocks("CANOPY_BLOCKS", nullptr), large("CANOPY_LARGE_BLOCKS", nullptr),
      bytes("CANOPY_LARGE_BYTES", nullptr), huge("CANOPY_HUGE_BYTES", nullptr), huge_blocks("CANOPY_HUGE_BLOCKS", nullptr);
  const LargeMessageShape l = large_shape_from_environment(24);
  EXPECT_EQ(l.blocks_per_rank, 64);
  EXPECT_EQ(l.min_bytes, 8 << 20);
  EXPECT_EQ(l.huge_blocks_per_rank, 128);
  EXPECT_EQ(l.huge_min_bytes, std::int64_t{128} << 20);
  EXPECT_FALSE(l.blocks_given);
  EXPECT_FALSE(l.huge_given);
}

TEST(RuntimeEnv, ExplicitBlocksHoldForEverySize) {
  ScopedEnv blocks("CANOPY_BLOCKS", "32"), large("CANOPY_LARGE_BLOCKS", nullptr);
  EXPECT_EQ(large_shape_from_environment(32).blocks_per_rank, 32);
  EXPECT_TRUE(large_shape_from_environment(32).blocks_given);
  ScopedEnv both("CANOPY_LARGE_BLOCKS", "96");
  EXPECT_EQ(large_shape_from_environment(32).blocks_per_rank, 96);
}

TEST(RuntimeEnv, LowLatencyUpTo256KiBUnlessSet) {
  {
    ScopedEnv bytes("CANOPY_LL_BYTES", nullptr), blocks("CANOPY_LL_BLOCKS", nullptr),
        threads("CANOPY_LL_THREADS", nullptr);
    const LowLatencyShape l = low_latency_shape_from_environment();
    EXPECT_EQ(l.max_bytes, 256 << 10);  // with 32 blocks LL beats the direct protocol up to 256 KiB
    EXPECT_EQ(l.blocks_per_rank, 32);
    EXPECT_EQ(l.threads_per_block, 512);
  }
  ScopedEnv off("CANOPY_LL_BYTES", "0"), blocks("CANOPY_LL_BLOCKS", "8");
  EXPECT_EQ(low_latency_shape_from_environment().max_bytes, 0);
  EXPECT_EQ(low_latency_shape_from_environment().blocks_per_rank, 8);
  ScopedEnv bad("CANOPY_LL_BYTES", "lots");
  EXPECT_THAT(error_from([] { low_latency_shape_from_environment(); }), ::testing::HasSubstr("CANOPY_LL_BYTES"));
}

TEST(RuntimeEnv, LowLatencyTwoShotFromFourRanksUnlessSet) {
  {
    ScopedEnv unset("CANOPY_LL_TWO_SHOT_BYTES", nullptr);
    EXPECT_EQ(ll_two_shot_bytes_from_environment(), std::nullopt);
    EXPECT_EQ(ll_two_shot_default_bytes(2), 0);          // the same bytes per link either way: one-shot
    EXPECT_EQ(ll_two_shot_default_bytes(3), 0);          // slower at every low-latency size on one H200
    EXPECT_EQ(ll_two_shot_default_bytes(4), 192 << 10);  // where it crossed on one H200
    EXPECT_EQ(ll_two_shot_default_bytes(6), 192 << 10);
    EXPECT_EQ(ll_two_shot_default_bytes(7), 192 << 10);
    EXPECT_EQ(ll_two_shot_default_bytes(8), 96 << 10);
    EXPECT_EQ(ll_two_shot_default_bytes(15), 96 << 10);
    EXPECT_EQ(ll_two_shot_default_bytes(16), 48 << 10);
    EXPECT_EQ(ll_two_shot_default_bytes(64), 48 << 10);
  }
  {
    ScopedEnv set("CANOPY_LL_TWO_SHOT_BYTES", "16KiB");
    EXPECT_EQ(ll_two_shot_bytes_from_environment(), std::int64_t{16} << 10);
  }
  ScopedEnv bad("CANOPY_LL_TWO_SHOT_BYTES", "half");
  EXPECT_THAT(error_from([] { ll_two_shot_bytes_from_environment(); }),
              ::testing::HasSubstr("CANOPY_LL_TWO_SHOT_BYTES"));
}

TEST(RuntimeEnv, DirectTwoShotPerCollectiveFromThreeRanksUnlessSet) {
  {
    ScopedEnv unset("CANOPY_DIRECT_TWO_SHOT_BYTES", nullptr);
    EXPECT_EQ(direct_two_shot_bytes_from_environment(), std::nullopt);
    const Collective all = Collective::allreduce;
    for (Collective c : {all, Collective::broadcast, Collective::reduce})
      EXPECT_EQ(direct_two_shot_default_bytes(c, 2, 2), 0);        // the same bytes per link either way: one-shot
    EXPECT_EQ(direct_two_shot_default_bytes(all, 3, 1), 2 << 20);  // where it crossed on one H200
    EXPECT_EQ(direct_two_shot_default_bytes(all, 4, 1), 1 << 20);
    EXPECT_EQ(direct_two_shot_default_bytes(all, 5, 1), 1 << 20);
    EXPECT_EQ(direct_two_shot_default_bytes(all, 6, 1), 384 << 10);
    EXPECT_EQ(direct_two_shot_default_bytes(all, 7, 1), 384 << 10);
    EXPECT_EQ(direct_two_shot_default_bytes(all, 8, 1), 256 << 10);
    EXPECT_EQ(direct_two_shot_default_bytes(all, 16, 1), 256 << 10);
    EXPECT_EQ(direct_two_shot_default_bytes(all, 64, 1), 256 << 10);
    EXPECT_EQ(direct_two_shot_default_bytes(Collective::reduce, 3, 1), 4 << 20);
    EXPECT_EQ(direct_two_shot_default_bytes(Collective::reduce, 7, 1), 4 << 20);
    EXPECT_EQ(direct_two_shot_default_bytes(Collective::reduce, 8, 1), 2 << 20);
    EXPECT_EQ(direct_two_shot_default_bytes(Collective::reduce, 16, 1), 2 << 20);
    EXPECT_EQ(direct_two_shot_default_bytes(Collective::broadcast, 8, 1), 0);  // slower on one GPU at every size
    EXPECT_EQ(direct_two_shot_default_bytes(Collective::allgather, 8, 1), 0);  // no two-shot kernel
    // Each rank on a GPU of its own, from 4 ranks, the root's link decides (four H200 on NVSwitch): broadcast and
    // reduce from 1 MiB; three ranks and virtual ranks as on one GPU.
    EXPECT_EQ(direct_two_shot_default_bytes(Collective::broadcast, 4, 4), 1 << 20);
    EXPECT_EQ(direct_two_shot_default_bytes(Collective::reduce, 4, 4), 1 << 20);
    EXPECT_EQ(direct_two_shot_default_bytes(Collective::broadcast, 8, 8), 1 << 20);
    EXPECT_EQ(direct_two_shot_default_bytes(Collective::broadcast, 3, 3), 0);
    EXPECT_EQ(direct_two_shot_default_bytes(Collective::reduce, 3, 3), 4 << 20);
    EXPECT_EQ(direct_two_shot_default_bytes(Collective::broadcast, 6, 4), 0);
    EXPECT_EQ(direct_two_shot_default_bytes(all, 4, 4), 1 << 20);
    EXPECT_EQ(direct_two_shot_default_bytes(Collective::broadcast, 2, 2), 0);
  }
  {
    ScopedEnv set("CANOPY_DIRECT_TWO_SHOT_BYTES", "4MiB");
    EXPECT_EQ(direct_two_shot_bytes_from_environment(), std::int64_t{4} << 20);
  }
  ScopedEnv bad("CANOPY_DIRECT_TWO_SHOT_BYTES", "most");
  EXPECT_THAT(error_from([] { direct_two_shot_bytes_from_environment(); }),
              ::testing::HasSubstr("CANOPY_DIRECT_TWO_SHOT_BYTES"));
}

TEST(RuntimeEnv, LL128OffUnlessSet) {
  {
    ScopedEnv bytes("CANOPY_LL128_BYTES", nullptr), blocks("CANOPY_LL128_BLOCKS", nullptr),
        threads("CANOPY_LL128_THREADS", nullptr);
    const LL128Shape l = ll128_shape_from_environment();
    EXPECT_EQ(l.max_bytes, 0);         // unset: ll128_default_bytes, per collective
    EXPECT_EQ(l.blocks_per_rank, 64);  // 32 took 7-37% longer at 4-16 MiB on one H200
    EXPECT_EQ(l.threads_per_block, 512);
  }
  ScopedEnv on("CANOPY_LL128_BYTES", "8MiB"), blocks("CANOPY_LL128_BLOCKS", "16");
  EXPECT_EQ(ll128_shape_from_environment().max_bytes, 8 << 20);
  EXPECT_EQ(ll128_shape_from_environment().blocks_per_rank, 16);
  ScopedEnv bad("CANOPY_LL128_THREADS", "many");
  EXPECT_THAT(error_from([] { ll128_shape_from_environment(); }), ::testing::HasSubstr("CANOPY_LL128_THREADS"));
}

TEST(RuntimeEnv, LL128ByDefaultForTwoRanksOnTwoGpusAndThreeOrFourProcessesOnTheirOwn) {
  // Where it beat the direct protocol on two H200: to 1 MiB for allreduce, 2 MiB for the others, in one process or
  // several.
  for (bool inbox : {false, true}) {
    EXPECT_EQ(ll128_default_bytes(Collective::allreduce, 2, 2, inbox), 1 << 20);
    for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allgather, Collective::reducescatter})
      EXPECT_EQ(ll128_default_bytes(c, 2, 2, inbox), 2 << 20) << to_string(c);
  }
  // Where it beat the inbox kernels of three and four processes on four H200: 512 KiB for allreduce, 1 MiB for
  // broadcast, 2 MiB for the others.
  for (int ranks : {3, 4}) {
    EXPECT_EQ(ll128_default_bytes(Collective::allreduce, ranks, ranks, true), 512 << 10);
    EXPECT_EQ(ll128_default_bytes(Collective::broadcast, ranks, ranks, true), 1 << 20);
    for (Collective c : {Collective::reduce, Collective::allgather, Collective::reducescatter})
      EXPECT_EQ(ll128_default_bytes(c, ranks, ranks, true), 2 << 20) << to_string(c);
    EXPECT_EQ(ll128_default_bytes(Collective::broadcast, ranks, ranks, false), 0);  // one process: mixed, off
  }
  EXPECT_EQ(ll128_default_bytes(Collective::allreduce, 2, 1), 0);        // virtual ranks: no link to cross
  EXPECT_EQ(ll128_default_bytes(Collective::reduce, 4, 2, true), 0);     // nor for half of them
  EXPECT_EQ(ll128_default_bytes(Collective::broadcast, 8, 8, true), 0);  // not measured on more ranks
}

TEST(RuntimeEnv, DirectUpTo32MiBReadPerRankUnlessSet) {
  {
    ScopedEnv bytes("CANOPY_DIRECT_BYTES", nullptr), blocks("CANOPY_DIRECT_BLOCKS", nullptr),
        threads("CANOPY_DIRECT_THREADS", nullptr);
    const DirectShape d = direct_shape_from_environment();
    EXPECT_EQ(d.max_bytes, 32 << 20);
    EXPECT_EQ(d.blocks_per_rank, 32);
    EXPECT_EQ(d.threads_per_block, 512);
  }
  {
    ScopedEnv bytes("CANOPY_DIRECT_BYTES", "1MiB"), blocks("CANOPY_DIRECT_BLOCKS", "16"),
        threads("CANOPY_DIRECT_THREADS", "256");
    const DirectShape d = direct_shape_from_environment();
    EXPECT_EQ(d.max_bytes, 1 << 20);
    EXPECT_EQ(d.blocks_per_rank, 16);
    EXPECT_EQ(d.threads_per_block, 256);
  }
  {
    ScopedEnv off("CANOPY_DIRECT_BYTES", "0");
    EXPECT_EQ(direct_shape_from_environment().max_bytes, 0);
  }
  {
    ScopedEnv bad("CANOPY_DIRECT_BYTES", "lots");
    EXPECT_THAT(error_from([] { direct_shape_from_environment(); }), ::testing::HasSubstr("CANOPY_DIRECT_BYTES"));
  }
  ScopedEnv bytes("CANOPY_DIRECT_BYTES", nullptr), blocks("CANOPY_DIRECT_BLOCKS", "many");
  EXPECT_EQ(error_from([] { direct_shape_from_environment(); }),
            "CANOPY_DIRECT_BLOCKS='many': expected thread blocks per rank, e.g. 32");
}

TEST(RuntimeEnv, HybridFrom64MiBWithTheTopologysShareUnlessSet) {
  {
    ScopedEnv bytes("CANOPY_HYBRID_BYTES", nullptr), share("CANOPY_HYBRID_SHARE", nullptr);
    const HybridShape h = hybrid_shape_from_environment();
    EXPECT_EQ(h.min_bytes, 64 << 20);
    EXPECT_FALSE(h.share.has_value());
  }
  {
    ScopedEnv bytes("CANOPY_HYBRID_BYTES", "0"), share("CANOPY_HYBRID_SHARE", "0.125");
    const HybridShape h = hybrid_shape_from_environment();
    EXPECT_EQ(h.min_bytes, 0);
    ASSERT_TRUE(h.share.has_value());
    EXPECT_DOUBLE_EQ(*h.share, 0.125);
  }
  for (const char* bad : {"0.6", "-0.1", "half", "0.1x"}) {
    ScopedEnv share("CANOPY_HYBRID_SHARE", bad);
    EXPECT_EQ(error_from([] { hybrid_shape_from_environment(); }),
              fmt::format("CANOPY_HYBRID_SHARE='{}': expected the share of a broadcast's "
                          "bytes staged through host memory, 0 to 0.5, e.g. 0.12 (unset: "
                          "from the topology's link rates)",
                          bad));
  }
  ScopedEnv bytes("CANOPY_HYBRID_BYTES", "big");
  EXPECT_THROW(hybrid_shape_from_environment(), Error);
}

TEST(RuntimeEnv, CopyEnginesFromSizesPerCollectiveInChunksSizedToTheCallUnlessSet) {
  {
    ScopedEnv bytes("CANOPY_ENGINE_BYTES", nullptr), chunk("CANOPY_ENGINE_CHUNK", nullptr);
    const EngineShape e = engine_shape_from_environment();
    EXPECT_FALSE(e.min_bytes.has_value());
    EXPECT_EQ(e.min_bytes_for(Collective::broadcast), 64 << 20);
    EXPECT_EQ(e.min_bytes_for(Collective::allreduce), 128 << 20);
    EXPECT_EQ(e.min_bytes_for(Collective::reduce), 256 << 20);
    EXPECT_EQ(e.min_bytes_for(Collective::allgather), 0);
    EXPECT_EQ(e.chunk_bytes, 0);
  }
  {
    ScopedEnv bytes("CANOPY_ENGINE_BYTES", "0"), chunk("CANOPY_ENGINE_CHUNK", "16MiB");
    const EngineShape e = engine_shape_from_environment();
    EXPECT_EQ(e.min_bytes_for(Collective::broadcast), 0);
    EXPECT_EQ(e.chunk_bytes, 16 << 20);
  }
  {
    ScopedEnv bytes("CANOPY_ENGINE_BYTES", "1MiB");
    EXPECT_EQ(engine_shape_from_environment().min_bytes_for(Collective::reduce), 1 << 20);
  }
  for (const char* bad : {"1000", "4097"}) {
    ScopedEnv chunk("CANOPY_ENGINE_CHUNK", bad);
    EXPECT_EQ(error_from([] { engine_shape_from_environment(); }),
              fmt::format("CANOPY_ENGINE_CHUNK='{}': the copy engines' chunk must be a "
                          "multiple of 4 KiB, e.g. 64MiB, or 0 for the schedule sized to each call (the "
                          "default)",
                          bad));
  }
  ScopedEnv bytes("CANOPY_ENGINE_BYTES", "lots");
  EXPECT_THROW(engine_shape_from_environment(), Error);
}

// Receive buffers from cuMemCreate cross to the other process as descriptors unless CANOPY_ENGINE_FD_BUFFERS=0.
TEST(RuntimeEnv, CopyEnginesSendCuMemCreateBuffersUnlessTurnedOff) {
  {
    ScopedEnv fd("CANOPY_ENGINE_FD_BUFFERS", nullptr);
    EXPECT_TRUE(engine_shape_from_environment().fd_buffers);
  }
  {
    ScopedEnv fd("CANOPY_ENGINE_FD_BUFFERS", "0");
    EXPECT_FALSE(engine_shape_from_environment().fd_buffers);
  }
  ScopedEnv fd("CANOPY_ENGINE_FD_BUFFERS", "yes please");
  EXPECT_THROW(engine_shape_from_environment(), Error);
}

TEST(RuntimeEnv, PointerChecksOnUnlessZero) {
  {
    ScopedEnv unset("CANOPY_CHECK_POINTERS", nullptr);
    EXPECT_TRUE(check_pointers_from_environment());
  }
  {
    ScopedEnv off("CANOPY_CHECK_POINTERS", "0");
    EXPECT_FALSE(check_pointers_from_environment());
  }
  {
    ScopedEnv on("CANOPY_CHECK_POINTERS", "1");
    EXPECT_TRUE(check_pointers_from_environment());
  }
  ScopedEnv bad("CANOPY_CHECK_POINTERS", "no");
  EXPECT_THAT(error_from([] { check_pointers_from_environment(); }),
              ::testing::HasSubstr("CANOPY_CHECK_POINTERS='no'"));
  ScopedEnv two("CANOPY_CHECK_POINTERS", "2");  // neither off nor on: refused, not taken for "on"
  EXPECT_THAT(error_from([] { check_pointers_from_environment(); }),
              ::testing::HasSubstr("CANOPY_CHECK_POINTERS=2: use 0"));
}

TEST(RuntimeEnv, LaunchThreadsOnWithTwoHundredMicrosecondSpin) {
  {
    ScopedEnv on("CANOPY_LAUNCH_THREADS", nullptr), spin("CANOPY_LAUNCH_SPIN_US", nullptr);
    const LaunchThreads t = launch_threads_from_environment();
    EXPECT_TRUE(t.enabled);
    EXPECT_EQ(t.spin.count(), 200);
  }
  {
    ScopedEnv off("CANOPY_LAUNCH_THREADS", "0"), spin("CANOPY_LAUNCH_SPIN_US", "5000");
    const LaunchThreads t = launch_threads_from_environment();
    EXPECT_FALSE(t.enabled);
    EXPECT_EQ(t.spin.count(), 5000);
  }
  const std::pair<const char*, const char*> refused[] = {{"CANOPY_LAUNCH_THREADS", "2"},
                                                         {"CANOPY_LAUNCH_THREADS", "yes"},
                                                         {"CANOPY_LAUNCH_SPIN_US", "0"},
                                                         {"CANOPY_LAUNCH_SPIN_US", "-3"},
                                                         {"CANOPY_LAUNCH_SPIN_US", "fast"}};
  for (const auto& [name, value] : refused) {
    ScopedEnv bad(name, value);
    try {
      launch_threads_from_environment();
      ADD_FAILURE() << "accepted " << name << "=" << value;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

TEST(RuntimeEnv, WatchdogOffUnlessSet) {
  {
    ScopedEnv off("CANOPY_WATCHDOG_S", nullptr);
    EXPECT_FALSE(watchdog_seconds_from_environment());
  }
  ScopedEnv zero("CANOPY_WATCHDOG_S", "0");
  EXPECT_FALSE(watchdog_seconds_from_environment());
  ScopedEnv ten("CANOPY_WATCHDOG_S", "10");
  EXPECT_EQ(*watchdog_seconds_from_environment(), 10.0);
}

TEST(RuntimeEnv, GpuSharersAreAWholeCountOrTheVariableIsNamed) {
  {
    ScopedEnv unset("CANOPY_GPU_SHARERS", nullptr);
    EXPECT_EQ(gpu_sharers_from_environment(), 0);
  }
  {
    ScopedEnv four("CANOPY_GPU_SHARERS", "4");
    EXPECT_EQ(gpu_sharers_from_environment(), 4);
  }
  for (const char* bad : {"-1", "two", "4x"}) {
    ScopedEnv v("CANOPY_GPU_SHARERS", bad);
    try {
      (void)gpu_sharers_from_environment();
      ADD_FAILURE() << "accepted CANOPY_GPU_SHARERS=" << bad;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("CANOPY_GPU_SHARERS")) << e.what();
    }
  }
}

TEST(RuntimeEnv, PlanFileIsUsedForItsCollectiveOnly) {
  const Plan p = plan(load_topology("h200x2"), Collective::allgather);
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "canopy-plan-file-test.json";
  std::ofstream(file) << plan_to_json(p);
  ScopedEnv plan_file("CANOPY_PLAN_FILE", file.c_str());
  EXPECT_EQ(plan_file_for(Collective::allgather, {"gpu0", "gpu1"}, ""), p);
  EXPECT_FALSE(plan_file_for(Collective::allreduce, {"gpu0", "gpu1"}, ""));
  try {
    plan_file_for(Collective::allgather, {"gpu1", "gpu0"}, "");
    FAIL() << "other ranks must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("make the plan for these GPUs"), std::string::npos) << e.what();
  }
  std::filesystem::remove(file);
}

TEST(Logger, LevelsAndSubsystems) {
  ScopedEnv level("CANOPY_LOG", "info"), subsys("CANOPY_LOG_SUBSYS", "plan,jit");
  Logger log = Logger::from_environment();
  std::vector<std::string> lines;
  log.set_sink([&](std::string_view l) { lines.emplace_back(l); });
  log.info(LogSubsys::plan, "a plan");
  log.info(LogSubsys::run, "a launch");     // subsystem not chosen
  log.debug(LogSubsys::plan, "details");    // below info
  log.warn(LogSubsys::run, "a warning");    // warnings always show
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("INFO [plan] a plan"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("WARN [run] a warning"), std::string::npos) << lines[1];
}

TEST(Logger, UnknownValuesWarnAndFallBack) {
  ScopedEnv level("CANOPY_LOG", "verbose"), subsys("CANOPY_LOG_SUBSYS", nullptr);
  ::testing::internal::CaptureStderr();
  const Logger log = Logger::from_environment();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(log.level(), LogLevel::warn);
  EXPECT_NE(err.find("CANOPY_LOG='verbose' is not off, warn, info or debug; using warn"), std::string::npos) << err;
}

// The rings of send/recv across processes: 4 slots of 1 MiB unless set; a bad value names its variable and the fix.
TEST(RuntimeEnv, PairRingsDefaultToFourSlotsOfOneMiBAndRefuseWhatCannotHoldAChunk) {
  {
    ScopedEnv bytes("CANOPY_P2P_SLOT_BYTES", nullptr), slots("CANOPY_P2P_SLOTS", nullptr);
    const PairRingShape shape = pair_ring_shape_from_environment();
    EXPECT_EQ(shape.slot_bytes, std::size_t{1} << 20);
    EXPECT_EQ(shape.slots, 4);
  }
  {
    ScopedEnv bytes("CANOPY_P2P_SLOT_BYTES", "256KiB"), slots("CANOPY_P2P_SLOTS", "8");
    const PairRingShape shape = pair_ring_shape_from_environment();
    EXPECT_EQ(shape.slot_bytes, std::size_t{256} << 10);
    EXPECT_EQ(shape.slots, 8);
  }
  // The error a bad value of `variable` gets (empty, and a failure, where it was taken).
  const auto refusal = [](const char* variable, const char* value) -> std::string {
    ScopedEnv given(variable, value);
    try {
      (void)pair_ring_shape_from_environment();
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << variable << "=" << value << " was taken";
    return "";
  };
  for (const char* bad : {"100", "1000", "0"}) {
    const std::string why = refusal("CANOPY_P2P_SLOT_BYTES", bad);
    EXPECT_NE(why.find("CANOPY_P2P_SLOT_BYTES"), std::string::npos) << why;
    EXPECT_NE(why.find("multiple of 256"), std::string::npos) << why;
  }
  for (const char* bad : {"0", "65", "four"}) {
    const std::string why = refusal("CANOPY_P2P_SLOTS", bad);
    EXPECT_NE(why.find("CANOPY_P2P_SLOTS"), std::string::npos) << why;
  }
}

}  // namespace
}  // namespace canopy
