// Ranges of elements: how a collective's buffer is cut among trees (by integer weights), trees among lanes (thread
// blocks), and lanes into chunks. Every rank computes the same cuts from the same count.
#pragma once

namespace canopy {

struct Range {
  unsigned long long begin;
  unsigned long long end;
  __device__ __forceinline__ unsigned long long size() const { return end - begin; }
};

// Cuts are parts of kSplitScale (1 << 16): every tree's weight within its group, every block's share of its tree.
const unsigned int kSplitScale = 1u << 16;

// The part [lo, hi) / kSplitScale of r. Inner boundaries are rounded down to a multiple of `align` elements
// (a power of two: 16-byte vectors stay whole); r.end stays exact. size() < 2^48 keeps size() * kSplitScale in
// 64 bits (the runtime bounds count so that it does).
__device__ __forceinline__ Range split(Range r, unsigned int lo, unsigned int hi, unsigned long long align) {
  const unsigned long long n = r.end - r.begin;
  const unsigned long long a = ((n * lo) >> 16) & ~(align - 1);
  const unsigned long long b = hi >= kSplitScale ? n : ((n * hi) >> 16) & ~(align - 1);
  return Range{r.begin + a, r.begin + b};
}

// Block b's share of a lane run by `blocks` blocks, as a split.
__device__ __forceinline__ Range block_part(Range r, int b, int blocks, unsigned long long align) {
  return split(r, b * kSplitScale / blocks, (b + 1) * kSplitScale / blocks, align);
}

// The chunk count of r and chunk i of it, chunks of `chunk` elements (the last may be shorter).
__device__ __forceinline__ unsigned long long chunk_count(Range r, unsigned long long chunk) {
  return (r.size() + chunk - 1) / chunk;
}
__device__ __forceinline__ Range chunk_of(Range r, unsigned long long i, unsigned long long chunk) {
  const unsigned long long b = r.begin + i * chunk;
  const unsigned long long e = b + chunk < r.end ? b + chunk : r.end;
  return Range{b, e};
}

// Slot i % depth of a FIFO that starts `offset` bytes into a rank's scratch, slots of `slot_bytes`.
template <typename T>
__device__ __forceinline__ T* fifo_slot(void* scratch, unsigned long long offset, unsigned long long i, int depth,
                                        unsigned long long slot_bytes) {
  return reinterpret_cast<T*>(static_cast<char*>(scratch) + offset + (i % depth) * slot_bytes);
}

// `dst`, or null when it is `src` itself (an in-place root needs no copy to its own buffer).
template <typename T>
__device__ __forceinline__ T* unless_same(T* dst, const T* src) {
  return dst == src ? nullptr : dst;
}

}  // namespace canopy
