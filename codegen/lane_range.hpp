// Host replica of templates/range.cuh and of tree_range() in templates/schedule.cuh: which elements a lane's
// block owns and how many chunks it moves, computed exactly as the GPU does. The host model of the protocol
// (tests/codegen/schedule_simulator) and the runtime's watchdog (which names the chunk a stuck block waits for)
// use it; a change to the device arithmetic must be made in both places (the simulator tests catch a mismatch).
#pragma once

#include <cstdint>

#include "codegen/schedule.hpp"

namespace canopy {

struct ElementRange {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t size() const { return end - begin; }
};

// The part [lo, hi) / kSplitScale of r; inner boundaries rounded down to a multiple of `align` elements.
inline ElementRange split_range(ElementRange r, std::uint64_t lo, std::uint64_t hi, std::uint64_t align) {
  const std::uint64_t n = r.size();
  const std::uint64_t a = ((n * lo) >> 16) & ~(align - 1);
  const std::uint64_t b = hi >= static_cast<std::uint64_t>(kSplitScale) ? n : ((n * hi) >> 16) & ~(align - 1);
  return {r.begin + a, r.begin + b};
}

// Block b's share of a lane run by `blocks` blocks.
inline ElementRange block_part(ElementRange r, int b, int blocks, std::uint64_t align) {
  return split_range(r, static_cast<std::uint64_t>(b) * kSplitScale / blocks,
                     static_cast<std::uint64_t>(b + 1) * kSplitScale / blocks, align);
}

// The elements a tree owns for a call of `count` elements per rank (NCCL convention); a program lane's chunk.
inline ElementRange tree_range(const RangeSpec& spec, std::uint64_t count, std::uint64_t align) {
  if (spec.units > 0) return ElementRange{0, count / static_cast<std::uint64_t>(spec.units)};
  ElementRange r = spec.block_of < 0 ? ElementRange{0, count}
                                     : ElementRange{spec.block_of * count, (spec.block_of + 1) * count};
  for (const RangeSplit& sp : spec.splits) r = split_range(r, sp.lo, sp.hi, align);
  return r;
}

inline std::uint64_t chunk_count(ElementRange r, std::uint64_t chunk_elements) {
  return (r.size() + chunk_elements - 1) / chunk_elements;
}

}  // namespace canopy
