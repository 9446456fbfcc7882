// ring_sequence: the words of a host ring shared by processes (process_host_ring.hpp), pure so it is tested on any
// CPU. A ring's chunks are numbered from 0 in the order they pass through it, and every process counts them alike
// (the processes make the same broadcasts with the same staged sizes). Chunk k uses slot k mod slots. The root's side
// stream sets the slot's fill word to k + 1 once the chunk is in the slot; each receiver sets its drain word of the
// slot to k + 1 once it has copied the chunk out. Before refilling a slot with chunk k, the root waits until every
// drain word of the slot has reached k + 1 - slots (the slot's chunk before). Words compare cyclically (the driver's
// CU_STREAM_WAIT_VALUE_GEQ: (int32_t)(word - value) >= 0), so they wrap harmlessly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace canopy {

struct RingChunk {
  std::size_t offset = 0;  // in the staged bytes
  std::size_t bytes = 0;
  int slot = 0;
  std::uint32_t filled = 0;   // the fill word once this chunk is in its slot (what receivers wait for)
  bool wait_drained = false;  // the slot held a chunk before: wait for every drain word to reach `drained`
  std::uint32_t drained = 0;
};

// The chunks of `bytes` staged bytes, `chunk` bytes each (the last shorter), through a ring of `slots` slots whose
// chunks so far number `first`.
std::vector<RingChunk> ring_chunks(std::uint64_t first, std::size_t bytes, std::size_t chunk, int slots);

// Whether a word holding `word` satisfies a wait for `value` (the driver's cyclic comparison).
bool ring_word_reached(std::uint32_t word, std::uint32_t value);

// What a failed communicator writes into every word it may wait on so that each such wait ends: far ahead of
// `value`, the largest value its waits use, by half the cycle less one.
std::uint32_t ring_release_value(std::uint32_t value);

}  // namespace canopy
