// The words of a host ring shared by processes (see ring_sequence.hpp).
#include "runtime/offload/ring_sequence.hpp"

#include <algorithm>

namespace canopy {

std::vector<RingChunk> ring_chunks(std::uint64_t first, std::size_t bytes, std::size_t chunk, int slots) {
  std::vector<RingChunk> out;
  if (chunk == 0 || slots <= 0) return out;
  std::uint64_t k = first;
  for (std::size_t off = 0; off < bytes; off += chunk, ++k) {
    RingChunk c;
    c.offset = off;
    c.bytes = std::min(chunk, bytes - off);
    c.slot = static_cast<int>(k % static_cast<std::uint64_t>(slots));
    c.filled = static_cast<std::uint32_t>(k + 1);
    c.wait_drained = k >= static_cast<std::uint64_t>(slots);
    c.drained = static_cast<std::uint32_t>(k + 1 - static_cast<std::uint64_t>(slots));
    out.push_back(c);
  }
  return out;
}

bool ring_word_reached(std::uint32_t word, std::uint32_t value) {
  return static_cast<std::int32_t>(word - value) >= 0;
}

std::uint32_t ring_release_value(std::uint32_t value) { return value + 0x3fffffffu; }

}  // namespace canopy
