// The LL128 kernels' source (codegen/ll128_source.hpp): names, launches per device (virtual ranks), the Config the
// template reads, line and buffer sizes, and refusals. NVRTC compiles them in
// tests/runtime/jit/generated_kernels_nvrtc_test.cpp and tests/gpu/ runs them.
#include <gtest/gtest.h>

#include "codegen/ll128_source.hpp"
#include "core/error.hpp"

namespace canopy {
namespace {

TEST(LL128Source, OneLaunchPerDeviceWithItsRanks) {
  LL128Spec spec;
  spec.base.collective = Collective::reduce;
  spec.base.dtype = DataType::f16;
  spec.base.op = ReduceOp::min;
  spec.base.ranks = 6;
  spec.base.root = 5;
  spec.base.device_of_rank = block_placement(6, 3);
  spec.max_bytes = 1 << 20;
  const KernelSource k = ll128_source(spec);
  EXPECT_EQ(k.name, "canopy_ll128_reduce_r6_d3_b64_f16_min_root5");
  ASSERT_EQ(k.launches.size(), 3u);
  EXPECT_EQ(k.launches[2].ranks, (std::vector<int>{4, 5}));
  EXPECT_EQ(k.launches[2].blocks, 2 * 64);
  EXPECT_EQ(k.launches[2].threads, 512);
  EXPECT_NE(k.file.text.find("#include \"canopy/ll128.cuh\""), std::string::npos);
  EXPECT_NE(k.file.text.find("static constexpr int kCollective = canopy::kLLReduce;"), std::string::npos);
  EXPECT_NE(k.file.text.find("static constexpr int kRoot = 5;"), std::string::npos);
  // 1 MiB: 131072 words of 8 bytes, 15 per line.
  EXPECT_NE(k.file.text.find("static constexpr unsigned long long kLines = 8739;"), std::string::npos);
  EXPECT_NE(k.file.text.find("canopy::run_ll128<Config>(a, kRanksOf[device], device);"), std::string::npos);
  EXPECT_EQ(ll128_source(spec).file.text, k.file.text);  // deterministic
}

TEST(LL128Source, LinesCarry120BytesInWholeWords) {
  EXPECT_EQ(ll128_lines(1), 1);
  EXPECT_EQ(ll128_lines(120), 1);
  EXPECT_EQ(ll128_lines(121), 2);  // a 16th word: a second line
  EXPECT_EQ(ll128_lines(240), 2);
  EXPECT_EQ(ll128_lines(std::int64_t{4} << 20), 34953);
  EXPECT_EQ(ll128_buffer_bytes(2, 240), 2 * 2 * 2 * 128);
  EXPECT_EQ(ll128_buffer_bytes(8, std::int64_t{4} << 20), std::int64_t{2} * 8 * 34953 * 128);
}

TEST(LL128Source, RefusesWhatItCannotRun) {
  LL128Spec spec;
  spec.base.collective = Collective::broadcast;
  spec.base.root = 2;
  EXPECT_THROW(ll128_source(spec), Error);  // 2 ranks
  spec.base.root = 0;
  spec.base.blocks_per_rank = 0;
  EXPECT_THROW(ll128_source(spec), Error);
  spec.base.blocks_per_rank = 64;
  spec.base.threads_per_block = 100;  // not whole warps: a line's eight threads would be cut
  EXPECT_THROW(ll128_source(spec), Error);
  spec.base.threads_per_block = 512;
  spec.max_bytes = 4;
  EXPECT_THROW(ll128_source(spec), Error);
  spec.max_bytes = std::int64_t{2} << 30;
  EXPECT_THROW(ll128_source(spec), Error);
  spec.max_bytes = 4 << 20;
  spec.base.device_of_rank = {0, 2};
  EXPECT_THROW(ll128_source(spec), Error);  // device 1 runs nothing
}

}  // namespace
}  // namespace canopy
