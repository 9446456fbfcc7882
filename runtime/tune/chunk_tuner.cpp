// tune_chunk (see chunk_tuner.hpp): multiplicative increase (or decrease), then one additive refinement.
#include "runtime/tune/chunk_tuner.hpp"

#include <fmt/format.h>

#include <map>

#include "core/error.hpp"

namespace canopy {

ChunkTuneResult tune_chunk(std::int64_t start, const std::function<double(std::int64_t)>& measure_us,
                           const ChunkTuneLimits& limits) {
  if (start < limits.min_bytes || start > limits.max_bytes || start % 16 != 0)
    throw Error(fmt::format("chunk tuning: start {} B is not a multiple of 16 within {}..{} B", start,
                            limits.min_bytes, limits.max_bytes));
  ChunkTuneResult r;
  std::map<std::int64_t, double> seen;
  auto time_of = [&](std::int64_t c) {
    if (auto it = seen.find(c); it != seen.end()) return it->second;
    const double t = measure_us(c);
    seen[c] = t;
    r.tried.push_back({c, t});
    return t;
  };
  auto valid = [&](std::int64_t c) { return c >= limits.min_bytes && c <= limits.max_bytes && c % 16 == 0; };
  r.chunk_bytes = start;
  r.time_us = time_of(start);
  // Takes `c` when it is faster by more than the gain; says whether it did.
  auto better = [&](std::int64_t c) {
    if (!valid(c)) return false;
    const double t = time_of(c);
    if (t >= r.time_us * (1 - limits.gain)) return false;
    r.chunk_bytes = c;
    r.time_us = t;
    return true;
  };
  if (better(r.chunk_bytes * 2)) {
    while (better(r.chunk_bytes * 2)) {
    }
  } else {
    while (r.chunk_bytes % 32 == 0 && better(r.chunk_bytes / 2)) {
    }
  }
  const std::int64_t step = r.chunk_bytes / 4 / 16 * 16;
  if (step > 0 && !better(r.chunk_bytes - step)) better(r.chunk_bytes + step);
  return r;
}

ChunkTuneStep choose_over_incumbent(const ChunkTuneResult& tuned, const ChunkTuneStep& incumbent, double gain) {
  if (tuned.chunk_bytes != incumbent.chunk_bytes && tuned.time_us < incumbent.time_us * (1 - gain))
    return {tuned.chunk_bytes, tuned.time_us};
  return incumbent;
}

}  // namespace canopy
