// tune_chunk: Blink's run-time chunk tuning as a pure search over a measuring function: from a starting chunk (the
// simulator's prediction), double the chunk while the measured time keeps falling by more than `gain`; if the
// first doubling did not help, halve it instead while that helps; then try one additive step each way (a quarter of
// the chunk) and keep what is faster. Every candidate is a multiple of 16 bytes within [min, max]. `canopy tune`
// measures with real calls; the tests measure with functions.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace canopy {

struct ChunkTuneStep {
  std::int64_t chunk_bytes = 0;
  double time_us = 0;
};

struct ChunkTuneResult {
  std::int64_t chunk_bytes = 0;  // the last candidate that beat the one before it by more than the gain
  double time_us = 0;
  std::vector<ChunkTuneStep> tried;  // in the order measured
};

struct ChunkTuneLimits {
  std::int64_t min_bytes = 1024;
  std::int64_t max_bytes = std::int64_t{16} << 20;
  double gain = 0.02;  // a candidate must be this much faster (relative) to be taken
};

// Throws canopy::Error when `start` is outside the limits or not a multiple of 16.
ChunkTuneResult tune_chunk(std::int64_t start, const std::function<double(std::int64_t chunk_bytes)>& measure_us,
                           const ChunkTuneLimits& limits = {});

// What to keep: the tuned chunk, or the incumbent (the chunk calls use untuned, measured the same way) unless the
// tuned one beats it by more than `gain`. Tuning never writes down a chunk it did not show to be faster than the
// default: a search that started elsewhere can end within noise of the default, yet slower.
ChunkTuneStep choose_over_incumbent(const ChunkTuneResult& tuned, const ChunkTuneStep& incumbent, double gain);

}  // namespace canopy
