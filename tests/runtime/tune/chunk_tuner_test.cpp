// Chunk tuning (runtime/tune/chunk_tuner.hpp) against measuring functions with a known best: it finds the minimum of
// convex curves from either side, stops when the gain stops, stays in its limits, and measures each size once.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/error.hpp"
#include "runtime/tune/chunk_tuner.hpp"

namespace canopy {
namespace {

// A pipeline's time: per-chunk overhead falls and fill latency grows with the chunk; best near sqrt(a/b).
double pipeline_us(std::int64_t chunk) {
  const double c = static_cast<double>(chunk) / 1024;
  return 4000.0 / c + 0.05 * c + 20;
}

TEST(ChunkTuner, ClimbsToTheBestFromBelowAndFromAbove) {
  for (std::int64_t start : {std::int64_t{16} << 10, std::int64_t{4} << 20}) {
    std::map<std::int64_t, int> calls;
    const ChunkTuneResult r = tune_chunk(start, [&](std::int64_t c) {
      ++calls[c];
      return pipeline_us(c);
    });
    // The continuous optimum is at sqrt(4000 / 0.05) ~ 283 KiB.
    EXPECT_GE(r.chunk_bytes, 192 << 10) << start;
    EXPECT_LE(r.chunk_bytes, 400 << 10) << start;
    EXPECT_LT(r.time_us, pipeline_us(start)) << start;
    for (const auto& [c, n] : calls) EXPECT_EQ(n, 1) << "chunk " << c << " measured twice";
    EXPECT_EQ(r.tried.front().chunk_bytes, start);
  }
}

TEST(ChunkTuner, KeepsTheStartWhenNothingIsFaster) {
  const ChunkTuneResult r = tune_chunk(256 << 10, [](std::int64_t) { return 10.0; });
  EXPECT_EQ(r.chunk_bytes, 256 << 10);
  EXPECT_EQ(r.tried.size(), 5u);  // the start, double, halve, a quarter down, a quarter up
}

TEST(ChunkTuner, StaysWithinItsLimits) {
  ChunkTuneLimits l;
  l.max_bytes = 1 << 20;
  const ChunkTuneResult big = tune_chunk(256 << 10, [](std::int64_t c) { return 1e9 / static_cast<double>(c); }, l);
  EXPECT_LE(big.chunk_bytes, 1 << 20);
  for (const ChunkTuneStep& s : big.tried) EXPECT_LE(s.chunk_bytes, 1 << 20);
  const ChunkTuneResult small = tune_chunk(4096, [](std::int64_t c) { return static_cast<double>(c); }, l);
  EXPECT_EQ(small.chunk_bytes, 1024);
  for (const ChunkTuneStep& s : small.tried) EXPECT_EQ(s.chunk_bytes % 16, 0);
  EXPECT_THROW(tune_chunk(100, [](std::int64_t) { return 1.0; }), Error);
  EXPECT_THROW(tune_chunk(64 << 20, [](std::int64_t) { return 1.0; }), Error);
}

TEST(ChunkTuner, NoiseBelowTheGainDoesNotMoveIt) {
  // 1% better at twice the chunk: under the 2% gain, so it keeps the start.
  const ChunkTuneResult r =
      tune_chunk(256 << 10, [](std::int64_t c) { return c == (512 << 10) ? 99.0 : 100.0; });
  EXPECT_EQ(r.chunk_bytes, 256 << 10);
}

TEST(ChunkTuner, TheDefaultStaysUnlessBeatenByTheGain) {
  // As `canopy tune` met it on the GPU: a search from 32 KiB ended at 128 KiB (3056.6 us) because 256 KiB was only
  // 1.3% faster, while the default 256 KiB had measured 3016.9 us. The default stays.
  ChunkTuneResult tuned;
  tuned.chunk_bytes = 128 << 10;
  tuned.time_us = 3056.6;
  const ChunkTuneStep kept = choose_over_incumbent(tuned, {256 << 10, 3016.9}, 0.02);
  EXPECT_EQ(kept.chunk_bytes, 256 << 10);
  EXPECT_DOUBLE_EQ(kept.time_us, 3016.9);
  // Faster, but by less than the gain: still the default.
  tuned.time_us = 3000.0;
  EXPECT_EQ(choose_over_incumbent(tuned, {256 << 10, 3016.9}, 0.02).chunk_bytes, 256 << 10);
  // Faster by more than the gain: the tuned chunk.
  tuned.time_us = 2900.0;
  const ChunkTuneStep taken = choose_over_incumbent(tuned, {256 << 10, 3016.9}, 0.02);
  EXPECT_EQ(taken.chunk_bytes, 128 << 10);
  EXPECT_DOUBLE_EQ(taken.time_us, 2900.0);
}

}  // namespace
}  // namespace canopy
