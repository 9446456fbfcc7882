// resolve_config: CommunicatorOptions over the CANOPY_ variables over the defaults, and the errors a bad value gets,
// on any CPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "runtime/comm/communicator_config.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

using testing::ScopedEnv;
using ::testing::HasSubstr;

// Every variable resolve_config reads, unset for the test's scope.
struct CleanEnvironment {
  ScopedEnv vars[27] = {{"CANOPY_HUGE_BYTES", nullptr},     {"CANOPY_HUGE_BLOCKS", nullptr},
                        {"CANOPY_CHUNK", nullptr},          {"CANOPY_BLOCKS", nullptr},
                        {"CANOPY_THREADS", nullptr},        {"CANOPY_FIFO_DEPTH", nullptr},
                        {"CANOPY_LARGE_BYTES", nullptr},    {"CANOPY_LARGE_BLOCKS", nullptr},
                        {"CANOPY_LL_BYTES", nullptr},       {"CANOPY_LL128_BYTES", nullptr},
                        {"CANOPY_DIRECT_BYTES", nullptr},   {"CANOPY_LL_TWO_SHOT_BYTES", nullptr},
                        {"CANOPY_DIRECT_TWO_SHOT_BYTES", nullptr}, {"CANOPY_ENGINE_BYTES", nullptr},
                        {"CANOPY_HYBRID_BYTES", nullptr},   {"CANOPY_HYBRID_SHARE", nullptr},
                        {"CANOPY_LAUNCH_THREADS", nullptr}, {"CANOPY_LAUNCH_SPIN_US", nullptr},
                        {"CANOPY_CHECK_POINTERS", nullptr}, {"CANOPY_WATCHDOG_S", nullptr},
                        {"CANOPY_PULL", nullptr},           {"CANOPY_STAGE_ONLY_SHARED", nullptr},
                        {"CANOPY_OWN_BUFFERS", nullptr}, {"CANOPY_CHECK_CALLS", nullptr},
                        {"CANOPY_INBOX_PIECE_BYTES", nullptr}, {"CANOPY_GPU_SHARERS", nullptr},
                        {"CANOPY_PEER_BUFFERS", nullptr}};
};

std::string error_of(const CommunicatorOptions& o, int ranks = 2) {
  try {
    resolve_config(o, ranks);
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(CommunicatorConfig, DefaultsWithNothingSet) {
  CleanEnvironment clean;
  const CommunicatorConfig c = resolve_config({}, 2);
  EXPECT_EQ(c.large_bytes, 8 << 20);
  EXPECT_EQ(c.large_blocks, 64);                     // beside a training step's compute
  EXPECT_EQ(c.huge_bytes, std::int64_t{128} << 20);  // and 128 blocks from 128 MiB, where the link needs them
  EXPECT_EQ(c.huge_blocks, 128);
  EXPECT_FALSE(c.chunk_fixed);
  EXPECT_TRUE(c.protocols.use_tuned);
  EXPECT_FALSE(c.protocols.ll128_given);
  EXPECT_EQ(c.protocols.low_latency.max_bytes, 256 << 10);
  EXPECT_EQ(c.protocols.direct.max_bytes, 32 << 20);
  EXPECT_EQ(c.protocols.ll_two_shot_bytes, ll_two_shot_default_bytes(2));
  EXPECT_FALSE(c.protocols.direct_two_shot_bytes.has_value());
  EXPECT_TRUE(c.launch.enabled);
  EXPECT_TRUE(c.check_pointers);
  EXPECT_FALSE(c.watchdog_seconds.has_value());
}

TEST(CommunicatorConfig, OptionsOverrideTheEnvironment) {
  CleanEnvironment clean;
  ScopedEnv ll("CANOPY_LL_BYTES", "64KiB"), blocks("CANOPY_BLOCKS", "8");
  CommunicatorOptions o;
  o.low_latency_bytes = 4096;
  const CommunicatorConfig c = resolve_config(o, 2);
  EXPECT_EQ(c.protocols.low_latency.max_bytes, 4096);
  EXPECT_EQ(c.shape.blocks_per_rank, 8);    // from the environment
  EXPECT_EQ(c.large_blocks, 8);             // CANOPY_BLOCKS holds for every size
  EXPECT_EQ(c.huge_blocks, 8);
  EXPECT_EQ(c.huge_bytes, 0);               // and no huge class of its own
  EXPECT_FALSE(c.protocols.use_tuned);      // a limit was given: tuning.json's do not stand in
}

// The default huge class gives way to a large-block count that was chosen (it holds for every large call) and to a
// large-message size at or above its own; a huge variable keeps it.
TEST(CommunicatorConfig, TheDefaultHugeClassGivesWayToChosenLargeMessages) {
  CleanEnvironment clean;
  {
    ScopedEnv large("CANOPY_LARGE_BLOCKS", "96");
    const CommunicatorConfig c = resolve_config({}, 2);
    EXPECT_EQ(c.large_blocks, 96);
    EXPECT_EQ(c.huge_bytes, 0);
    ScopedEnv huge("CANOPY_HUGE_BLOCKS", "112");
    const CommunicatorConfig kept = resolve_config({}, 2);
    EXPECT_EQ(kept.huge_bytes, std::int64_t{128} << 20);
    EXPECT_EQ(kept.huge_blocks, 112);
  }
  {
    ScopedEnv bytes("CANOPY_LARGE_BYTES", "256MiB");
    const CommunicatorConfig c = resolve_config({}, 2);  // not an error: the default was not asked for
    EXPECT_EQ(c.large_bytes, std::int64_t{256} << 20);
    EXPECT_EQ(c.huge_bytes, 0);
  }
  CommunicatorOptions o;
  o.large_blocks_per_rank = 32;
  EXPECT_EQ(resolve_config(o, 2).huge_bytes, 0);
  o.huge_bytes = std::int64_t{512} << 20;
  EXPECT_EQ(resolve_config(o, 2).huge_bytes, std::int64_t{512} << 20);
}

// The huge class: from the variables, the options over them, and the errors of a size that is not above the large one.
TEST(CommunicatorConfig, HugeMessagesComeFromTheVariablesElseTheOptions) {
  CleanEnvironment clean;
  {
    ScopedEnv bytes("CANOPY_HUGE_BYTES", "128MiB"), blocks("CANOPY_HUGE_BLOCKS", "96"),
        large("CANOPY_LARGE_BLOCKS", "64");
    const CommunicatorConfig c = resolve_config({}, 2);
    EXPECT_EQ(c.huge_bytes, std::int64_t{128} << 20);
    EXPECT_EQ(c.huge_blocks, 96);
    EXPECT_EQ(c.large_blocks, 64);
    EXPECT_EQ(c.large_bytes, 8 << 20);
    CommunicatorOptions o;
    o.huge_bytes = std::int64_t{64} << 20;
    o.huge_blocks_per_rank = 112;
    const CommunicatorConfig given = resolve_config(o, 2);
    EXPECT_EQ(given.huge_bytes, std::int64_t{64} << 20);
    EXPECT_EQ(given.huge_blocks, 112);
  }
  CommunicatorOptions o;
  o.huge_bytes = -1;
  EXPECT_THAT(error_of(o),
              HasSubstr("huge-message size -1 bytes (CANOPY_HUGE_BYTES): use 0 (none) or a positive size"));
  o.huge_bytes = 8 << 20;  // the large limit itself: no call would be large and not huge
  EXPECT_THAT(error_of(o), HasSubstr("huge-message size 8 MiB is not above the large-message size 8 MiB"));
  o.large_bytes = 1 << 20;
  EXPECT_EQ(error_of(o), "accepted");
  o.huge_blocks_per_rank = 0;
  EXPECT_THAT(error_of(o), HasSubstr("huge-message blocks (CANOPY_HUGE_BLOCKS): blocks per rank 0: use 1 to 1024"));
  ScopedEnv bad("CANOPY_HUGE_BYTES", "lots");
  EXPECT_THAT(error_of({}), HasSubstr("CANOPY_HUGE_BYTES"));
}

TEST(CommunicatorConfig, AGivenLimitOrChunkTurnsTuningOff) {
  CleanEnvironment clean;
  {
    ScopedEnv direct("CANOPY_DIRECT_BYTES", "1MiB");
    EXPECT_FALSE(resolve_config({}, 2).protocols.use_tuned);
  }
  {
    ScopedEnv ll128("CANOPY_LL128_BYTES", "1MiB");
    const CommunicatorConfig c = resolve_config({}, 2);
    EXPECT_FALSE(c.protocols.use_tuned);
    EXPECT_TRUE(c.protocols.ll128_given);
  }
  CommunicatorOptions o;
  o.tuned_protocols = false;
  EXPECT_FALSE(resolve_config(o, 2).protocols.use_tuned);
  o.chunk_bytes = 65536;
  EXPECT_TRUE(resolve_config(o, 2).chunk_fixed);
}

TEST(CommunicatorConfig, BadValuesNameTheSettingAndTheFix) {
  CleanEnvironment clean;
  CommunicatorOptions o;
  o.direct_bytes = -1;
  EXPECT_THAT(error_of(o), HasSubstr("direct-protocol limit -1 bytes: use 0 (off) or a positive size"));
  o = {};
  o.ll_two_shot_bytes = -5;
  EXPECT_THAT(error_of(o), HasSubstr("low-latency two-shot limit -5 bytes"));
  o = {};
  o.direct_two_shot_bytes = -5;
  EXPECT_THAT(error_of(o), HasSubstr("direct two-shot limit -5 bytes"));
  o = {};
  o.hybrid_share = 0.75;
  EXPECT_THAT(error_of(o), HasSubstr("hybrid share 0.75: use 0 to 0.5"));
  o = {};
  o.hybrid_bytes = -1;
  EXPECT_THAT(error_of(o), HasSubstr("hybrid limit -1 bytes"));
  o = {};
  o.engine_bytes = -1;
  EXPECT_THAT(error_of(o), HasSubstr("copy-engine limit -1 bytes"));
  o = {};
  o.launch_spin = std::chrono::microseconds(0);
  EXPECT_THAT(error_of(o), HasSubstr("launch_spin 0 us: use at least 1 us"));
}

TEST(CommunicatorConfig, EnvironmentTurnsWatchdogAndPointerChecksOnAndOff) {
  CleanEnvironment clean;
  ScopedEnv watchdog("CANOPY_WATCHDOG_S", "2.5"), pointers("CANOPY_CHECK_POINTERS", "0"),
      threads("CANOPY_LAUNCH_THREADS", "0");
  const CommunicatorConfig c = resolve_config({}, 2);
  ASSERT_TRUE(c.watchdog_seconds.has_value());
  EXPECT_DOUBLE_EQ(*c.watchdog_seconds, 2.5);
  EXPECT_FALSE(c.check_pointers);
  EXPECT_FALSE(c.launch.enabled);
}

// The multi-process switches: own buffers and peer buffers on, the others off unless set; a value that is not 0 or 1
// names the variable.
TEST(CommunicatorConfig, MultiProcessSwitchesHaveTheirDefaults) {
  CleanEnvironment clean;
  CommunicatorConfig c = resolve_config({}, 2);
  EXPECT_FALSE(c.stage_only_shared);
  EXPECT_TRUE(c.own_buffers);
  EXPECT_TRUE(c.peer_buffers);
  EXPECT_EQ(c.check_calls, CallCheck::host);
  {
    ScopedEnv own("CANOPY_OWN_BUFFERS", "0"), shared("CANOPY_STAGE_ONLY_SHARED", "1"), peer("CANOPY_PEER_BUFFERS", "0");
    c = resolve_config({}, 2);
    EXPECT_FALSE(c.own_buffers);
    EXPECT_TRUE(c.stage_only_shared);
    EXPECT_FALSE(c.peer_buffers);
  }
  {
    ScopedEnv bad("CANOPY_PEER_BUFFERS", "on");
    EXPECT_THAT(error_of({}), HasSubstr("CANOPY_PEER_BUFFERS"));
  }
  ScopedEnv bad("CANOPY_OWN_BUFFERS", "yes please");
  EXPECT_THAT(error_of({}), HasSubstr("CANOPY_OWN_BUFFERS"));
}

// CANOPY_CHECK_CALLS: unset, calls are compared through each host's shared pages; 0 not at all; 1 through the
// bootstrap root as well; anything else names the variable and its three settings.
TEST(CommunicatorConfig, CallsAreComparedThroughTheSharedPagesUnlessTheVariableSaysOtherwise) {
  CleanEnvironment clean;
  EXPECT_EQ(resolve_config({}, 2).check_calls, CallCheck::host);
  {
    ScopedEnv empty("CANOPY_CHECK_CALLS", "");
    EXPECT_EQ(resolve_config({}, 2).check_calls, CallCheck::host);
  }
  {
    ScopedEnv off("CANOPY_CHECK_CALLS", "0");
    EXPECT_EQ(resolve_config({}, 2).check_calls, CallCheck::off);
  }
  {
    ScopedEnv round_trip("CANOPY_CHECK_CALLS", "1");
    EXPECT_EQ(resolve_config({}, 2).check_calls, CallCheck::round_trip);
  }
  for (const char* bad : {"2", "yes", "01", " 1"}) {
    ScopedEnv v("CANOPY_CHECK_CALLS", bad);
    const std::string e = error_of({});
    EXPECT_THAT(e, HasSubstr(std::string("CANOPY_CHECK_CALLS='") + bad + "': use 0 (compare no calls), 1")) << bad;
    EXPECT_THAT(e, HasSubstr("or leave it unset")) << bad;
  }
}

// The direct inbox kernels' pieces: unset (the defaults of set_up_protocols) unless given; a size, or an error that
// names the variable and the fix.
TEST(CommunicatorConfig, InboxPieceBytesAreUnsetUnlessGiven) {
  CleanEnvironment clean;
  EXPECT_EQ(resolve_config({}, 2).inbox_piece_bytes, std::nullopt);  // set_up_protocols' defaults
  {
    ScopedEnv piece("CANOPY_INBOX_PIECE_BYTES", "64KiB");
    EXPECT_EQ(resolve_config({}, 2).inbox_piece_bytes, 65536);
  }
  {
    ScopedEnv whole("CANOPY_INBOX_PIECE_BYTES", "0");  // given as whole parts: holds over the defaults across GPUs
    EXPECT_EQ(resolve_config({}, 2).inbox_piece_bytes, 0);
  }
  ScopedEnv odd("CANOPY_INBOX_PIECE_BYTES", "100");
  EXPECT_THAT(error_of({}),
              HasSubstr("CANOPY_INBOX_PIECE_BYTES='100': use 0 (whole parts) or a positive multiple of 16"));
}

// The processes sharing a GPU: the communicator's own unless the option or CANOPY_GPU_SHARERS says more; the option
// wins over the variable; a negative count names the setting.
TEST(CommunicatorConfig, GpuSharersComeFromTheOptionElseTheVariable) {
  CleanEnvironment clean;
  EXPECT_EQ(resolve_config({}, 2).gpu_sharers, 0);
  ScopedEnv four("CANOPY_GPU_SHARERS", "4");
  EXPECT_EQ(resolve_config({}, 2).gpu_sharers, 4);
  CommunicatorOptions o;
  o.gpu_sharers = 6;
  EXPECT_EQ(resolve_config(o, 2).gpu_sharers, 6);
  o.gpu_sharers = -1;
  EXPECT_THAT(error_of(o), HasSubstr("gpu_sharers -1: give the processes that share this GPU in all"));
}

}  // namespace
}  // namespace canopy
