// The staged kernels' source (codegen/staged_source.hpp): names, launches per device (virtual ranks), the Config the
// template reads (chunks, slot size), who sends to whom, the flag layout shared with the watchdog, the staging
// buffer's size, and refusals. NVRTC compiles the sources in tests/runtime/generated_kernels_nvrtc_test.cpp and
// tests/gpu/ runs them.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "codegen/staged_source.hpp"
#include "dsl/error.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string refusal(const StagedSpec& spec) {
  try {
    staged_source(spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(StagedSource, NamesLaunchesAndConfig) {
  StagedSpec spec;
  spec.collective = Collective::reduce;
  spec.dtype = DataType::bf16;
  spec.op = ReduceOp::max;
  spec.ranks = 8;
  spec.root = 3;
  spec.device_of_rank = block_placement(8, 2);
  spec.blocks_per_rank = 8;
  spec.chunks_per_block = 3;
  spec.max_bytes = 1000;  // rounded up to whole 128-byte lines per slot
  const KernelSource k = staged_source(spec);
  EXPECT_EQ(k.name, "canopy_staged_reduce_r8_d2_b8_bf16_max_root3");
  EXPECT_EQ(k.file.name, k.name + ".cu");
  ASSERT_EQ(k.launches.size(), 2u);
  EXPECT_EQ(k.launches[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(k.launches[1].ranks, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(k.launches[0].blocks, 32);
  EXPECT_EQ(k.launches[0].threads, 512);
  const std::string& text = k.file.text;
  EXPECT_TRUE(contains(text, "#include \"canopy/staged.cuh\"")) << text;
  EXPECT_TRUE(contains(text, "static constexpr int kCollective = canopy::kStagedReduce;")) << text;
  EXPECT_TRUE(contains(text, "static constexpr int kRoot = 3;")) << text;
  EXPECT_TRUE(contains(text, "static constexpr int kBlocks = 8;")) << text;
  EXPECT_TRUE(contains(text, "static constexpr int kChunks = 3;")) << text;
  EXPECT_TRUE(contains(text, "static constexpr unsigned long long kSlotBytes = 1024ull;")) << text;
  EXPECT_TRUE(contains(text, "canopy::run_staged<Config>(a, kRanksOf[device]);")) << text;
  EXPECT_EQ(staged_buffer_bytes(8, 1000), 2 * 8 * 1024);
}

TEST(StagedSource, WhoSendsToWhom) {
  for (int me = 0; me < 4; ++me)
    for (int peer = 0; peer < 4; ++peer) {
      const bool other = me != peer;
      EXPECT_EQ(staged_sends(Collective::broadcast, 2, me, peer), other && me == 2);
      EXPECT_EQ(staged_sends(Collective::reduce, 2, me, peer), other && peer == 2);
      for (Collective c : {Collective::allreduce, Collective::allgather, Collective::reducescatter})
        EXPECT_EQ(staged_sends(c, 2, me, peer), other);
    }
}

TEST(StagedSource, FlagIndicesAreDistinctAndInRange) {
  const int ranks = 3, blocks = 5, chunks = 4;
  const int count = staged_flag_count(ranks, blocks, chunks);
  EXPECT_EQ(count, ranks * blocks * (chunks + 1));
  std::set<int> seen;
  for (int q = 0; q < ranks; ++q)
    for (int b = 0; b < blocks; ++b) {
      for (int c = 0; c < chunks; ++c) seen.insert(staged_ready_index(ranks, blocks, chunks, q, b, c));
      seen.insert(staged_ack_index(ranks, blocks, chunks, q, b));
    }
  EXPECT_EQ(static_cast<int>(seen.size()), count);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), count - 1);
}

TEST(StagedSource, RefusesOutOfRangeShapes) {
  StagedSpec spec;
  spec.chunks_per_block = 0;
  EXPECT_EQ(refusal(spec), "staged kernels: 0 chunks per block; use 1 to 64");
  spec = StagedSpec{};
  spec.max_bytes = 8;
  EXPECT_EQ(refusal(spec), "staged kernels: a slot of 8 bytes; use 16 bytes to 64 GiB");
  spec = StagedSpec{};
  spec.blocks_per_rank = 0;
  EXPECT_TRUE(contains(refusal(spec), "staged kernels: 0 blocks per rank")) << refusal(spec);
  spec = StagedSpec{};
  spec.collective = Collective::broadcast;
  spec.root = 2;
  EXPECT_TRUE(contains(refusal(spec), "staged kernels: root 2 is not a rank")) << refusal(spec);
}

}  // namespace
}  // namespace canopy
