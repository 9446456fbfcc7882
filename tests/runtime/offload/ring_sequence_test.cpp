// The words of a host ring shared by processes, without a GPU: chunk sizes and slots, the fill values receivers
// wait for, the drain values a refill waits for, the cyclic comparison across the 32-bit wrap, and the release value
// that ends every pending wait.
#include <gtest/gtest.h>

#include "runtime/offload/ring_sequence.hpp"

namespace canopy {
namespace {

TEST(RingSequence, ChunksFillTheSlotsInTurnAndARefillWaitsForTheSlotsChunkBefore) {
  const std::vector<RingChunk> c = ring_chunks(0, 10 << 20, 4 << 20, 2);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].offset, 0u);
  EXPECT_EQ(c[0].bytes, std::size_t{4} << 20);
  EXPECT_EQ(c[2].offset, std::size_t{8} << 20);
  EXPECT_EQ(c[2].bytes, std::size_t{2} << 20);  // the last one shorter
  EXPECT_EQ(c[0].slot, 0);
  EXPECT_EQ(c[1].slot, 1);
  EXPECT_EQ(c[2].slot, 0);
  EXPECT_EQ(c[0].filled, 1u);
  EXPECT_EQ(c[2].filled, 3u);
  EXPECT_FALSE(c[0].wait_drained);  // fresh slots
  EXPECT_FALSE(c[1].wait_drained);
  ASSERT_TRUE(c[2].wait_drained);
  EXPECT_EQ(c[2].drained, c[0].filled);  // slot 0's chunk before must be drained
}

TEST(RingSequence, ALaterCallGoesOnCountingWhereTheLastLeftOff) {
  const std::vector<RingChunk> c = ring_chunks(7, 3, 4, 4);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].slot, 3);
  EXPECT_EQ(c[0].filled, 8u);
  ASSERT_TRUE(c[0].wait_drained);
  EXPECT_EQ(c[0].drained, 4u);  // chunk 3, the slot's last
  EXPECT_TRUE(ring_chunks(7, 0, 4, 4).empty());
}

TEST(RingSequence, WordsCompareCyclicallyAcrossTheWrap) {
  EXPECT_TRUE(ring_word_reached(5, 5));
  EXPECT_TRUE(ring_word_reached(6, 5));
  EXPECT_FALSE(ring_word_reached(4, 5));
  // Chunk 2^32 - 1 fills to 0: a wait for it is met by 0 and by 1, not by the value before.
  const std::vector<RingChunk> c = ring_chunks(0xffffffffull, 1, 1, 4);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].filled, 0u);
  EXPECT_TRUE(ring_word_reached(0, c[0].filled));
  EXPECT_TRUE(ring_word_reached(1, c[0].filled));
  EXPECT_FALSE(ring_word_reached(0xffffffffu, c[0].filled));
}

TEST(RingSequence, TheReleaseValueEndsEveryWaitUpToTheLargest) {
  for (std::uint32_t largest : {0u, 5u, 0x7fffffffu, 0xfffffff0u}) {
    const std::uint32_t release = ring_release_value(largest);
    for (std::uint32_t back : {0u, 1u, 1000u})
      EXPECT_TRUE(ring_word_reached(release, largest - back)) << largest << " " << back;
  }
}

}  // namespace
}  // namespace canopy
