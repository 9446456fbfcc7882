// The low-latency kernels' source (codegen/low_latency_source.hpp): names, launches per device (virtual ranks),
// the Config the template reads, buffer sizes, and refusals. NVRTC compiles them in
// tests/runtime/jit/generated_kernels_nvrtc_test.cpp and tests/gpu/ runs them.
#include <gtest/gtest.h>

#include "codegen/low_latency_source.hpp"
#include "core/error.hpp"

namespace canopy {
namespace {

TEST(LowLatencySource, OneLaunchPerDeviceWithItsRanks) {
  LowLatencySpec spec;
  spec.base.collective = Collective::reduce;
  spec.base.dtype = DataType::bf16;
  spec.base.op = ReduceOp::max;
  spec.base.ranks = 8;
  spec.base.root = 3;
  spec.base.device_of_rank = block_placement(8, 2);
  const KernelSource k = low_latency_source(spec);
  EXPECT_EQ(k.name, "canopy_ll_reduce_r8_d2_b4_bf16_max_root3");
  ASSERT_EQ(k.launches.size(), 2u);
  EXPECT_EQ(k.launches[1].ranks, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(k.launches[1].blocks, 4 * 4);
  EXPECT_EQ(k.launches[1].threads, 256);
  EXPECT_NE(k.file.text.find("static constexpr int kCollective = canopy::kLLReduce;"), std::string::npos);
  EXPECT_NE(k.file.text.find("static constexpr int kRoot = 3;"), std::string::npos);
  EXPECT_NE(k.file.text.find("static constexpr unsigned long long kLines = 8192;"), std::string::npos);  // 64 KiB
  EXPECT_NE(k.file.text.find("__device__ const int kRanksOf1[] = {4, 5, 6, 7};"), std::string::npos);
  EXPECT_EQ(low_latency_source(spec).file.text, k.file.text);  // deterministic
}

TEST(LowLatencySource, TwoShotIsAnAllreduceKernelOfItsOwn) {
  LowLatencySpec spec;
  spec.base.ranks = 8;
  spec.base.device_of_rank = block_placement(8, 1);
  const KernelSource one = low_latency_source(spec);
  EXPECT_EQ(one.name, "canopy_ll_allreduce_r8_d1_b4_f32_sum");
  EXPECT_NE(one.file.text.find("static constexpr bool kTwoShot = false;"), std::string::npos);
  spec.two_shot = true;
  const KernelSource two = low_latency_source(spec);
  EXPECT_EQ(two.name, "canopy_ll2shot_allreduce_r8_d1_b4_f32_sum");  // its own entry and cache entry
  EXPECT_NE(two.file.text.find("static constexpr bool kTwoShot = true;"), std::string::npos);
  EXPECT_NE(two.file.text.find("two-shot (reduce-scatter, then allgather)"), std::string::npos);
  for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allgather, Collective::reducescatter}) {
    spec.base.collective = c;
    try {
      low_latency_source(spec);
      ADD_FAILURE() << to_string(c) << ": two-shot accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("two-shot is an allreduce variant"), std::string::npos) << e.what();
    }
  }
}

TEST(LowLatencySource, BuffersHoldTwoParitiesOfASlotPerRank) {
  EXPECT_EQ(low_latency_buffer_bytes(2, 128 << 10), 2 * 2 * (128 << 10) / 8 * 16);
  EXPECT_EQ(low_latency_buffer_bytes(8, 9), 2 * 8 * 2 * 16);  // 9 bytes: two 8-byte lines
}

TEST(LowLatencySource, RefusesWhatItCannotRun) {
  LowLatencySpec spec;
  spec.base.collective = Collective::broadcast;
  spec.base.root = 2;
  EXPECT_THROW(low_latency_source(spec), Error);  // 2 ranks
  spec.base.root = 0;
  spec.base.blocks_per_rank = 0;
  EXPECT_THROW(low_latency_source(spec), Error);
  spec.base.blocks_per_rank = 4;
  spec.base.threads_per_block = 100;
  EXPECT_THROW(low_latency_source(spec), Error);
  spec.base.threads_per_block = 256;
  spec.base.device_of_rank = {0, 2};
  EXPECT_THROW(low_latency_source(spec), Error);  // device 1 runs nothing
}

}  // namespace
}  // namespace canopy
